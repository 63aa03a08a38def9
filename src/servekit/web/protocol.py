"""uvicorn's HTTP protocol (httptools), with ``TCP_NODELAY`` on every connection.

With ``--workers`` above 1, uvicorn binds the listening socket itself with
``socket.socket(family)``: protocol number 0, not ``IPPROTO_TCP``. Accepted connections
inherit it, and asyncio sets ``TCP_NODELAY`` only on sockets whose protocol number is
``IPPROTO_TCP``, so with several workers Nagle's algorithm held each response's body back
until the client's delayed ACK of its headers: about 44 ms per keep-alive request
(measured in bench/web_load.py). One worker binds through ``getaddrinfo`` (protocol 6)
and never stalled. This protocol sets the option itself, whoever bound the socket.
"""

from __future__ import annotations

import asyncio
import socket

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

TCP_FAMILIES = (socket.AF_INET, socket.AF_INET6)


class NoDelayHttpTools(HttpToolsProtocol):
    """:class:`HttpToolsProtocol` that turns Nagle's algorithm off on its connection."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in TCP_FAMILIES:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)
