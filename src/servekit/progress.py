"""The one progress helper. The library never prints; long work reports here.

Progress is shown only on a terminal and only when not switched off
(``--quiet`` or ``SERVEKIT_PROGRESS=0``), like huggingface_hub's tqdm helper.

Every bar names what it counts (``12/40 requests``, ``1.2/4.3 GB``) and, for work in
phases, the phase it is on (``run 1/2, c=8, measured requests``). Bytes are decimal
units everywhere (GB = 10^9 bytes, GB/s), as docs/performance.md reports rates.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # rich loads with the first bar, not with the modules that report progress
    from rich.progress import Progress, ProgressColumn, TaskID

_enabled: bool | None = True


def set_enabled(enabled: bool | None) -> None:
    """Switch progress display on or off for this process (``--quiet`` calls this);
    ``None`` leaves it to the settings (``SERVEKIT_PROGRESS``), read at the first bar, so
    a command that draws none never loads them."""
    global _enabled
    _enabled = enabled


def is_enabled() -> bool:
    """Whether a progress bar would be drawn now (enabled and stderr is a TTY)."""
    global _enabled
    if _enabled is None:
        from servekit.config import load_settings

        _enabled = load_settings().progress
    return _enabled and sys.stderr.isatty()


class Tracker(Protocol):
    """What long-running work calls to report progress."""

    def advance(self, amount: float) -> None: ...


class PhasedTracker(Tracker, Protocol):
    """A tracker for work in phases (probe, warmup, measured): each phase restarts the
    count at 0 of its own ``total`` (None: not known, the bar pulses)."""

    def phase(self, description: str, total: int | None) -> None: ...


class _NullTracker:
    def advance(self, amount: float) -> None:
        return None

    def phase(self, description: str, total: int | None) -> None:
        return None


class _RichTracker:
    def __init__(self, progress: Progress, task: TaskID) -> None:
        self._progress = progress
        self._task = task

    def advance(self, amount: float) -> None:
        self._progress.advance(self._task, amount)

    def phase(self, description: str, total: int | None) -> None:
        self._progress.reset(self._task, total=total, description=description)
        if total is None:  # reset() keeps the old total when given None: clear it by hand
            for task in self._progress.tasks:
                if task.id == self._task:
                    task.total = None


@contextmanager
def _track(
    description: str, total: int | None, columns: Callable[[], tuple[ProgressColumn, ...]]
) -> Iterator[_RichTracker | _NullTracker]:
    if not is_enabled():
        yield _NullTracker()
        return
    from rich.progress import BarColumn, Progress, TextColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), *columns(), transient=True) as bar:
        yield _RichTracker(bar, bar.add_task(description, total=total))


def _byte_columns() -> tuple[ProgressColumn, ...]:
    from rich.progress import DownloadColumn, TimeRemainingColumn, TransferSpeedColumn

    # decimal, as TransferSpeedColumn always is: "1.2/4.3 GB 1.5 GB/s", never GiB beside GB/s
    return DownloadColumn(binary_units=False), TransferSpeedColumn(), TimeRemainingColumn()


def track_bytes(description: str, total: int) -> AbstractContextManager[Tracker]:
    """A byte-counting bar (GB, GB/s, ETA) on a terminal; silent otherwise."""
    return _track(description, total, _byte_columns)


def track_count(
    description: str, total: int | None, *, unit: str
) -> AbstractContextManager[PhasedTracker]:
    """A counting bar (``done/total UNIT``, ETA) on a terminal; silent otherwise.

    ``unit`` names what is counted (``requests``, ``files``); ``phase()`` restarts it.
    """
    return _track(description, total, lambda: _count_columns(unit))


def _count_columns(unit: str) -> tuple[ProgressColumn, ...]:
    from rich.progress import ProgressColumn, Task, TimeRemainingColumn
    from rich.text import Text

    class Count(ProgressColumn):
        """``done/total UNIT``; nothing while the total is not known (probing)."""

        def render(self, task: Task) -> Text:
            if task.total is None:
                return Text("")
            return Text(f"{task.completed:.0f}/{task.total:.0f} {unit}")

    return Count(), TimeRemainingColumn()
