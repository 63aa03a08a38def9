"""Host facts: GPUs from nvidia-smi's CSV, the CPU model, the engine behind the endpoint."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from servekit.replay.host import cpu_model, engine_version, parse_nvidia_smi
from servekit.replay.models import Gpu


def test_nvidia_smi_csv() -> None:
    text = "NVIDIA H200, 143771 MiB, 570.124.06\nNVIDIA H200, 143771 MiB, 570.124.06\n\n"
    assert (
        parse_nvidia_smi(text)
        == (Gpu(name="NVIDIA H200", memory="143771 MiB", driver="570.124.06"),) * 2
    )


def test_cpu_model_from_cpuinfo(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: AMD EPYC 9654 96-Core Processor\n")
    assert cpu_model(info) == "AMD EPYC 9654 96-Core Processor"


class _ModelsOnly(BaseHTTPRequestHandler):
    """An OpenAI-compatible server without /version (as some engines are)."""

    def do_GET(self) -> None:
        if self.path != "/v1/models":
            self.send_error(404)
            return
        body = json.dumps({"object": "list", "data": [{"id": "m", "owned_by": "sglang"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def models_only() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ModelsOnly)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_engine_from_v1_models_when_there_is_no_version(models_only: str) -> None:
    assert engine_version(models_only) == ("sglang", "/v1/models")


def test_no_engine_facts_from_a_closed_port() -> None:
    assert engine_version("http://127.0.0.1:9", timeout_s=2) == (None, None)
