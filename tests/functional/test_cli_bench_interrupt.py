"""An interrupted benchmark keeps what it measured, says so, and exits 61."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.functional.helpers import ROOT, SERVEKIT
from tests.replay.conftest import recorded_model, start_simulator


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_run_keeps_its_completed_requests(tmp_path: Path, signum: int) -> None:
    sim, url = start_simulator("5", "20")
    out = tmp_path / "run"
    try:
        args = ["bench", "run", "--endpoint", url, "--model", recorded_model(),
                "--input-tokens", "8:8", "--output-tokens", "10", "--requests", "2000",
                "--concurrency", "2", "--out", str(out)]  # fmt: skip
        bench = subprocess.Popen(
            [*SERVEKIT, "-q", *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not out.exists():
            time.sleep(0.1)
        time.sleep(2.0)  # some requests complete (each takes about 0.2 s)
        bench.send_signal(signum)
        _, err = bench.communicate(timeout=30)
    finally:
        sim.terminate()
        sim.wait(10)
    assert bench.returncode == 61, err
    assert "interrupted; kept" in err and "run-1.jsonl" in err
    lines = (out / "run-1.jsonl").read_text().splitlines()
    header = json.loads(lines[0])
    assert any(note.startswith("PARTIAL") for note in header["notes"]), header["notes"]
    assert 1 <= len(lines) - 1 < 2000
