"""The harness's own HTTP/1.1 client for streaming requests, on asyncio protocols.

Why not httpx on this path: measured on one core against the simulator, httpx parsed
about 12K content events per CPU-second (under 17K/s needed by 256 streams at 15 ms
per token), and its timestamps were taken when a coroutine resumed, after every
other callback the loop had queued: at 16+ concurrent streams the send time was late
and TTFT read low by up to 16 %. This client does the minimum per received chunk,
inside ``data_received`` (the callback of the socket read itself):

1. read the clock once, on arrival;
2. hand the bytes to ``httptools`` (llhttp, the C parser uvicorn uses), whose callbacks
   deliver the status, the framing (chunked, ``Content-Length`` or read-to-close) and
   the body pieces (:class:`_Response`);
3. hand the body bytes and their arrival time to the SSE parser
   (:class:`~servekit.bench.sse.StreamState`).

The protocol is ours because the clock is (docs/metrics.md); the HTTP/1.1 framing is
the library's: per streamed event, the hand-written framing it replaced took 0.98 µs
of CPU and this one 0.44 µs (``bench/transport_framing.py``, docs/performance.md).

The send time is taken when the last request byte is handed to the kernel:
``transport.write`` sends at once when the socket accepts it all, and otherwise the
write-buffer limit of zero makes the loop call ``resume_writing`` when it drains.
Idle keep-alive connections wait on a stack (no pool scans). httpx stays for the
few non-streaming calls (``/version``, ``/tokenize``).
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast
from urllib.parse import urlsplit

import httptools

from servekit.bench.sse import StreamState
from servekit.seams import parse_url

_MAX_HEAD = 64 * 1024  # bytes before the end of the response head
_MAX_ERROR_BODY = 4096


@dataclass
class Exchange:
    """What happened on the wire for one request; times are seconds after ``t0``.

    ``error`` is a transport failure (connection, framing, timeout), named after the
    matching httpx exception so records read the same as before; stream content
    problems are the parser's (``StreamState.error``).
    """

    status: int | None = None
    t_send: float | None = None
    t_end: float | None = None
    error: str | None = None
    body: bytes = b""  # the start of a non-200 response body
    received: int = 0  # bytes of response received
    dropped: bool = False  # the server closed the connection before any response byte


@dataclass(frozen=True)
class Origin:
    """Where requests go: host, port, TLS and the path prefix of the endpoint URL."""

    scheme: str
    host: str
    port: int
    prefix: str

    @classmethod
    def parse(cls, endpoint: str) -> Origin:
        parts = urlsplit(parse_url(endpoint, "endpoint"))
        assert parts.hostname is not None  # parse_url refuses a URL without a host
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return cls(parts.scheme, parts.hostname, port, parts.path.rstrip("/"))

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"


@dataclass(frozen=True)
class Deadlines:
    """Limits on one request beyond the silence timeout: the whole request (so a server
    that streams keep-alive comments forever cannot hold it), and the first response byte."""

    total_s: float | None
    first_byte_s: float | None


class _Response:
    """``httptools`` callbacks for the responses on one connection: status, framing, body.

    The parser calls these from inside :meth:`_Connection.data_received`, so ``now`` is
    the arrival time of the bytes being parsed. Interim responses (1xx) are skipped; a
    response with neither ``Content-Length`` nor chunked framing ends when the server
    closes the connection (``until_close``).
    """

    def __init__(self, conn: _Connection) -> None:
        self.conn = conn
        self.parser = httptools.HttpResponseParser(self)
        self.now = 0.0
        self.reset()

    def reset(self) -> None:
        self.interim = False
        self.framed = False  # Content-Length or Transfer-Encoding seen
        self.headers_done = False
        self.done = False

    def feed(self, data: bytes, now: float) -> None:
        self.now = now
        self.parser.feed_data(data)

    @property
    def until_close(self) -> bool:
        """The body runs to the end of the connection (HTTP/1.0 style)."""
        return self.headers_done and not self.framed and not self.done

    # --- httptools callbacks -------------------------------------------------------

    def on_header(self, name: bytes, value: bytes) -> None:
        if name.lower() in (b"content-length", b"transfer-encoding"):
            self.framed = True

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        self.interim = 100 <= status < 200  # 100 Continue, 103 Early Hints
        if self.interim:
            return
        self.headers_done = True
        self.conn.head(status, self.parser.should_keep_alive())

    def on_body(self, body: bytes) -> None:
        self.conn.body(body, self.now)

    def on_message_complete(self) -> None:
        if self.interim:
            self.interim = False
            return
        self.done = True
        self.conn.ended(self.now)


class _Connection(asyncio.Protocol):
    """One keep-alive connection; runs at most one exchange at a time.

    It owns the socket, the clock and the exchange's lifetime (send time, read timeout,
    completion); :class:`_Response` owns the HTTP framing.
    """

    def __init__(self, timeout_s: float, limits: Deadlines | None = None) -> None:
        self.timeout_s = timeout_s
        self.limits = limits or Deadlines(total_s=None, first_byte_s=None)
        self.started = 0.0  # perf_counter() when the current request was written
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.exchange: Exchange | None = None
        self.state: StreamState | None = None
        self.done: asyncio.Future[None] | None = None
        self.t0 = 0.0
        self.last = 0.0  # perf_counter() of the last activity, for the read timeout
        self.watchdog: asyncio.TimerHandle | None = None
        self.keep_alive = True
        self.error_body = bytearray()
        self.response = _Response(self)

    # --- asyncio callbacks ---------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.transport.set_write_buffer_limits(high=0)  # resume_writing marks the send time

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        self.last = now
        exchange = self.exchange
        if exchange is None:  # bytes nobody asked for: never reuse this connection
            self.keep_alive = False
            return
        exchange.received += len(data)
        if not self.response.headers_done and exchange.received > _MAX_HEAD:
            self._fail("connection failed (RemoteProtocolError): response head too large", now)
            return
        try:
            self.response.feed(data, now)
        except httptools.HttpParserError as exc:
            self.keep_alive = False
            if self.exchange is not None:
                self._fail(f"connection failed (RemoteProtocolError): {exc}", now)

    def resume_writing(self) -> None:
        exchange = self.exchange
        if exchange is not None and exchange.t_send is None:
            self.last = time.perf_counter()
            exchange.t_send = self.last - self.t0

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        now = time.perf_counter()
        if self.exchange is None:
            return
        if self.response.until_close:
            self.response.done = True
            self._complete(now)
        elif isinstance(exc, OSError):
            self._fail(f"connection failed (ReadError): {exc}", now)
        elif not self.response.headers_done:
            self.exchange.dropped = self.exchange.received == 0
            self._fail(
                "connection failed (RemoteProtocolError): Server disconnected without "
                "sending a response.",
                now,
            )
        else:
            self._fail(
                "connection failed (RemoteProtocolError): peer closed connection without "
                "sending complete message body",
                now,
            )

    # --- what the response parser reports ----------------------------------------------

    def head(self, status: int, keep_alive: bool) -> None:
        if self.exchange is not None:
            self.exchange.status = status
        self.keep_alive = self.keep_alive and keep_alive

    def body(self, data: bytes, now: float) -> None:
        exchange, state = self.exchange, self.state
        if exchange is None or state is None:
            return  # the exchange already ended (the parser found an error)
        if exchange.status != 200:
            self.error_body += data[: _MAX_ERROR_BODY - len(self.error_body)]
            return
        state.feed(data, now - self.t0)
        if state.error is not None:
            self._complete(now)

    def ended(self, now: float) -> None:
        if self.exchange is None:  # a second response nobody asked for
            self.keep_alive = False
            return
        self._complete(now)

    # --- one exchange ----------------------------------------------------------------

    def start(self, request: bytes, state: StreamState, t0: float) -> asyncio.Future[None]:
        """Write ``request``; the future resolves when the response has ended or failed."""
        assert self.transport is not None
        loop = asyncio.get_running_loop()
        self.response.reset()
        self.keep_alive, self.error_body = True, bytearray()
        self.exchange, self.state, self.t0 = Exchange(), state, t0
        self.done = done = loop.create_future()
        self.transport.write(request)
        self.last = self.started = time.perf_counter()
        if self.transport.get_write_buffer_size() == 0:
            self.exchange.t_send = self.last - t0
        self.watchdog = loop.call_later(self._next_check(self.last), self._watch)
        return done

    def _next_check(self, now: float) -> float:
        """Seconds until the earliest of the silence, first-byte and total limits."""
        waits = [self.timeout_s - (now - self.last)]
        elapsed = now - self.started
        if self.limits.total_s is not None:
            waits.append(self.limits.total_s - elapsed)
        if self.limits.first_byte_s is not None and self.exchange and not self.exchange.received:
            waits.append(self.limits.first_byte_s - elapsed)
        return max(0.0, min(waits))

    def _overdue(self, exchange: Exchange, now: float) -> str | None:
        """The limit the request has passed, as the error to record, or None."""
        elapsed = now - self.started
        total, first_byte = self.limits.total_s, self.limits.first_byte_s
        if total is not None and elapsed >= total:
            return f"timeout (Deadline) after {elapsed:.1f} s: the whole request took too long"
        if first_byte is not None and not exchange.received and elapsed >= first_byte:
            return f"timeout (FirstByteTimeout) after {elapsed:.1f} s: no response byte"
        return None

    def _watch(self) -> None:
        exchange = self.exchange
        # _complete cancels the one pending check, so a check never runs between exchanges
        assert exchange is not None
        now = time.perf_counter()
        idle = now - self.last
        overdue = self._overdue(exchange, now) if idle < self.timeout_s else None
        if overdue is not None:
            self._fail(overdue, now)
            return
        if idle < self.timeout_s:
            self.watchdog = asyncio.get_running_loop().call_later(
                self._next_check(now), self._watch
            )
            return
        kind = "WriteTimeout" if exchange.t_send is None else "ReadTimeout"
        since = exchange.t_send if exchange.t_send is not None else now - self.t0
        self._fail(f"timeout ({kind}) after {now - self.t0 - since:.1f} s", now)

    def _fail(self, error: str, now: float) -> None:
        assert self.exchange is not None
        self.exchange.error = error
        self.keep_alive = False
        self._complete(now)

    def _complete(self, now: float) -> None:
        """The exchange is over (ended, failed, or the parser found an error)."""
        exchange, state = self.exchange, self.state
        assert exchange is not None and state is not None
        if exchange.error is None and exchange.status == 200 and state.error is None:
            state.close()
        if state.error is not None or not self.response.done:
            self.keep_alive = False
        exchange.t_end = now - self.t0
        if exchange.t_send is None:
            exchange.t_send = exchange.t_end
        exchange.body = bytes(self.error_body)
        if self.watchdog is not None:
            self.watchdog.cancel()
        self.exchange = self.state = None
        if self.done is not None and not self.done.done():
            self.done.set_result(None)
        if not self.keep_alive:
            self.close()

    def close(self) -> None:
        if self.transport is not None and not self.closed:
            self.transport.close()
        self.closed = True

    @property
    def reusable(self) -> bool:
        return not self.closed and self.keep_alive and self.exchange is None


class StreamPool:
    """Streaming POSTs to one origin over keep-alive connections (a stack of idle ones).

    The caller bounds how many requests run at once; each running request holds one
    connection. ``timeout_s`` is the longest silence allowed while a request is being
    written or its response read; connecting has its own limit.
    """

    def __init__(
        self,
        endpoint: str,
        headers: Mapping[str, str],
        *,
        timeout_s: float,
        connect_timeout_s: float = 30.0,
        limits: Deadlines | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.origin = Origin.parse(endpoint)
        self.timeout_s = timeout_s
        self.limits = limits
        self.connect_timeout_s = connect_timeout_s
        self.ssl: ssl.SSLContext | None = None
        if self.origin.scheme == "https":
            self.ssl = ssl_context or ssl.create_default_context()
        fields = {"Host": self.origin.host_header, **headers}
        self.head = "".join(f"{k}: {v}\r\n" for k, v in fields.items()).encode("latin-1")
        self.idle: list[_Connection] = []
        self.active: set[_Connection] = set()
        self.opened = 0

    def request(self, path: str, body: bytes) -> bytes:
        """The bytes of one POST: request line, headers, ``Content-Length`` and body."""
        line = f"POST {self.origin.prefix}{path} HTTP/1.1\r\n".encode("latin-1")
        return b"%s%sContent-Length: %d\r\n\r\n%s" % (line, self.head, len(body), body)

    async def post(self, path: str, body: bytes, state: StreamState, t0: float) -> Exchange:
        """Send one request and feed its response to ``state``; failures are on the result.

        A kept-alive connection that the server closed before answering (it may have
        timed it out just as the request went) is retried once on a fresh connection.
        """
        request = self.request(path, body)
        exchange, reused = await self._exchange(request, state, t0, fresh=False)
        if reused and exchange.dropped:
            exchange, _ = await self._exchange(request, state, t0, fresh=True)
        return exchange

    async def _exchange(
        self, request: bytes, state: StreamState, t0: float, *, fresh: bool
    ) -> tuple[Exchange, bool]:
        conn = None if fresh else self._idle()
        reused = conn is not None
        if conn is None:
            try:
                conn = await self._connect()
            except TimeoutError:
                error = f"timeout (ConnectTimeout) after {self.connect_timeout_s:g} s"
                return self._failed(error, t0), False
            except OSError as exc:
                return self._failed(f"connection failed (ConnectError): {exc}", t0), False
        self.active.add(conn)
        try:
            done = conn.start(request, state, t0)
            exchange = conn.exchange
            assert exchange is not None
            await done
        except BaseException:
            conn.close()
            raise
        finally:
            self.active.discard(conn)
        if conn.reusable:
            self.idle.append(conn)
        return exchange, reused

    @staticmethod
    def _failed(error: str, t0: float) -> Exchange:
        now = time.perf_counter() - t0
        return Exchange(t_send=now, t_end=now, error=error)

    def _idle(self) -> _Connection | None:
        while self.idle:
            conn = self.idle.pop()
            if conn.reusable:
                return conn
            conn.close()
        return None

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        self.opened += 1
        # asyncio.timeout, not wait_for: on Python 3.11 wait_for drops a cancellation (Ctrl-C)
        # that arrives in the loop turn the connection completes in.
        async with asyncio.timeout(self.connect_timeout_s):
            _, protocol = await loop.create_connection(
                lambda: _Connection(self.timeout_s, self.limits),
                self.origin.host,
                self.origin.port,
                ssl=self.ssl,
            )
        return protocol

    async def aclose(self) -> None:
        for conn in (*self.idle, *self.active):
            conn.close()
        self.idle.clear()
        await asyncio.sleep(0)  # let the transports finish closing
