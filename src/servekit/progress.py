"""The one progress helper. The library never prints; long work reports here.

Progress is shown only on a terminal and only when not switched off
(``--quiet`` or ``SERVEKIT_PROGRESS=0``), like huggingface_hub's tqdm helper.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol

from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    ProgressColumn,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

_enabled = True


def set_enabled(enabled: bool) -> None:
    """Switch progress display on or off for this process (``--quiet`` calls this)."""
    global _enabled
    _enabled = enabled


def is_enabled() -> bool:
    """Whether a progress bar would be drawn now (enabled and stderr is a TTY)."""
    return _enabled and sys.stderr.isatty()


class Tracker(Protocol):
    """What long-running work calls to report progress."""

    def advance(self, amount: float) -> None: ...


class _NullTracker:
    def advance(self, amount: float) -> None:
        return None


class _RichTracker:
    def __init__(self, progress: Progress, task: TaskID) -> None:
        self._progress = progress
        self._task = task

    def advance(self, amount: float) -> None:
        self._progress.advance(self._task, amount)


@contextmanager
def _track(description: str, total: int, columns: tuple[ProgressColumn, ...]) -> Iterator[Tracker]:
    if not is_enabled():
        yield _NullTracker()
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), *columns, transient=True) as bar:
        yield _RichTracker(bar, bar.add_task(description, total=total))


def track_bytes(description: str, total: int) -> AbstractContextManager[Tracker]:
    """A byte-counting bar (bytes, rate, ETA) on a terminal; silent otherwise."""
    columns = (DownloadColumn(binary_units=True), TransferSpeedColumn(), TimeRemainingColumn())
    return _track(description, total, columns)


def track_count(description: str, total: int) -> AbstractContextManager[Tracker]:
    """A counting bar (done / total, ETA) on a terminal; silent otherwise."""
    columns = (TextColumn("{task.completed:.0f}/{task.total:.0f}"), TimeRemainingColumn())
    return _track(description, total, columns)
