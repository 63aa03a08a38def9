"""The mapped reader: hash straight from the page cache, in forked worker processes.

Why: with SHA-NI a core hashes about 1.4 GB/s, and copying the page cache into a
buffer first (``readinto``) costs it about 15% of that (docs/performance.md). Mapping
the file (``mmap``) hands the page-cache pages to the hash directly.

Why processes: a mapped file that shrinks while it is read, or a disk error while a
page is faulted in, is delivered as ``SIGBUS``, which kills the process that touched the
page; Python cannot turn it into an exception. So each worker is a forked process. If
one dies, every file it had not reported is hashed again with the copying reader
(:mod:`servekit.weights.reader`), which turns the same condition into the specific error
(changed while hashed, or unreadable). A file that cannot be mapped at all is handed to
the copying reader too.

Why not ``ProcessPoolExecutor`` (issue 24, docs/performance.md): it forks every worker
before the first file is handed out, feeds them through two queues and two threads, and
joins them one by one at the end, a fixed cost of tens of milliseconds that a 4 GB
tree hashed in one second pays in full. Here each worker is a bare ``os.fork()`` that
starts hashing at once, reads the next file's index (largest first) from a pipe shared
by all, writes each result to its own pipe and exits when none is left. Progress is one
byte counter per worker in shared memory, written by that worker alone: no lock per
chunk, and no lock at all that a killed worker could leave held.
"""

from __future__ import annotations

import faulthandler
import hashlib
import mmap
import multiprocessing
import os
import pickle
import resource
import select
import selectors
import signal
from collections.abc import Sequence
from typing import Any

from servekit.progress import Tracker
from servekit.weights.filecheck import Hashed, changed, open_checked, outcome, read_failed
from servekit.weights.models import FileProblem
from servekit.weights.tree import LocalFile

MAP_CHUNK = 4 << 20  # bytes hashed per call; progress is counted per chunk
MAP_WINDOW = 256 << 20  # bytes mapped at a time (a multiple of the page size)
_POLL_SECONDS = 0.05
_LENGTH = 4  # bytes of the length before each result a worker writes
_INDEX = 4  # bytes of a file's index in the queue

Result = Hashed | FileProblem | None

_progress: tuple[Any, int] | None = None  # in a worker: the shared counters, and its own


def _report(count: int) -> None:
    if _progress is not None:
        counters, mine = _progress
        counters[mine] += count  # this worker's counter, written by it alone


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


def hash_mapped(job: LocalFile) -> Result:
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


class _Queue:
    """The files, largest first, handed out as their indices through a pipe: a worker
    reads one index (4 bytes) at a time, and the kernel gives each to one reader alone.
    No lock: a worker killed at any moment cannot leave the others waiting. Progress is
    one byte counter per worker in shared memory."""

    def __init__(self, jobs: Sequence[LocalFile], workers: int) -> None:
        self.jobs = jobs
        self.counters = multiprocessing.get_context("fork").RawArray("Q", workers)
        self.todo, self.feed = os.pipe()
        os.set_blocking(self.feed, False)
        self.unsent = memoryview(b"".join(i.to_bytes(_INDEX, "little") for i in range(len(jobs))))
        if self.send():  # every index fits in the pipe (trees of up to 16384 files)
            self.close_feed()  # before any fork: no worker holds the writing end

    def send(self) -> bool:
        """Write the indices the pipe takes now; ``True`` once every one is written.

        Each write is at most ``PIPE_BUF`` bytes, a multiple of 4, so the kernel writes it
        whole or not at all, and every read of 4 bytes gets one whole index."""
        while self.unsent:
            try:
                os.write(self.feed, self.unsent[: select.PIPE_BUF])
            except BlockingIOError:  # the pipe is full: the workers have not caught up
                return False
            self.unsent = self.unsent[select.PIPE_BUF :]
        return True

    def close_feed(self) -> None:
        if self.feed >= 0:
            os.close(self.feed)
            self.feed = -1

    def take(self) -> int | None:
        """In a worker: the next file's index; ``None`` when none is left."""
        index = os.read(self.todo, _INDEX)
        return int.from_bytes(index, "little") if index else None

    def hashed(self) -> int:
        return sum(self.counters)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _work(queue: _Queue, mine: int, out: int) -> None:
    """A worker: hash files from the queue until none is left, each result to ``out``."""
    global _progress
    _progress = (queue.counters, mine)
    faulthandler.disable()  # a SIGBUS here is expected and handled: no fatal-error dump
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # nor a core file
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends a worker at once
    while (index := queue.take()) is not None:
        message = pickle.dumps((index, hash_mapped(queue.jobs[index])))
        _write_all(out, len(message).to_bytes(_LENGTH, "little") + message)


def _fork(queue: _Queue, mine: int) -> tuple[int, int]:
    """Start worker ``mine``: (its pid, the pipe its results come out of)."""
    readable, writable = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the worker; coverage does not follow a bare fork
        code = 1
        try:
            os.close(readable)
            queue.close_feed()  # the parent's end: the pipe ends when the parent closes it
            _work(queue, mine, writable)
            code = 0
        finally:
            os._exit(code)  # never the parent's clean-up, whatever happened
    os.close(writable)
    return pid, readable


def _parse(data: bytes, results: list[Result]) -> None:
    """Every complete result a worker wrote (a worker killed mid-write leaves a tail)."""
    at = 0
    while at + _LENGTH <= len(data):
        end = at + _LENGTH + int.from_bytes(data[at : at + _LENGTH], "little")
        if end > len(data):
            return
        index, result = pickle.loads(data[at + _LENGTH : end])
        results[index] = result
        at = end


def _collect(pipes: Sequence[int], queue: _Queue, tracker: Tracker) -> list[Result]:
    """Read every worker's results to the end of its pipe, reporting progress and
    writing the rest of the queue meanwhile."""
    received = {fd: bytearray() for fd in pipes}
    reported = 0
    with selectors.DefaultSelector() as selector:
        for fd in pipes:
            selector.register(fd, selectors.EVENT_READ)
        if queue.feed >= 0:
            selector.register(queue.feed, selectors.EVENT_WRITE)
        while len(selector.get_map()) > (queue.feed >= 0):  # a worker is still running
            for key, _ in selector.select(timeout=_POLL_SECONDS):
                if key.fd == queue.feed:
                    if queue.send():
                        selector.unregister(queue.feed)
                        queue.close_feed()
                    continue
                chunk = os.read(key.fd, 1 << 16)
                if chunk:
                    received[key.fd] += chunk
                else:  # the worker has exited, or died
                    selector.unregister(key.fd)
            hashed = queue.hashed()
            tracker.advance(hashed - reported)
            reported = hashed
    results: list[Result] = [None] * len(queue.jobs)
    for data in received.values():
        _parse(bytes(data), results)
    return results


def map_files(jobs: Sequence[LocalFile], workers: int, tracker: Tracker) -> list[Result]:
    """Hash ``jobs`` (largest first) on ``workers`` processes; results in the same order,
    ``None`` where the copying reader must decide (a worker died, or could not map)."""
    queue = _Queue(jobs, workers)
    started: list[tuple[int, int]] = []
    finished = False
    try:
        for mine in range(min(workers, len(jobs))):
            started.append(_fork(queue, mine))
        results = _collect([pipe for _, pipe in started], queue, tracker)
        finished = True  # every worker has closed its pipe: it is exiting
        return results
    finally:  # on Ctrl-C or any error, no worker outlives the call
        queue.close_feed()
        os.close(queue.todo)
        for pid, pipe in started:
            os.close(pipe)
            if not finished:
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
