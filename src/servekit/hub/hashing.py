"""Hash many files at the speed of the disk: all cores, largest first, overlapped I/O.

How (see docs/performance.md for the measurements behind each choice):

1. one worker thread per available core; ``hashlib`` releases the GIL while it
   hashes a large buffer and the kernel does while it reads, so threads run in
   parallel;
2. files are queued largest first, so one big file does not start last and
   leave the other cores idle at the end;
3. each worker reads with ``readinto`` into its own reused buffer (no allocation per
   chunk) and asks the kernel (``posix_fadvise``) to read sequentially and to fetch the
   next window ahead, so the disk works while the core hashes;
4. every file is opened without following links, must be a regular file, and must
   keep its size and modification time while it is hashed; anything else is a
   :class:`~servekit.hub.models.FileProblem`, never an exception and never a pass.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from servekit.hub.models import FileProblem, ProblemKind, os_reason
from servekit.hub.tree import LocalFile
from servekit.progress import Tracker

READ_BUFFER = 1 << 20  # fits a core's L2 cache, so hashing reads what the copy just wrote
PREFETCH_WINDOW = 64 << 20  # how far ahead the kernel is asked to read
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass(frozen=True)
class Hashed:
    """A file hashed from start to end without changing."""

    path: str
    size: int
    sha256: str


class _NoProgress:
    def advance(self, amount: float) -> None:
        return None


def default_workers() -> int:
    """The cores this process may run on."""
    return max(1, len(os.sched_getaffinity(0)))


def _changed(job: LocalFile, actual: str) -> FileProblem:
    return FileProblem(
        kind=ProblemKind.CHANGED,
        path=job.path,
        expected=f"{job.size} bytes, unchanged while hashed",
        actual=actual,
    )


def _unreadable(job: LocalFile, actual: str) -> FileProblem:
    return FileProblem(
        kind=ProblemKind.UNREADABLE,
        path=job.path,
        expected="a readable regular file",
        actual=actual,
    )


class _Reader:
    """A worker's state: one reused buffer, and the shared progress tracker."""

    def __init__(self, tracker: Tracker, buffer_size: int) -> None:
        self.tracker = tracker
        self.buffer = bytearray(buffer_size)
        self.view = memoryview(self.buffer)

    def stream(self, raw: io.FileIO, job: LocalFile) -> tuple[str, int]:
        """Hash ``raw`` to its end, or one byte past the expected size: (hex, bytes read)."""
        digest = hashlib.sha256()
        done = 0
        fd = raw.fileno()
        next_prefetch = 0
        while done <= job.size:
            if done >= next_prefetch:
                os.posix_fadvise(
                    fd, done + PREFETCH_WINDOW, PREFETCH_WINDOW, os.POSIX_FADV_WILLNEED
                )
                next_prefetch = done + PREFETCH_WINDOW
            count = raw.readinto(self.view)
            if not count:
                break
            digest.update(self.view[:count])
            done += count
            self.tracker.advance(count)
        return digest.hexdigest(), done

    def hash(self, job: LocalFile) -> Hashed | FileProblem:
        try:
            fd = os.open(job.source, _OPEN_FLAGS)
        except OSError as exc:
            return FileProblem.unreadable(job.path, os_reason(exc))
        with io.FileIO(fd, "rb", closefd=True) as raw:
            try:
                return self._checked(raw, job)
            except OSError as exc:
                return FileProblem.unreadable(job.path, f"read failed: {os_reason(exc)}")

    def _checked(self, raw: io.FileIO, job: LocalFile) -> Hashed | FileProblem:
        before = os.fstat(raw.fileno())
        if not stat.S_ISREG(before.st_mode):
            return FileProblem.unreadable(job.path, "not a regular file")
        if before.st_size != job.size:
            return _changed(job, f"{before.st_size} bytes when opened")
        os.posix_fadvise(raw.fileno(), 0, 0, os.POSIX_FADV_SEQUENTIAL)
        os.posix_fadvise(raw.fileno(), 0, PREFETCH_WINDOW, os.POSIX_FADV_WILLNEED)
        hexdigest, done = self.stream(raw, job)
        after = os.fstat(raw.fileno())
        if done != job.size or after.st_size != job.size:
            return _changed(job, f"read {done} bytes; {after.st_size} bytes when hashing ended")
        if after.st_mtime_ns != before.st_mtime_ns:
            return _changed(job, "modified while it was being hashed")
        return Hashed(path=job.path, size=done, sha256=hexdigest)


def hash_files(
    jobs: Sequence[LocalFile],
    *,
    workers: int | None = None,
    tracker: Tracker | None = None,
    buffer_size: int = READ_BUFFER,
) -> dict[str, Hashed | FileProblem]:
    """Hash every job, largest first, on ``workers`` threads (default: every core)."""
    progress = tracker or _NoProgress()
    local = threading.local()

    def run(job: LocalFile) -> Hashed | FileProblem:
        reader = getattr(local, "reader", None)
        if reader is None:
            reader = local.reader = _Reader(progress, buffer_size)
        return reader.hash(job)

    ordered = sorted(jobs, key=lambda j: j.size, reverse=True)
    pool = ThreadPoolExecutor(max_workers=workers or default_workers())
    try:
        results = list(pool.map(run, ordered))
    finally:  # on Ctrl-C, start no new file
        pool.shutdown(wait=True, cancel_futures=True)
    return {job.path: result for job, result in zip(ordered, results, strict=True)}
