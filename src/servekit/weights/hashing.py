"""Hash many files at the speed of the disk: all cores, largest first, no copy.

How (docs/performance.md has the measurements behind each choice):

1. files are queued largest first, so one big file does not start last and leave the
   other cores idle at the end;
2. at least one worker per available core, and more when whole files would leave cores
   idle at the end (:func:`balanced_workers`): a file's sha256 is one sequential stream,
   so 8 equal shards on 3 cores finish in 3 rounds, the last with one core idle (0.89 of
   the ceiling), while 8 workers time-shared by the kernel finish them together;
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

import heapq
import os
from collections.abc import Sequence
from enum import StrEnum

from servekit.progress import Tracker
from servekit.weights.filecheck import Hashed
from servekit.weights.models import FileProblem
from servekit.weights.reader import READ_BUFFER, read_files
from servekit.weights.tree import LocalFile

__all__ = [
    "MAP_MIN_BYTES",
    "READ_BUFFER",
    "HashMethod",
    "Hashed",
    "balanced_workers",
    "default_workers",
    "hash_files",
]

MAP_MIN_BYTES = 64 << 20  # below this, forking workers costs more than the copy it saves
EVEN = 1.02  # a worker count whose run is within 2 % of the shortest will do
EXACT = 256  # files placed one by one when choosing the worker count
MAX_PER_CORE = 4  # never more workers than this per core


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


def _shares(ordered: Sequence[int], rest: float, workers: int) -> list[float]:
    """Each worker's bytes, ascending, when files go largest first to the least loaded one.

    The ``EXACT`` largest files are placed one by one; the ``rest`` bytes are poured as if
    divisible (each file is smaller than any placed one): close enough for the choice,
    and fast on 10^5 files.
    """
    shares: list[float] = [0.0] * workers
    for size in ordered[:EXACT]:
        heapq.heapreplace(shares, shares[0] + size)
    shares.sort()
    for count in range(1, workers + 1):  # raise the lowest ``count`` shares to one level
        level = (sum(shares[:count]) + rest) / count
        if count == workers or level <= shares[count]:
            return [level] * count + shares[count:]
    raise AssertionError("unreachable")  # pragma: no cover


def _duration(shares: Sequence[float], cores: int) -> float:
    """Seconds (per byte a core hashes in a second) for ``shares`` time-shared on ``cores``."""
    elapsed = done = 0.0
    for finished, share in enumerate(shares):  # ascending: each ends the next phase
        rate = min(1.0, cores / (len(shares) - finished))
        elapsed += (share - done) / rate
        done = share
    return elapsed


def balanced_workers(sizes: Sequence[int], cores: int) -> int:
    """How many workers keep ``cores`` busy to the end on files of ``sizes`` (largest first).

    A worker hashes one whole file at a time. With one worker per core, the run lasts
    as long as the largest share, and whole files can make the shares uneven; with more
    workers the kernel time-shares the cores among them. The fewest workers, from
    ``cores`` up to ``MAX_PER_CORE`` per core and one per file, whose run is within
    ``EVEN`` of the shortest, are the candidates. Of those, the fewest that is a multiple
    of ``cores`` (the kernel then keeps as many workers on each core, and they keep pace);
    else the most: with a count that does not divide among the cores, the workers that
    share a core with more others fall behind and end alone, and more workers keep that
    tail shorter (8 shards on 3 cores, measured on a quiet machine: 4 workers 0.93-0.98 of
    the cores x OpenSSL ceiling, 8 workers 0.99-1.02; docs/performance.md).
    """
    ordered = sorted(sizes, reverse=True)
    total = sum(ordered)
    most = min(len(ordered), cores * MAX_PER_CORE)
    if most <= cores or ordered[0] * cores <= (EVEN - 1) * total:
        return max(1, min(cores, len(ordered)))  # few files, or none large enough to matter
    rest = float(sum(ordered[EXACT:]))
    runs = {w: _duration(_shares(ordered, rest, w), cores) for w in range(cores, most + 1)}
    shortest = min(runs.values())
    good = [w for w, run in runs.items() if run <= EVEN * shortest]
    even = [w for w in good if w % cores == 0]
    return min(even) if even else max(good)


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
    """Hash every job, largest first, on ``workers`` (default: :func:`balanced_workers`)."""
    ordered = sorted(jobs, key=lambda j: j.size, reverse=True)
    count = workers or balanced_workers([j.size for j in ordered], default_workers())
    progress = tracker or _NoProgress()
    if _maps(method, ordered):
        from servekit.weights.mapped import map_files  # a one-file verify never forks

        mapped = map_files(ordered, count, progress)
        retry = [job for job, result in zip(ordered, mapped, strict=True) if result is None]
        again = iter(read_files(retry, count, progress, buffer_size))
        results = [result if result is not None else next(again) for result in mapped]
    else:
        results = read_files(ordered, count, progress, buffer_size)
    return {job.path: result for job, result in zip(ordered, results, strict=True)}
