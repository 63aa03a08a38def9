"""Ctrl-C and SIGTERM end an interruptible run, even when a cancellation is swallowed."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Iterator

import pytest

from servekit.bench.loop import RECANCEL_S, LoopKind, run_interruptible

LOOPS = [LoopKind.ASYNCIO, LoopKind.AUTO]  # AUTO is uvloop where it is installed


@pytest.fixture(autouse=True)
def _default_handlers() -> Iterator[None]:
    """Each test starts from Python's own handlers, whatever the worker inherited."""
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    yield
    for signum, handler in before.items():
        signal.signal(signum, handler)


def _signal_self(signum: int) -> None:
    """Sent from inside the run, once its handlers are in place (a SIGTERM before them would
    end the test process)."""
    os.kill(os.getpid(), signum)


@pytest.mark.parametrize("kind", LOOPS)
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_cancels_the_run_and_its_cleanup_runs(kind: LoopKind, signum: int) -> None:
    cleaned: list[str] = []

    async def main() -> None:
        _signal_self(signum)
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cleaned.append("cancelled")
            raise

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_interruptible(main(), kind)
    assert time.monotonic() - started < 5
    assert cleaned == ["cancelled"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.parametrize("kind", LOOPS)
def test_a_swallowed_cancellation_is_repeated_until_the_run_ends(kind: LoopKind) -> None:
    """What Python 3.11's wait_for does in one loop turn in a thousand: the first
    cancellation is caught and dropped. asyncio.run would wait for the 30 s to pass."""
    swallowed: list[float] = []

    async def main() -> None:
        _signal_self(signal.SIGINT)
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            swallowed.append(time.monotonic())
        await asyncio.sleep(30)

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_interruptible(main(), kind)
    ended = time.monotonic()
    assert len(swallowed) == 1
    assert ended - swallowed[0] == pytest.approx(RECANCEL_S, abs=0.4)
    assert ended - started < 5


def test_a_run_that_ends_on_its_own_returns_its_value() -> None:
    async def main() -> int:
        await asyncio.sleep(0)
        return 7

    assert run_interruptible(main(), LoopKind.ASYNCIO) == 7
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_the_callers_own_handlers_are_back_after_the_run() -> None:
    def own(signum: int, frame: object) -> None:
        raise AssertionError("not called")

    before = signal.signal(signal.SIGTERM, own)
    try:

        async def main() -> None:
            await asyncio.sleep(0)

        run_interruptible(main(), LoopKind.ASYNCIO)
        assert signal.getsignal(signal.SIGTERM) is own
    finally:
        signal.signal(signal.SIGTERM, before)


def test_an_ignored_sigint_stays_ignored() -> None:
    """`servekit bench run ... &` from a script: the shell started it with SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    async def main() -> str:
        _signal_self(signal.SIGINT)
        await asyncio.sleep(0.3)  # time for a handler, had one been installed, to cancel
        return "ran to its end"

    assert run_interruptible(main(), LoopKind.ASYNCIO) == "ran to its end"
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_an_error_of_the_run_is_not_taken_for_an_interrupt() -> None:
    async def main() -> None:
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        run_interruptible(main(), LoopKind.ASYNCIO)


def test_off_the_main_thread_it_runs_without_signal_handlers() -> None:
    results: list[int] = []

    async def main() -> int:
        return 3

    worker = threading.Thread(target=lambda: results.append(run_interruptible(main())))
    worker.start()
    worker.join(10)
    assert results == [3]
