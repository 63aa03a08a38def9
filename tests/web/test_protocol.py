"""Two uvicorn workers (real processes, as `servekit serve --workers 2` runs them) answer
sequential keep-alive requests without the ~44 ms Nagle/delayed-ACK stall."""

from __future__ import annotations

import http.client
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.web.server import free_port

SERVE = (
    "import sys, uvicorn\n"
    "from servekit.web.server import APP_FACTORY, SERVER_OPTIONS\n"
    "uvicorn.run(APP_FACTORY, factory=True, host='127.0.0.1', port=int(sys.argv[1]),"
    " workers=2, **SERVER_OPTIONS)\n"
)


@contextmanager
def two_workers(home: Path) -> Iterator[int]:
    port = free_port()
    env = {**os.environ, "SERVEKIT_HOME": str(home)}
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVE, str(port)], env=env, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "no server"
                time.sleep(0.1)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_two_workers_answer_keep_alive_requests_without_a_stall(tmp_path: Path) -> None:
    with two_workers(tmp_path / "home") as port:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        times = []
        for n in range(23):
            start = time.perf_counter()
            conn.request("GET", "/healthz")
            answer = conn.getresponse()
            assert answer.status == 200 and answer.read() == b'{"status":"ok"}'
            if n >= 3:  # the first requests warm the worker up
                times.append(time.perf_counter() - start)
        conn.close()
    # one connection throughout (keep-alive); the stall made each request 40 ms or more
    assert statistics.median(times) < 0.025, [round(t * 1000, 1) for t in times]
