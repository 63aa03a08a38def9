"""A TCP server whose reads carry the kernel's arrival time, for the simulator's clock.

The simulator starts a request's clock when the request arrived. A single-threaded
server that reads the clock in its read callback stamps each request after every
request handled before it in the same wake-up: measured with 256 requests arriving
within 3 ms, the last was stamped about 10 ms late, and so was its first token. The
kernel stamps every packet as it arrives; with ``SO_TIMESTAMPNS`` each ``recvmsg``
returns the stamp of the newest packet it read (``CLOCK_REALTIME``), converted here
to ``time.monotonic()``. Where the option is missing the read callback's own clock
reading is used.

The transport is the minimum the simulator needs: non-blocking reads on the loop's
reader callback, writes sent at once and buffered only when the socket is full, and
close after the buffer drains.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import sys
import time
from collections.abc import Callable
from typing import Protocol

_SO_TIMESTAMPNS = 35  # Linux, asm-generic/socket.h (also SCM_TIMESTAMPNS)
_TIMESPEC = struct.Struct("@qq")
_ANCILLARY = socket.CMSG_SPACE(_TIMESPEC.size)
_READ_SIZE = 256 * 1024


class StampedProtocol(Protocol):
    """What the server calls on each connection (like ``asyncio.Protocol``)."""

    def connection_made(self, transport: StampedTransport) -> None: ...

    def data_received(self, data: bytes, arrival: float) -> None: ...

    def connection_lost(self, exc: Exception | None) -> None: ...


def _enable_stamps(sock: socket.socket) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
    except OSError:
        return False
    return True


def _arrival(ancillary: list[tuple[int, int, bytes]]) -> float:
    """The kernel's stamp of the newest packet read, on the monotonic clock (or now)."""
    now = time.monotonic()
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS and len(data) >= 16:
            sec, nsec = _TIMESPEC.unpack_from(data)
            age: float = (time.time_ns() - (sec * 1_000_000_000 + nsec)) / 1e9
            return now - max(age, 0.0)
    return now


class StampedTransport:
    """One accepted connection."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        sock: socket.socket,
        protocol: StampedProtocol,
        on_lost: Callable[[StampedTransport], None],
    ) -> None:
        self.loop = loop
        self.on_lost = on_lost
        self.sock = sock
        self.fd = sock.fileno()
        self.protocol = protocol
        self.stamped = _enable_stamps(sock)
        self.pending = bytearray()
        self.closing = False
        self.closed = False
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        protocol.connection_made(self)
        loop.add_reader(self.fd, self._read)

    def _read(self) -> None:
        try:
            if self.stamped:
                data, ancillary, _, _ = self.sock.recvmsg(_READ_SIZE, _ANCILLARY)
                arrival = _arrival(ancillary)
            else:
                data, arrival = self.sock.recv(_READ_SIZE), time.monotonic()
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._lose(exc)
            return
        if not data:
            self._lose(None)
            return
        self.protocol.data_received(data, arrival)

    def write(self, data: bytes) -> None:
        if self.closed or self.closing:
            return
        if self.pending:
            self.pending += data
            return
        try:
            sent = self.sock.send(data)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError as exc:
            self._lose(exc)
            return
        if sent < len(data):
            self.pending += data[sent:]
            self.loop.add_writer(self.fd, self._flush)

    def _flush(self) -> None:
        try:
            sent = self.sock.send(self.pending)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._lose(exc)
            return
        del self.pending[:sent]
        if not self.pending:
            self.loop.remove_writer(self.fd)
            if self.closing:
                self._lose(None)

    def close(self) -> None:
        """Close once everything written has been sent."""
        if self.closed:
            return
        self.closing = True
        if not self.pending:
            self._lose(None)

    def abort(self) -> None:
        """Close now, dropping anything not yet sent."""
        self.pending.clear()
        self._lose(None)

    def _lose(self, exc: Exception | None) -> None:
        if self.closed:
            return
        self.closed = True
        self.loop.remove_reader(self.fd)
        self.loop.remove_writer(self.fd)
        self.sock.close()
        self.on_lost(self)
        self.protocol.connection_lost(exc)


class StampedServer:
    """Accepts connections on a listening socket; one protocol per connection."""

    def __init__(self, factory: Callable[[], StampedProtocol]) -> None:
        self.factory = factory
        self.listener: socket.socket | None = None
        self.connections: set[StampedTransport] = set()
        self.loop: asyncio.AbstractEventLoop | None = None

    def start(self, host: str, port: int) -> int:
        """Listen (``port=0`` picks a free one); returns the bound port."""
        self.loop = asyncio.get_running_loop()
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        listener = socket.socket(family, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        _enable_stamps(listener)  # inherited on accept: data that came before is stamped too
        listener.bind((host, port))
        listener.listen(4096)
        listener.setblocking(False)
        self.listener = listener
        self.loop.add_reader(listener.fileno(), self._accept)
        return int(listener.getsockname()[1])

    def _accept(self) -> None:
        assert self.listener is not None and self.loop is not None
        for _ in range(64):
            try:
                sock, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return  # e.g. out of file descriptors: the client sees a refused connection
            transport = StampedTransport(self.loop, sock, self.factory(), self.connections.discard)
            self.connections.add(transport)

    def close(self) -> None:
        if self.listener is not None and self.loop is not None:
            self.loop.remove_reader(self.listener.fileno())
            self.listener.close()
            self.listener = None
        for transport in list(self.connections):
            with contextlib.suppress(OSError):
                transport.abort()
