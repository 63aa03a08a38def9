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
from collections.abc import AsyncIterator, Callable, Iterator

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


class StreamTransport(httpx.AsyncBaseTransport):
    """HTTP/1.1 keep-alive connections from a stack of idle ones (one origin per run)."""

    def __init__(
        self, *, keepalive_expiry: float = 300.0, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        self.idle: list[httpcore.AsyncHTTPConnection] = []
        self.keepalive_expiry = keepalive_expiry
        self.ssl_context = ssl_context
        self.opened = 0

    def _acquire(self, origin: httpcore.Origin) -> httpcore.AsyncHTTPConnection:
        while self.idle:
            connection = self.idle.pop()
            if connection.is_available() and connection.can_handle_request(origin):
                return connection
        self.opened += 1
        return httpcore.AsyncHTTPConnection(
            origin=origin,
            ssl_context=self.ssl_context,
            keepalive_expiry=self.keepalive_expiry,
            http1=True,
            http2=False,
        )

    def _release(self, connection: httpcore.AsyncHTTPConnection) -> None:
        if connection.is_available():
            self.idle.append(connection)

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
        connection = self._acquire(origin)
        with _mapped():
            response = await connection.handle_async_request(core)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_Body(response.stream, lambda: self._release(connection)),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        idle, self.idle = self.idle, []
        for connection in idle:
            await connection.aclose()
