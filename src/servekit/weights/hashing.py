"""Hash many files at the speed of the disk: all cores, largest first, no copy.

How (docs/performance.md has the measurements behind each choice):

1. files are queued largest first, so one big file does not start last and leave the
   other cores idle at the end;
2. one worker per available core;
3. trees of at least ``MAP_MIN_BYTES`` are hashed straight from the page cache through
   ``mmap`` in forked worker processes (:mod:`servekit.weights.mapped`), which spares the
   copy into a buffer; the kernel is asked to read sequentially and a window ahead, so
   the disk works while the cores hash;
4. smaller trees, and any file a mapped worker could not finish, go through the copying
   reader (:mod:`servekit.weights.reader`): ``readinto`` a reused buffer on threads, since
   ``hashlib`` and the kernel both release the GIL;
5. every file must be a regular file that keeps its size and modification time while
   it is hashed (:mod:`servekit.weights.filecheck`); anything else is a
   :class:`~servekit.weights.models.FileProblem`, never an exception and never a pass.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from enum import StrEnum

from servekit.progress import Tracker
from servekit.weights.filecheck import Hashed
from servekit.weights.mapped import map_files
from servekit.weights.models import FileProblem
from servekit.weights.reader import READ_BUFFER, read_files
from servekit.weights.tree import LocalFile

__all__ = ["MAP_MIN_BYTES", "READ_BUFFER", "HashMethod", "Hashed", "default_workers", "hash_files"]

MAP_MIN_BYTES = 64 << 20  # below this, forking workers costs more than the copy it saves


class HashMethod(StrEnum):
    """How file bytes reach the hash."""

    AUTO = "auto"  # MAP for trees of at least MAP_MIN_BYTES, else READ
    READ = "read"  # readinto a reused buffer, on threads
    MAP = "map"  # mmap, in forked processes


class _NoProgress:
    def advance(self, amount: float) -> None:
        return None


def default_workers() -> int:
    """The cores this process may run on."""
    return max(1, len(os.sched_getaffinity(0)))


def _maps(method: HashMethod, jobs: Sequence[LocalFile]) -> bool:
    match method:
        case HashMethod.MAP:
            return True
        case HashMethod.READ:
            return False
        case HashMethod.AUTO:  # pragma: no branch
            return sum(j.size for j in jobs) >= MAP_MIN_BYTES


def hash_files(
    jobs: Sequence[LocalFile],
    *,
    workers: int | None = None,
    tracker: Tracker | None = None,
    buffer_size: int = READ_BUFFER,
    method: HashMethod = HashMethod.AUTO,
) -> dict[str, Hashed | FileProblem]:
    """Hash every job, largest first, on ``workers`` (default: every core)."""
    ordered = sorted(jobs, key=lambda j: j.size, reverse=True)
    count = workers or default_workers()
    progress = tracker or _NoProgress()
    if _maps(method, ordered):
        mapped = map_files(ordered, count, progress)
        retry = [job for job, result in zip(ordered, mapped, strict=True) if result is None]
        again = iter(read_files(retry, count, progress, buffer_size))
        results = [result if result is not None else next(again) for result in mapped]
    else:
        results = read_files(ordered, count, progress, buffer_size)
    return {job.path: result for job, result in zip(ordered, results, strict=True)}
