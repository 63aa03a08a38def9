"""An httpx transport for many long streams: an O(1) pool of httpcore HTTP/1.1 connections.

httpx's default transport wraps httpcore's connection pool, which scans every
connection whenever a request is queued or a response closes. With hundreds of
concurrent streams that scan dominates the client's CPU (measured: three quarters
of a 256-stream run) and delays every timestamp. This transport keeps a stack of
idle keep-alive connections instead: a request takes one or opens a new one, a
closed response gives it back. The harness runs at most ``concurrency`` requests
at once, so the number of connections is bounded by the caller.
"""

from __future__ import annotations

import contextlib
import ssl
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import Any

import httpcore
import httpx

_EXCEPTIONS: tuple[tuple[type[Exception], type[httpx.HTTPError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
)


@contextlib.contextmanager
def _mapped() -> Iterator[None]:
    """Translate httpcore's exceptions into httpx's, as httpx's own transport does."""
    try:
        yield
    except httpcore.TimeoutException as exc:
        raise _translate(exc) from exc
    except (httpcore.NetworkError, httpcore.ProtocolError, httpcore.UnsupportedProtocol) as exc:
        raise _translate(exc) from exc


def _translate(exc: Exception) -> httpx.HTTPError:
    for source, target in _EXCEPTIONS:
        if isinstance(exc, source):
            return target(str(exc))
    return httpx.TransportError(str(exc))


class _Body(httpx.AsyncByteStream):
    def __init__(self, body: object, done: Callable[[], None]) -> None:
        self.body = body
        self.done = done

    async def __aiter__(self) -> AsyncIterator[bytes]:
        assert hasattr(self.body, "__aiter__")
        with _mapped():
            async for part in self.body:
                yield part

    async def aclose(self) -> None:
        try:
            if hasattr(self.body, "aclose"):
                with _mapped():
                    await self.body.aclose()
        finally:
            self.done()


SENT_AT = "servekit.sent_at"  # response extension: perf_counter() after the last request byte


class _TimedStream(httpcore.AsyncNetworkStream):
    """A network stream that remembers when its last non-empty write finished."""

    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self.inner = inner
        self.last_write = 0.0

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self.inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self.inner.write(buffer, timeout)
        if buffer:
            self.last_write = time.perf_counter()

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        self.inner = await self.inner.start_tls(ssl_context, server_hostname, timeout)
        return self

    def get_extra_info(self, info: str) -> Any:
        return self.inner.get_extra_info(info)


class _TimedBackend(httpcore.AsyncNetworkBackend):
    """One per connection, so the transport can read its stream's last write time."""

    def __init__(self) -> None:
        self.inner = httpcore.AnyIOBackend()
        self.stream: _TimedStream | None = None

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        inner = await self.inner.connect_tcp(host, port, timeout, local_address, socket_options)
        self.stream = _TimedStream(inner)
        return self.stream

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        self.stream = _TimedStream(
            await self.inner.connect_unix_socket(path, timeout, socket_options)
        )
        return self.stream

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


class StreamTransport(httpx.AsyncBaseTransport):
    """HTTP/1.1 keep-alive connections from a stack of idle ones (one origin per run)."""

    def __init__(
        self, *, keepalive_expiry: float = 300.0, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        self.idle: list[tuple[httpcore.AsyncHTTPConnection, _TimedBackend]] = []
        self.keepalive_expiry = keepalive_expiry
        self.ssl_context = ssl_context
        self.opened = 0

    def _acquire(
        self, origin: httpcore.Origin
    ) -> tuple[httpcore.AsyncHTTPConnection, _TimedBackend]:
        while self.idle:
            connection, backend = self.idle.pop()
            if connection.is_available() and connection.can_handle_request(origin):
                return connection, backend
        self.opened += 1
        backend = _TimedBackend()
        connection = httpcore.AsyncHTTPConnection(
            origin=origin,
            ssl_context=self.ssl_context,
            keepalive_expiry=self.keepalive_expiry,
            http1=True,
            http2=False,
            network_backend=backend,
        )
        return connection, backend

    def _release(self, pair: tuple[httpcore.AsyncHTTPConnection, _TimedBackend]) -> None:
        if pair[0].is_available():
            self.idle.append(pair)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.AsyncByteStream)
        url = request.url
        origin = httpcore.Origin(
            url.raw_scheme, url.raw_host, url.port or (443 if url.scheme == "https" else 80)
        )
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        pair = self._acquire(origin)
        with _mapped():
            response = await pair[0].handle_async_request(core)
        extensions = dict(response.extensions)
        if pair[1].stream is not None:
            extensions[SENT_AT] = pair[1].stream.last_write
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_Body(response.stream, lambda: self._release(pair)),
            extensions=extensions,
        )

    async def aclose(self) -> None:
        idle, self.idle = self.idle, []
        for connection, _ in idle:
            await connection.aclose()
