"""--timeout is a total deadline: a server that streams keep-alive comments forever (each
byte resets a silence timeout) and one that never answers both end in a recorded error."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator

from servekit.bench.client import BenchClient, RequestSpec, Trace
from servekit.bench.transport import Deadlines
from servekit.package.models import Api
from tests.bench.test_transport import SSE_HEAD, _chunked, _Server, scripted

__all__ = ["scripted"]


def _keepalive_forever() -> Iterator[bytes]:
    yield SSE_HEAD + b"Transfer-Encoding: chunked\r\n\r\n"
    while True:
        yield _chunked(b": keep-alive\n\n")[: -len(b"0\r\nX-Trailer: yes\r\n\r\n")]
        time.sleep(0.02)


def _send(server: _Server, limits: Deadlines) -> tuple[Trace, float]:
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"

    async def main() -> Trace:
        client = BenchClient(endpoint, Api.COMPLETIONS, timeout_s=30.0, limits=limits)
        async with client:
            spec = RequestSpec("r", 1, False, b'{"prompt":"x"}', 3, 2)
            return await client.send(spec, time.perf_counter())

    start = time.perf_counter()
    trace = asyncio.run(main())
    return trace, time.perf_counter() - start


def test_keep_alive_comments_cannot_outlast_the_total_deadline(
    scripted: Callable[..., _Server],
) -> None:
    server = scripted(lambda c, r: _keepalive_forever())
    trace, took = _send(server, Deadlines(total_s=0.5, first_byte_s=None))
    assert trace.error is not None and "Deadline" in trace.error, trace.error
    assert 0.4 < took < 5.0  # the 30 s silence timeout never fires: bytes keep coming


def test_no_first_byte_is_its_own_timeout(scripted: Callable[..., _Server]) -> None:
    def silent(c: int, r: int) -> Iterator[bytes]:
        time.sleep(3)
        yield b""

    server = scripted(silent)
    trace, took = _send(server, Deadlines(total_s=10.0, first_byte_s=0.3))
    assert trace.error is not None and "FirstByteTimeout" in trace.error, trace.error
    assert took < 3.0
