"""The copying reader: ``readinto`` a reused buffer on worker threads.

It is the safe path: every failure (a file that shrinks, a disk error) is an
``OSError`` or a short read, turned into a :class:`~servekit.weights.models.FileProblem`.
It is used for small trees, and for any file the mapped reader could not finish.
"""

from __future__ import annotations

import hashlib
import io
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from servekit.progress import Tracker
from servekit.weights.filecheck import Hashed, open_checked, outcome, read_failed
from servekit.weights.models import FileProblem
from servekit.weights.tree import LocalFile

READ_BUFFER = 1 << 20  # fits a core's L2 cache, so hashing reads what the copy just wrote
PREFETCH_WINDOW = 64 << 20  # how far ahead the kernel is asked to read


class Reader:
    """A worker's state: one reused buffer, and the shared progress tracker."""

    def __init__(self, tracker: Tracker, buffer_size: int = READ_BUFFER) -> None:
        self.tracker = tracker
        self.buffer = bytearray(buffer_size)
        self.view = memoryview(self.buffer)

    def stream(self, raw: io.FileIO, size: int) -> tuple[str, int]:
        """Hash ``raw`` to its end, or one read past ``size``: (hex digest, bytes read)."""
        digest = hashlib.sha256()
        done = next_prefetch = 0
        fd = raw.fileno()
        while done <= size:
            if done >= next_prefetch:  # keep the disk busy while this core hashes
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
        opened = open_checked(job)
        if isinstance(opened, FileProblem):
            return opened
        fd, before = opened
        with io.FileIO(fd, "rb", closefd=True) as raw:
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
                hexdigest, done = self.stream(raw, job.size)
                return outcome(job, fd, before, done, hexdigest)
            except OSError as exc:
                return read_failed(job, exc)


def read_files(
    jobs: Sequence[LocalFile], workers: int, tracker: Tracker, buffer_size: int = READ_BUFFER
) -> list[Hashed | FileProblem]:
    """Hash ``jobs`` in order on ``workers`` threads; results in the same order."""
    local = threading.local()

    def run(job: LocalFile) -> Hashed | FileProblem:
        reader = getattr(local, "reader", None)
        if reader is None:
            reader = local.reader = Reader(tracker, buffer_size)
        return reader.hash(job)

    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        return list(pool.map(run, jobs))
    finally:  # on Ctrl-C, start no new file
        pool.shutdown(wait=True, cancel_futures=True)
