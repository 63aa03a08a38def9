"""The streaming transport against a scripted HTTP/1.1 server on loopback.

The server answers each request with exact bytes, in pieces sent as separate writes,
so framing that real servers produce (chunks split anywhere, chunk extensions,
trailers, interim responses, bodies without framing) reaches the client's parser.
"""

from __future__ import annotations

import asyncio
import json
import socket
import socketserver
import ssl
import struct
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import pytest

from servekit.bench.client import BenchClient, RequestSpec, Trace, stream_headers
from servekit.bench.transport import Deadlines, Origin, StreamPool
from servekit.errors import UsageError
from servekit.package.models import Api

# (connection number, request number on it) -> pieces to send, or None to close silently
Script = Callable[[int, int], Iterable[bytes] | None]
CLOSE = b"<close the connection>"  # a piece that closes the connection (FIN)
RESET = b"<reset the connection>"  # a piece that aborts it (RST)


@dataclass
class Seen:
    heads: list[bytes] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)
    connections: int = 0


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        sock: socket.socket = self.request
        number = self.server.seen.connections
        self.server.seen.connections += 1
        buf = b""
        for index in range(100):
            while b"\r\n\r\n" not in buf:
                if self.server.read_delay:
                    time.sleep(self.server.read_delay)
                data = sock.recv(65536)
                if not data:
                    return
                buf += data
            head, _, buf = buf.partition(b"\r\n\r\n")
            length = int(_header(head, b"content-length") or b"0")
            while len(buf) < length:
                buf += sock.recv(65536)
            self.server.seen.heads.append(head)
            self.server.seen.bodies.append(buf[:length])
            buf = buf[length:]
            pieces = self.server.script(number, index)
            if pieces is None:
                return
            for piece in pieces:
                if piece is CLOSE:
                    return
                if piece is RESET:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    sock.close()
                    return
                try:
                    sock.sendall(piece)
                except (BrokenPipeError, ConnectionResetError):
                    return  # the client gave up on an endless response
                time.sleep(0.0005)  # each piece is its own read on the client


def _header(head: bytes, name: bytes) -> bytes | None:
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == name:
            return value.strip()
    return None


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, script: Script, read_delay: float = 0.0) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script = script
        self.read_delay = read_delay
        self.seen = Seen()


