"""Two uvicorn workers (real processes, as `servekit serve --workers 2` runs them) answer
sequential keep-alive requests without the ~44 ms Nagle/delayed-ACK stall, and a
response's writes go out as one."""

from __future__ import annotations

import asyncio
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

from servekit.web.protocol import HOLD_MAX, Coalescing
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


class _Recorded(asyncio.Transport):
    """A transport that records what is written to it and whether it was closed."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        assert not self.closed, "written after close"
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


def test_a_responses_writes_in_one_turn_of_the_loop_go_out_as_one() -> None:
    async def scenario() -> list[list[bytes]]:
        loop = asyncio.get_running_loop()
        seen: list[list[bytes]] = []
        raw = _Recorded()
        held = Coalescing(raw, loop)
        held.write(b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\n")
        held.write(b"page")
        seen.append(list(raw.writes))  # nothing sent yet within the turn
        await asyncio.sleep(0)
        seen.append(list(raw.writes))  # one write at the end of it
        held.write(b"x" * HOLD_MAX)
        held.write(b"y")  # past the bound: sent at once, not at the end of the turn
        seen.append(list(raw.writes[1:]))
        held.write(b"last")
        held.close()  # what is held goes out before the connection closes
        seen.append(list(raw.writes[2:]))
        assert raw.closed and held.is_closing()
        await asyncio.sleep(0)  # the turn's end finds nothing left to send
        seen.append(list(raw.writes[3:]))
        return seen

    before, after, large, closing, late = asyncio.run(scenario())
    assert before == []
    assert after == [b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\npage"]
    assert large == [b"x" * HOLD_MAX + b"y"]
    assert closing == [b"last"] and late == []
