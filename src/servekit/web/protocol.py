"""uvicorn's HTTP protocol (httptools), with ``TCP_NODELAY`` on every connection and a
response's writes sent together.

With ``--workers`` above 1, uvicorn binds the listening socket itself with
``socket.socket(family)``: protocol number 0, not ``IPPROTO_TCP``. Accepted connections
inherit it, and asyncio sets ``TCP_NODELAY`` only on sockets whose protocol number is
``IPPROTO_TCP``, so with several workers Nagle's algorithm held each response's body back
until the client's delayed ACK of its headers: about 44 ms per keep-alive request
(measured in bench/web_load.py). One worker binds through ``getaddrinfo`` (protocol 6)
and never stalled. This protocol sets the option itself, whoever bound the socket.

uvicorn writes a response's status line and headers, then its body, as two writes: two
``send`` system calls and, with Nagle off, two TCP segments for a page that fits in one.
:class:`Coalescing` holds the writes made in one turn of the event loop and sends them as
one at the end of it (at once past 64 KiB, and before the connection closes).
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

TCP_FAMILIES = (socket.AF_INET, socket.AF_INET6)
HOLD_MAX = 64 * 1024
"""Bytes held for the end of the loop's turn at most; a larger response streams as written."""


class Coalescing:
    """A transport whose writes within one turn of the event loop go out as one write;
    everything else is the wrapped transport's."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: list[bytes] = []
        self._size = 0

    def write(self, data: bytes) -> None:
        if not self._held:
            self._loop.call_soon(self.flush)
        self._held.append(data)
        self._size += len(data)
        if self._size > HOLD_MAX:
            self.flush()

    def flush(self) -> None:
        """Send what is held (nothing when it was sent already)."""
        if self._held:
            data = self._held[0] if len(self._held) == 1 else b"".join(self._held)
            self._held, self._size = [], 0
            self._transport.write(data)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class NoDelayHttpTools(HttpToolsProtocol):
    """:class:`HttpToolsProtocol` that turns Nagle's algorithm off on its connection and
    sends each response's writes together."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in TCP_FAMILIES:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)
        self.transport = Coalescing(transport, self.loop)  # type: ignore[assignment]