@pytest.fixture
def scripted() -> Iterator[Callable[..., _Server]]:
    servers: list[_Server] = []

    def start(script: Script, read_delay: float = 0.0) -> _Server:
        server = _Server(script, read_delay)
        threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _events(*texts: str, finish: bool = True) -> bytes:
    out = b""
    for text in texts:
        out += b"data: " + json.dumps({"choices": [{"index": 0, "text": text}]}).encode() + b"\n\n"
    if finish:
        done = {"choices": [{"index": 0, "text": "", "finish_reason": "length"}]}
        usage = {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": len(texts)}}
        out += b"data: " + json.dumps(done).encode() + b"\n\n"
        out += b"data: " + json.dumps(usage).encode() + b"\n\ndata: [DONE]\n\n"
    return out


def _chunked(body: bytes, size: int = 40) -> bytes:
    out = b""
    for i in range(0, len(body), size):
        part = body[i : i + size]
        out += b"%x;ext=1\r\n%s\r\n" % (len(part), part)
    return out + b"0\r\nX-Trailer: yes\r\n\r\n"


SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"


def _send(
    server: _Server,
    count: int = 1,
    body: bytes = b'{"prompt":"x"}',
    prefix: str = "",
    *,
    timeout_s: float = 2.0,
    limits: Deadlines | None = None,
    pause: float = 0.0,
) -> list[Trace]:
    """``count`` requests one after another, ``pause`` seconds apart."""
    endpoint = f"http://127.0.0.1:{server.server_address[1]}{prefix}"

    async def main() -> list[Trace]:
        client = BenchClient(endpoint, Api.COMPLETIONS, timeout_s=timeout_s, limits=limits)
        async with client:
            t0 = time.perf_counter()
            spec = RequestSpec("r", 1, False, body, 3, 2)
            traces = []
            for _ in range(count):
                traces.append(await client.send(spec, t0))
                await asyncio.sleep(pause)
            return traces

    return asyncio.run(main())


def test_chunks_split_at_every_byte_with_extensions_and_trailers(
    scripted: Callable[..., _Server],
) -> None:
    raw = SSE_HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + _chunked(_events("a", "b", "c"))
    server = scripted(lambda c, r: [raw[i : i + 1] for i in range(len(raw))])
    (trace,) = _send(server)
    assert trace.error is None, trace.error
    assert trace.status == 200 and trace.state.pieces == ["a", "b", "c"]
    assert trace.state.usage == {"prompt_tokens": 3, "completion_tokens": 3}
    assert trace.t_end is not None and trace.t_end >= trace.state.t_content[-1]


def test_keep_alive_reuses_one_connection(scripted: Callable[..., _Server]) -> None:
    raw = SSE_HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + _chunked(_events("a", "b"), 1000)
    server = scripted(lambda c, r: [raw])
    traces = _send(server, count=3)
    assert all(t.error is None for t in traces)
    assert server.seen.connections == 1 and len(server.seen.heads) == 3


def test_content_length_and_unframed_bodies(scripted: Callable[..., _Server]) -> None:
    body = _events("a", "b")
    sized = SSE_HEAD + b"Content-Length: %d\r\n\r\n" % len(body) + body
    until_close = b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + body
    server = scripted(lambda c, r: [sized[:50], sized[50:]] if c == 0 else [until_close])
    first, second = _send(server, count=2)
    assert first.error is None and first.state.pieces == ["a", "b"]
    assert second.error is None and second.state.pieces == ["a", "b"]
    assert server.seen.connections == 1  # the HTTP/1.0 answer came on the kept-alive one


def test_interim_response_is_skipped(scripted: Callable[..., _Server]) -> None:
    raw = b"HTTP/1.1 100 Continue\r\n\r\n" + SSE_HEAD + b"Transfer-Encoding: chunked\r\n\r\n"
    server = scripted(lambda c, r: [raw, _chunked(_events("a"))])
    (trace,) = _send(server)
    assert trace.error is None and trace.status == 200 and trace.state.pieces == ["a"]


def test_error_status_keeps_its_body_and_the_connection(scripted: Callable[..., _Server]) -> None:
    error = json.dumps({"detail": [{"msg": "Input should be a valid dictionary"}]}).encode()
    answer = b"HTTP/1.1 422 Unprocessable Entity\r\nContent-Length: %d\r\n\r\n%s" % (
        len(error),
        error,
    )
    server = scripted(lambda c, r: [answer])
    first, second = _send(server, count=2)
    assert first.status == 422 and first.error is not None
    assert first.error.startswith("HTTP 422: ") and "valid dictionary" in first.error
    assert second.status == 422 and server.seen.connections == 1


def test_connection_dropped_before_answering_is_retried_once(
    scripted: Callable[..., _Server],
) -> None:
    """A server that times out a kept-alive connection as a request arrives: the request
    goes again on a fresh connection."""
    raw = SSE_HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + _chunked(_events("a"), 1000)
    server = scripted(lambda c, r: [raw] if r == 0 else None)
    first, second = _send(server, count=2)
    assert first.error is None and second.error is None, second.error
    assert server.seen.connections == 2 and len(server.seen.heads) == 3


def test_bad_chunk_size_is_a_protocol_error(scripted: Callable[..., _Server]) -> None:
    raw = SSE_HEAD + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n"
    server = scripted(lambda c, r: [raw])
    (trace,) = _send(server)
    assert trace.error is not None
    assert trace.error.startswith("connection failed (RemoteProtocolError): ")
    assert "chunk size" in trace.error.lower()


def test_request_head_carries_json_content_type(scripted: Callable[..., _Server]) -> None:
    """FastAPI servers answer 422 to a JSON body without it (found on transformers serve)."""
    raw = SSE_HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + _chunked(_events("a"))
    server = scripted(lambda c, r: [raw])
    body = b'{"model":"m","prompt":"hello"}'
    _send(server, body=body)
    (head,) = server.seen.heads
    assert head.startswith(b"POST /v1/completions HTTP/1.1\r\n")
    assert _header(head, b"content-type") == b"application/json"
    assert _header(head, b"content-length") == str(len(body)).encode()
    assert _header(head, b"host") == f"127.0.0.1:{server.server_address[1]}".encode()
    assert server.seen.bodies == [body]


def test_send_time_is_when_the_last_byte_left(scripted: Callable[..., _Server]) -> None:
    """A body larger than the socket buffers, to a server that reads slowly: the send
    time waits until the kernel took the last byte, not when the write was called."""
    raw = SSE_HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + _chunked(_events("a"))
    server = scripted(lambda c, r: [raw], read_delay=0.002)
    body = b'{"prompt":"' + b"x" * (16 * 1024 * 1024) + b'"}'
    (trace,) = _send(server, body=body)
    assert trace.error is None, trace.error
    assert trace.t_send - trace.t_start > 0.05
    assert trace.state.t_first_event is not None and trace.t_send <= trace.state.t_first_event


def test_endpoint_path_prefix_and_non_urls(scripted: Callable[..., _Server]) -> None:
    raw = SSE_HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + _chunked(_events("a"))
    server = scripted(lambda c, r: [raw])
    (trace,) = _send(server, prefix="/proxy/")
    assert trace.error is None
    assert server.seen.heads[0].startswith(b"POST /proxy/v1/completions HTTP/1.1\r\n")
    with pytest.raises(UsageError, match="not an http"):
        Origin.parse("127.0.0.1:8000")


def test_endless_response_head_fails_the_exchange(scripted: Callable[..., _Server]) -> None:
    raw = b"HTTP/1.1 200 OK\r\nX-Pad: " + b"a" * (70 * 1024)
    server = scripted(lambda c, r: [raw])
    (trace,) = _send(server)
    assert trace.error == "connection failed (RemoteProtocolError): response head too large"


def test_bytes_after_the_response_retire_the_connection(scripted: Callable[..., _Server]) -> None:
    """A second answer nobody asked for, in the same write: the first request succeeds and
    the next goes on a fresh connection."""
    raw = SSE_HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + _chunked(_events("a"), 1000)
    server = scripted(lambda c, r: [raw + raw])
    first, second = _send(server, count=2)
    assert first.error is None and second.error is None, second.error
    assert server.seen.connections == 2


def test_an_injected_stream_pool_carries_the_requests(scripted: Callable[..., _Server]) -> None:
    raw = SSE_HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + _chunked(_events("a"))
    server = scripted(lambda c, r: [raw])
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    pool = StreamPool(endpoint, {**stream_headers(), "X-Injected": "yes"}, timeout_s=2.0)

    async def main() -> Trace:
        async with BenchClient(endpoint, Api.COMPLETIONS, timeout_s=2.0, streams=pool) as client:
            return await client.send(RequestSpec("r", 1, False, b"{}", 3, 2), time.perf_counter())

    trace = asyncio.run(main())
    assert trace.error is None and trace.state.pieces == ["a"]
    assert pool.opened == 1 and _header(server.seen.heads[0], b"x-injected") == b"yes"


CHUNKED_HEAD = SSE_HEAD + b"Transfer-Encoding: chunked\r\n\r\n"
LAST_CHUNK = b"0\r\n\r\n"


def _one_chunk(text: str) -> bytes:
    return _chunked(_events(text, finish=False), 1000)[: -len(b"0\r\nX-Trailer: yes\r\n\r\n")]


def test_pauses_shorter_than_the_silence_timeout_do_not_end_a_longer_stream(
    scripted: Callable[..., _Server],
) -> None:
    def slow(c: int, r: int) -> Iterator[bytes]:
        yield CHUNKED_HEAD
        for text in "abcde":
            time.sleep(0.15)
            yield _one_chunk(text)
        finish = _events(*"abcde")[len(_events(*"abcde", finish=False)) :]
        yield _chunked(finish, 1000)

    # pauses of 0.15 s against a 0.5 s silence timeout: a loaded machine (more test workers
    # than cores, under coverage) stretched 0.1 s pauses past 0.25 s
    server = scripted(slow)
    limits = Deadlines(total_s=10.0, first_byte_s=0.5)
    start = time.perf_counter()
    (trace,) = _send(server, timeout_s=0.5, limits=limits)
    assert trace.error is None, trace.error
    assert trace.state.pieces == list("abcde")
    assert time.perf_counter() - start > 0.7  # longer than the silence timeout, in pieces


def test_silence_longer_than_the_timeout_is_a_read_timeout(
    scripted: Callable[..., _Server],
) -> None:
    def stalls(c: int, r: int) -> Iterator[bytes]:
        yield CHUNKED_HEAD + _one_chunk("a")
        time.sleep(1.0)

    server = scripted(stalls)
    start = time.perf_counter()
    (trace,) = _send(server, timeout_s=0.25)
    assert trace.error is not None and trace.error.startswith("timeout (ReadTimeout) after ")
    assert trace.state.pieces == ["a"]
    assert time.perf_counter() - start < 0.9


def test_a_reset_in_the_middle_of_the_body_is_a_read_error(
    scripted: Callable[..., _Server],
) -> None:
    server = scripted(lambda c, r: [CHUNKED_HEAD + _one_chunk("a"), RESET])
    (trace,) = _send(server)
    assert trace.error is not None and trace.error.startswith("connection failed (ReadError): ")
    assert trace.state.pieces == ["a"]


def test_a_close_in_the_middle_of_the_body_is_an_incomplete_message(
    scripted: Callable[..., _Server],
) -> None:
    server = scripted(lambda c, r: [CHUNKED_HEAD + _one_chunk("a"), CLOSE])
    (trace,) = _send(server)
    assert trace.error == (
        "connection failed (RemoteProtocolError): peer closed connection without "
        "sending complete message body"
    )


def test_an_idle_connection_the_server_closed_is_not_reused(
    scripted: Callable[..., _Server],
) -> None:
    raw = CHUNKED_HEAD + _chunked(_events("a"), 1000)
    server = scripted(lambda c, r: [raw, CLOSE] if c == 0 else [raw])
    first, second = _send(server, count=2, pause=0.05)
    assert first.error is None and second.error is None, second.error
    # the close was seen while the connection was idle: no request was lost and retried
    assert server.seen.connections == 2 and len(server.seen.heads) == 2


@pytest.mark.parametrize("later", [False, True], ids=["same-read", "later-read"])
def test_junk_after_the_response_retires_the_connection(
    scripted: Callable[..., _Server], later: bool
) -> None:
    raw = CHUNKED_HEAD + _chunked(_events("a"), 1000)
    junk = b"not http at all\r\n\r\n"
    server = scripted(lambda c, r: [raw, junk] if later else [raw + junk])
    first, second = _send(server, count=2, pause=0.05)
    assert first.error is None and second.error is None, second.error
    assert server.seen.connections == 2


def test_a_refused_connection_is_a_connect_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens on it once closed

    async def main() -> Trace:
        endpoint = f"http://127.0.0.1:{port}"
        async with BenchClient(endpoint, Api.COMPLETIONS, timeout_s=2.0) as client:
            return await client.send(RequestSpec("r", 1, False, b"{}", 3, 2), time.perf_counter())

    trace = asyncio.run(main())
    assert trace.error is not None and trace.error.startswith("connection failed (ConnectError): ")
    assert trace.status is None


def test_a_cancelled_request_closes_its_connection(scripted: Callable[..., _Server]) -> None:
    def endless(c: int, r: int) -> Iterator[bytes]:
        yield CHUNKED_HEAD
        while True:
            yield _one_chunk("a")
            time.sleep(0.02)

    server = scripted(endless)
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    pool = StreamPool(endpoint, stream_headers(), timeout_s=2.0)

    async def main() -> None:
        async with BenchClient(endpoint, Api.COMPLETIONS, timeout_s=2.0, streams=pool) as client:
            spec = RequestSpec("r", 1, False, b"{}", 3, 2)
            task = asyncio.create_task(client.send(spec, time.perf_counter()))
            await asyncio.sleep(0.1)
            (conn,) = pool.active
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert conn.closed and pool.active == set() and pool.idle == []

    asyncio.run(main())


def test_an_https_endpoint_verifies_certificates_by_default() -> None:
    pool = StreamPool("https://engine.example/v1", {}, timeout_s=1.0)
    assert pool.ssl is not None
    assert pool.ssl.verify_mode is ssl.CERT_REQUIRED and pool.ssl.check_hostname
    assert pool.request("/completions", b"{}").startswith(
        b"POST /v1/completions HTTP/1.1\r\nHost: engine.example\r\n"
    )


def test_the_host_header_brackets_ipv6_and_omits_default_ports() -> None:
    assert Origin.parse("http://[::1]:8000").host_header == "[::1]:8000"
    assert Origin.parse("https://[::1]").host_header == "[::1]"
    assert Origin.parse("http://engine:80/x/").host_header == "engine"
    assert Origin.parse("http://engine:80/x/").prefix == "/x"


def test_a_body_without_framing_ends_when_the_server_closes(
    scripted: Callable[..., _Server],
) -> None:
    server = scripted(lambda c, r: [SSE_HEAD + b"\r\n", _events("a", "b"), CLOSE])
    (trace,) = _send(server)
    assert trace.error is None, trace.error
    assert trace.state.pieces == ["a", "b"] and trace.state.done


def test_a_malformed_event_ends_the_request_without_waiting_for_the_body(
    scripted: Callable[..., _Server],
) -> None:
    def endless(c: int, r: int) -> Iterator[bytes]:
        yield CHUNKED_HEAD + _chunked(b"this is not sse\n", 1000)[: -len(LAST_CHUNK) - 11]
        while True:
            yield _one_chunk("a")
            time.sleep(0.02)

    server = scripted(endless)
    start = time.perf_counter()
    (trace,) = _send(server, timeout_s=2.0)
    assert trace.error is not None and "malformed event line" in trace.error
    assert time.perf_counter() - start < 1.0
