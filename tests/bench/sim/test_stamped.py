"""The simulator's stamped TCP server: back-pressure, orderly close, accept bursts, stamps."""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from collections.abc import Awaitable, Callable

from servekit.bench.sim.stamped import (
    _SO_TIMESTAMPNS,
    StampedServer,
    StampedTransport,
    _arrival,
)


class Recorder:
    """A protocol that keeps what happened to its connection."""

    def __init__(self) -> None:
        self.transport: StampedTransport | None = None
        self.received = bytearray()
        self.lost: list[Exception | None] = []

    def connection_made(self, transport: StampedTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes, arrival: float) -> None:
        self.received += data

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost.append(exc)


async def _until(check: Callable[[], bool], timeout: float = 2.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.001)


def _serve(body: Callable[[StampedServer, list[Recorder], int], Awaitable[None]]) -> None:
    async def main() -> None:
        made: list[Recorder] = []

        def factory() -> Recorder:
            made.append(Recorder())
            return made[-1]

        server = StampedServer(factory)
        port = server.start("127.0.0.1", 0)
        try:
            await body(server, made, port)
        finally:
            server.close()

    asyncio.run(main())


async def _connect(port: int) -> socket.socket:
    client = socket.create_connection(("127.0.0.1", port))
    client.setblocking(False)
    return client


async def _read_to_eof(client: socket.socket) -> bytes:
    loop, out = asyncio.get_running_loop(), bytearray()
    while chunk := await loop.sock_recv(client, 1 << 20):
        out += chunk
    return bytes(out)


def test_a_close_waits_until_everything_buffered_has_been_sent() -> None:
    big = bytes(range(256)) * (64 * 1024)  # 16 MiB: more than the socket buffers hold

    async def body(server: StampedServer, made: list[Recorder], port: int) -> None:
        client = await _connect(port)
        await _until(lambda: len(made) == 1)
        transport = made[0].transport
        assert transport is not None
        transport.write(big)
        assert transport.pending, "the peer is not reading: the rest must be buffered"
        transport.write(b"tail")  # queued behind the buffer, not sent ahead of it
        transport.close()
        transport.write(b"after close")  # dropped: the connection is closing
        assert made[0].lost == []  # not closed while bytes are pending
        assert await _read_to_eof(client) == big + b"tail"
        await _until(lambda: made[0].lost == [None])
        assert server.connections == set()
        client.close()

    _serve(body)


def test_close_and_abort_are_idempotent() -> None:
    async def body(server: StampedServer, made: list[Recorder], port: int) -> None:
        client = await _connect(port)
        await _until(lambda: len(made) == 1)
        transport = made[0].transport
        assert transport is not None
        transport.close()
        transport.close()
        transport.abort()
        assert made[0].lost == [None]  # the protocol hears of the close once
        assert await _read_to_eof(client) == b""
        client.close()

    _serve(body)


def test_closing_the_server_drops_open_connections_and_can_be_repeated() -> None:
    async def body(server: StampedServer, made: list[Recorder], port: int) -> None:
        client = await _connect(port)
        client.sendall(b"hello")
        await _until(lambda: len(made) == 1 and bytes(made[0].received) == b"hello")
        server.close()
        server.close()
        assert made[0].lost == [None]
        assert await _read_to_eof(client) == b""
        client.close()

    _serve(body)


def test_a_burst_larger_than_one_accept_batch_is_accepted() -> None:
    async def body(server: StampedServer, made: list[Recorder], port: int) -> None:
        clients = [await _connect(port) for _ in range(100)]  # one wake-up accepts 64
        await _until(lambda: len(server.connections) == 100)
        for client in clients:
            client.close()
        await _until(lambda: len(server.connections) == 0)
        assert all(r.lost == [None] for r in made)

    _serve(body)


def test_arrival_uses_the_kernel_stamp_and_never_lies_in_the_future() -> None:
    def stamp(ns: int) -> list[tuple[int, int, bytes]]:
        other = (socket.SOL_SOCKET, _SO_TIMESTAMPNS + 1, b"\0" * 16)  # not a stamp: skipped
        packed = struct.pack("@qq", ns // 1_000_000_000, ns % 1_000_000_000)
        return [other, (socket.SOL_SOCKET, _SO_TIMESTAMPNS, packed)]

    before = time.monotonic()
    aged = _arrival(stamp(time.time_ns() - 50_000_000))  # arrived 50 ms ago
    future = _arrival(stamp(time.time_ns() + 10_000_000_000))  # a clock step ahead
    unstamped = _arrival([])
    after = time.monotonic()
    assert before - 0.06 < aged < before - 0.04
    assert before <= future <= after
    assert before <= unstamped <= after
