"""Start an engine for one candidate, wait until it is ready, stop it cleanly.

1. the engine runs in its own process group (``start_new_session``), its output in a log
   file beside the search's evidence;
2. readiness is the engine's health path answering 200, while the process is watched: an
   engine that exits while starting (out of memory, a refused flag) fails the candidate at
   once, with the last lines of its log as the reason;
3. stopping sends SIGTERM to the whole group, then SIGKILL after a grace period, and waits,
   so no engine of one candidate outlives it (or holds the GPU for the next).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx

from servekit.bench.client import tls_context
from servekit.engines import EngineSpec
from servekit.engines.probe import healthy

STOP_GRACE_S = 15.0
_POLL_S = 0.05


class StartFailedError(Exception):
    """The engine did not become ready; the message is the candidate's recorded reason."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def resolve(program: str) -> str:
    """A bare program name from PATH, else from beside the running interpreter (a
    virtual environment's console scripts, when it is not activated), else as given."""
    if os.sep in program or shutil.which(program):
        return program
    sibling = Path(sys.executable).parent / program
    return str(sibling) if sibling.is_file() and os.access(sibling, os.X_OK) else program


def _tail(log: Path, lines: int = 3) -> str:
    try:
        text = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text[-lines:] if line.strip())


def _wait_ready(
    proc: subprocess.Popen[bytes], url: str, spec: EngineSpec, timeout_s: float, log: Path
) -> None:
    deadline = time.monotonic() + timeout_s
    with httpx.Client(base_url=url, timeout=1.0, verify=tls_context()) as http:
        while time.monotonic() < deadline:
            code = proc.poll()
            if code is not None:
                raise StartFailedError(
                    f"the engine exited with code {code} while starting: {_tail(log)}"
                )
            if healthy(http, spec):
                return
            time.sleep(_POLL_S)
    raise StartFailedError(f"the engine was not ready ({spec.probe.health}) within {timeout_s:g} s")


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the engine's process group, SIGKILL after the grace period."""
    if proc.poll() is None:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    with suppress(ProcessLookupError):  # children the engine left behind in its group
        os.killpg(proc.pid, signal.SIGKILL)


@contextmanager
def running(
    spec: EngineSpec,
    argv: tuple[str, ...],
    env: Mapping[str, str],
    port: int,
    log: Path,
    timeout_s: float,
) -> Iterator[str]:
    """Run ``argv`` until the block ends; yields the engine's base URL once it is ready."""
    log.parent.mkdir(parents=True, exist_ok=True)
    try:
        with log.open("wb") as out:
            proc = subprocess.Popen(
                (resolve(argv[0]), *argv[1:]), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env={**os.environ, **env}, start_new_session=True,
            )  # fmt: skip
    except OSError as exc:
        raise StartFailedError(f"cannot run {argv[0]}: {exc.strerror or exc}") from exc
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_ready(proc, url, spec, timeout_s, log)
        yield url
    finally:
        stop(proc)
