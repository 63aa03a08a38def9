"""Callbacks at absolute monotonic deadlines, to the microsecond where Linux allows.

Event loops wait in ``epoll_wait``, whose timeout has millisecond granularity and is
rounded up: a token due in 9.8 ms would go out 10 ms later, and the lateness creeps
from token to token. On Linux a ``timerfd`` armed at the earliest deadline wakes the
loop on time instead (it becomes readable; no timeout is involved). Elsewhere the
loop's own timers are used.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import heapq
import itertools
import math
import os
import sys
import time
from collections.abc import Callable

_CLOCK_MONOTONIC = 1
_TFD_NONBLOCK = 0o4000
_TFD_CLOEXEC = 0o2000000
_TFD_TIMER_ABSTIME = 1
_EARLY_S = 20e-6  # run entries due within this of now in the same wake-up


class _Timespec(ctypes.Structure):
    _fields_ = (("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long))


class _Itimerspec(ctypes.Structure):
    _fields_ = (("it_interval", _Timespec), ("it_value", _Timespec))


class _TimerFd:
    def __init__(self) -> None:
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = int(self.libc.timerfd_create(_CLOCK_MONOTONIC, _TFD_NONBLOCK | _TFD_CLOEXEC))
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "timerfd_create failed")

    def arm(self, when: float) -> None:
        sec = math.floor(when)
        spec = _Itimerspec(_Timespec(0, 0), _Timespec(sec, max(1, int((when - sec) * 1e9))))
        self.libc.timerfd_settime(self.fd, _TFD_TIMER_ABSTIME, ctypes.byref(spec), None)

    def drain(self) -> None:
        with contextlib.suppress(BlockingIOError):
            os.read(self.fd, 8)

    def close(self) -> None:
        os.close(self.fd)


def _timerfd() -> _TimerFd | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return _TimerFd()
    except (OSError, AttributeError):
        return None


class Entry:
    """A scheduled callback; :meth:`cancel` stops it from running."""

    __slots__ = ("callback", "handle")

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback: Callable[[], None] | None = callback
        self.handle: asyncio.TimerHandle | None = None  # only without a timerfd

    def cancel(self) -> None:
        self.callback = None
        if self.handle is not None:
            self.handle.cancel()


class PreciseTimer:
    """Runs callbacks at ``time.monotonic()`` deadlines on one event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.heap: list[tuple[float, int, Entry]] = []
        self.order = itertools.count()
        self.armed = math.inf
        self.tfd = _timerfd()
        if self.tfd is not None:
            loop.add_reader(self.tfd.fd, self._fire)

    @property
    def precise(self) -> bool:
        return self.tfd is not None

    def at(self, when: float, callback: Callable[[], None]) -> Entry:
        entry = Entry(callback)
        if self.tfd is None:
            entry.handle = self.loop.call_later(max(0.0, when - time.monotonic()), callback)
            return entry
        heapq.heappush(self.heap, (when, next(self.order), entry))
        if when < self.armed:
            self.armed = when
            self.tfd.arm(when)
        return entry

    def _fire(self) -> None:
        assert self.tfd is not None
        self.tfd.drain()
        heap = self.heap
        while heap and heap[0][0] <= time.monotonic() + _EARLY_S:
            callback = heapq.heappop(heap)[2].callback
            if callback is not None:
                callback()
        self.armed = heap[0][0] if heap else math.inf
        if heap:
            self.tfd.arm(self.armed)

    def close(self) -> None:
        if self.tfd is not None:
            self.loop.remove_reader(self.tfd.fd)
            self.tfd.close()
