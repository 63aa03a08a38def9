"""Event-loop choice for the client and the simulator: uvloop when installed, else asyncio."""

from __future__ import annotations

import asyncio
import importlib.util
import signal
import threading
from collections.abc import Callable, Coroutine
from enum import StrEnum
from typing import Any, TypeVar

from servekit.errors import UsageError

T = TypeVar("T")


class LoopKind(StrEnum):
    AUTO = "auto"
    UVLOOP = "uvloop"
    ASYNCIO = "asyncio"


def uvloop_available() -> bool:
    return importlib.util.find_spec("uvloop") is not None


def resolve(kind: LoopKind) -> LoopKind:
    """The loop that will actually run: ``auto`` picks uvloop when it is installed."""
    match kind:
        case LoopKind.AUTO:
            return LoopKind.UVLOOP if uvloop_available() else LoopKind.ASYNCIO
        case LoopKind.UVLOOP:
            if not uvloop_available():
                raise UsageError(
                    "uvloop is not installed",
                    hint="pip install 'servekit[bench]' or use --loop asyncio",
                )
            return kind
        case LoopKind.ASYNCIO:  # pragma: no branch
            return kind


def _factory(kind: LoopKind) -> Callable[[], asyncio.AbstractEventLoop]:
    if resolve(kind) is LoopKind.UVLOOP:
        import uvloop

        factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
        return factory
    return asyncio.new_event_loop


# How long an interrupted coroutine has to end before it is cancelled again: a cancellation
# some awaited library swallows (Python 3.11's ``asyncio.wait_for`` does when its inner
# future completes in the same loop turn) must not leave Ctrl-C without effect.
RECANCEL_S = 0.5
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def run(main: Coroutine[Any, Any, T], kind: LoopKind = LoopKind.AUTO) -> T:
    """Run ``main`` to completion on a fresh loop of ``kind``."""
    with asyncio.Runner(loop_factory=_factory(kind)) as runner:
        return runner.run(main)


def run_interruptible(main: Coroutine[Any, Any, T], kind: LoopKind = LoopKind.AUTO) -> T:
    """Run ``main`` as :func:`run` does; Ctrl-C or SIGTERM (unless ignored when it began)
    cancels it and raises KeyboardInterrupt once it has ended.

    The cancellation reaches ``main`` as ``asyncio.CancelledError`` wherever it waits, so its
    cleanup (``except``/``finally``) runs in every case; it is repeated every
    :data:`RECANCEL_S` until ``main`` ends, so a cancellation swallowed below cannot keep
    the run going. Off the main thread (no signal can be handled there) this is :func:`run`.
    """
    if threading.current_thread() is not threading.main_thread():
        return run(main, kind)
    received: list[int] = []
    try:
        return run(_stopped_by_signals(main, received), kind)
    except asyncio.CancelledError:
        if received:
            raise KeyboardInterrupt from None
        raise


async def _stopped_by_signals(main: Coroutine[Any, Any, T], received: list[int]) -> T:
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None

    def cancel_until_done() -> None:
        if not task.done():
            task.cancel()
            loop.call_later(RECANCEL_S, cancel_until_done)

    def stop(signum: int) -> None:
        if not received:
            cancel_until_done()
        received.append(signum)

    # A signal ignored when the run began stays ignored (a background job of a shell, nohup),
    # as Python itself leaves an ignored SIGINT alone.
    previous = {
        signum: handler
        for signum in STOP_SIGNALS
        if (handler := signal.getsignal(signum)) is not signal.SIG_IGN
    }
    for signum in previous:
        loop.add_signal_handler(signum, stop, signum)
    try:
        return await main
    finally:
        for signum, handler in previous.items():  # a caller's own (servekit tune's SIGTERM)
            loop.remove_signal_handler(signum)
            signal.signal(signum, handler)
