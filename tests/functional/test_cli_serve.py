"""`servekit serve` as a user runs it: it prepares HOME, prints where things are, serves the
catalog, and stops cleanly on Ctrl-C."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx

from tests.functional.helpers import EXAMPLES, ROOT, SERVEKIT, ctrl_c_reaches, servekit


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait(url: str, proc: subprocess.Popen[str]) -> httpx.Response:
    deadline = time.monotonic() + 60
    with httpx.Client(timeout=30) as http:  # one client: each new one reads the CA bundle
        while True:
            try:
                return http.get(url)
            except httpx.TransportError:
                assert proc.poll() is None, "servekit serve exited early"
                assert time.monotonic() < deadline, "servekit serve did not answer"
                time.sleep(0.2)


def test_serve_prints_where_things_are_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    port = _free_port()
    env = {**os.environ, "SERVEKIT_HOME": str(tmp_path / "home")}
    # one example: tests/web/conftest.py publishes them all as `serve` does (publish_all)
    packages = tmp_path / "packages"
    shutil.copytree(EXAMPLES / "kimi-k3-8xb300", packages / "kimi-k3-8xb300")
    argv = [*SERVEKIT, "serve", "--port", str(port), "--packages", str(packages), "--workers", "2"]
    proc = subprocess.Popen(
        argv,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ctrl_c_reaches,
    )
    try:
        page = _wait(f"http://127.0.0.1:{port}/", proc)
        assert page.status_code == 200 and "Kimi K3 on 8x B300" in page.text
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert f"http://127.0.0.1:{port}/" in out
    assert "press Ctrl-C" in out and str(tmp_path / "home") in out
    assert "published kimi-k3-8xb300 1.0.0 (ok)" in out
    assert f"database: sqlite:///{tmp_path / 'home' / 'servekit.db'}" in out
    assert (tmp_path / "home" / "servekit.db").exists() and (tmp_path / "home" / "kits").is_dir()
    assert "DEVELOPMENT publisher key" in err
    assert (tmp_path / "home" / "keys" / "servekit.pub").exists()


def test_serve_refuses_a_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = {**os.environ, "SERVEKIT_HOME": str(tmp_path / "home")}
        result = servekit("serve", "--port", str(port), env=env)
    assert result.returncode == 41
    assert "cannot listen on 127.0.0.1" in result.stderr and "--port" in result.stderr
