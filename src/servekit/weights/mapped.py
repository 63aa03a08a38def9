"""The mapped reader: hash straight from the page cache, in forked worker processes.

Why: with SHA-NI a core hashes about 1.4 GB/s, and copying the page cache into a
buffer first (``readinto``) costs it about 15% of that (docs/performance.md). Mapping
the file (``mmap``) hands the page-cache pages to the hash directly.

Why processes: a mapped file that shrinks while it is read, or a disk error while a
page is faulted in, is delivered as ``SIGBUS``, which kills the process that touched the
page; Python cannot turn it into an exception. So each worker is a forked process. If
one dies, every file that was in flight is hashed again with the copying reader
(:mod:`servekit.weights.reader`), which turns the same condition into the specific error
(changed while hashed, or unreadable). A file that cannot be mapped at all is handed to
the copying reader too. Progress is a byte counter shared with the workers.
"""

from __future__ import annotations

import faulthandler
import hashlib
import mmap
import multiprocessing
import os
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from servekit.progress import Tracker
from servekit.weights.filecheck import Hashed, changed, open_checked, outcome, read_failed
from servekit.weights.models import FileProblem
from servekit.weights.tree import LocalFile

MAP_CHUNK = 4 << 20  # bytes hashed per call; progress is reported per chunk
MAP_WINDOW = 256 << 20  # bytes mapped at a time (a multiple of the page size)
_POLL_SECONDS = 0.05

_counter: Any = None  # the shared byte counter, in each worker


def _start_worker(counter: Any) -> None:
    global _counter
    _counter = counter
    faulthandler.disable()  # a SIGBUS here is expected and handled: no fatal-error dump


def _report(count: int) -> None:
    if _counter is not None:
        with _counter.get_lock():
            _counter.value += count


def mapped_digest(fd: int, size: int, window: int = MAP_WINDOW, chunk: int = MAP_CHUNK) -> str:
    """The sha256 of the first ``size`` bytes of ``fd``, read through windows of ``mmap``."""
    digest = hashlib.sha256()
    for start in range(0, size, window):
        length = min(window, size - start)
        os.posix_fadvise(fd, start + window, window, os.POSIX_FADV_WILLNEED)  # the next window
        with mmap.mmap(fd, length, prot=mmap.PROT_READ, offset=start) as region:
            region.madvise(mmap.MADV_SEQUENTIAL)
            with memoryview(region) as view:
                for offset in range(0, length, chunk):
                    with view[offset : offset + chunk] as part:
                        digest.update(part)
                    _report(min(chunk, length - offset))
    return digest.hexdigest()


def hash_mapped(job: LocalFile) -> Hashed | FileProblem | None:
    """Hash one file through ``mmap``; ``None`` when it cannot be mapped (read it instead)."""
    opened = open_checked(job)
    if isinstance(opened, FileProblem):
        return opened
    fd, before = opened
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
        try:
            hexdigest = mapped_digest(fd, job.size)
        except (OSError, ValueError):  # this file system cannot map the file
            return None
        if os.pread(fd, 1, job.size):  # the file grew
            return changed(job, f"more than {job.size} bytes when hashing ended")
        return outcome(job, fd, before, job.size, hexdigest)
    except OSError as exc:
        return read_failed(job, exc)
    finally:
        os.close(fd)


def _follow(futures: Sequence[Future[Any]], counter: Any, tracker: Tracker) -> None:
    reported = 0
    pending = set(futures)
    while pending:
        _, pending = wait(pending, timeout=_POLL_SECONDS)
        value = int(counter.value)
        tracker.advance(value - reported)
        reported = value


def _result(future: Future[Hashed | FileProblem | None]) -> Hashed | FileProblem | None:
    try:
        return future.result()
    except BrokenProcessPool:  # a worker died (SIGBUS): the copying reader decides
        return None


def map_files(
    jobs: Sequence[LocalFile], workers: int, tracker: Tracker
) -> list[Hashed | FileProblem | None]:
    """Hash ``jobs`` in order on ``workers`` processes; ``None`` where the reader must redo it."""
    context = multiprocessing.get_context("fork")
    counter = context.Value("Q", 0)
    pool = ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=_start_worker, initargs=(counter,)
    )
    try:
        futures = [pool.submit(hash_mapped, job) for job in jobs]
        _follow(futures, counter, tracker)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return [_result(f) for f in futures]
