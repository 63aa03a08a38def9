"""The parallel hasher: right digests, largest first, and every failure caught."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import pytest

from servekit.weights.hashing import (
    MAP_MIN_BYTES,
    READ_BUFFER,
    Hashed,
    HashMethod,
    balanced_workers,
    default_workers,
    hash_files,
)
from servekit.weights.mapped import mapped_digest
from servekit.weights.models import FileProblem, ProblemKind
from servekit.weights.tree import LocalFile


def _job(path: Path, name: str | None = None) -> LocalFile:
    return LocalFile(path=name or path.name, size=path.stat().st_size, source=path)


def _write(path: Path, size: int, seed: int = 0) -> Path:
    block = hashlib.sha256(str(seed).encode()).digest()
    path.write_bytes((block * (size // 32 + 1))[:size])
    return path


class Recorder:
    """A progress tracker that remembers every amount it was given."""

    def __init__(self) -> None:
        self.amounts: list[float] = []

    def advance(self, amount: float) -> None:
        self.amounts.append(amount)


@pytest.mark.parametrize("method", [HashMethod.READ, HashMethod.MAP])
def test_digests_match_hashlib_across_many_chunks(tmp_path: Path, method: HashMethod) -> None:
    files = [_write(tmp_path / f"f{i}", size, i) for i, size in enumerate((0, 1, 70_000, 300_001))]
    results = hash_files([_job(f) for f in files], buffer_size=4096, workers=2, method=method)
    for f in files:
        result = results[f.name]
        assert isinstance(result, Hashed)
        assert result.sha256 == hashlib.sha256(f.read_bytes()).hexdigest()
        assert result.size == f.stat().st_size


def test_largest_files_go_first(tmp_path: Path) -> None:
    files = [_write(tmp_path / f"f{size}", size) for size in (10, 5000, 300, 70_000, 1)]
    recorder = Recorder()
    hash_files([_job(f) for f in files], workers=1, tracker=recorder, method=HashMethod.READ)
    assert recorder.amounts == [70_000, 5000, 300, 10, 1]
    assert READ_BUFFER > 70_000  # each file above was one read


GB = 10**9


@pytest.mark.parametrize(
    ("sizes", "cores", "workers"),
    [
        ([GB] * 8, 2, 2),  # 4 files each: even
        # 3 would give one core 3 files and another 2; 4, 5 and 8 share evenly in theory,
        # and the most keep pace best when the kernel cannot give each core as many
        ([GB] * 8, 3, 8),
        ([GB] * 8, 6, 8),
        ([GB] * 8, 16, 8),  # one worker per file at most
        ([GB] * 3, 2, 3),
        ([2 * GB] + [GB] * 3, 2, 3),  # 2 | 1+1 | 1: the lone 1 ends, then two cores for two
        ([4 * GB] + [GB] * 4, 2, 2),  # the large one alone, the rest on the other core
        ([GB] + [1000] * 5000, 2, 2),  # one big file among small ones: no worker can help
        ([10**6] * 100 + [10**5] * 7, 4, 4),  # every file small against a core's share
        ([], 4, 1),
        ([0, 0, 0], 2, 2),
        ([GB] * 2, 1, 1),
    ],
)
def test_workers_keep_every_core_busy_to_the_end(
    sizes: list[int], cores: int, workers: int
) -> None:
    assert balanced_workers(sizes, cores) == workers


def test_balanced_workers_are_capped_per_core_and_quick_on_many_files() -> None:
    assert balanced_workers([GB] * 9, 1) == 1  # one core: time-sharing gains nothing
    assert balanced_workers([GB] * 100 + [GB // 3], 2) <= 8
    sizes = [GB] * 9 + [1000] * 100_000  # the small files are poured, not placed one by one
    assert balanced_workers(sizes, 8) == 16  # 9 would share one core: 2 a core instead


class Together(Recorder):
    """Lets no file finish until ``parties`` files are being hashed at once."""

    def __init__(self, parties: int) -> None:
        super().__init__()
        self.barrier = threading.Barrier(parties, timeout=10)

    def advance(self, amount: float) -> None:
        self.barrier.wait()  # BrokenBarrierError when fewer workers run at once
        super().advance(amount)


def test_hash_files_runs_the_balanced_worker_count(tmp_path: Path) -> None:
    # one more equal file than cores: one worker per core would leave all but one
    # idle for the last file; every file is hashed at once instead
    cores = default_workers()
    files = [_write(tmp_path / f"f{i}", 1000, i) for i in range(cores + 1)]
    assert balanced_workers([1000] * (cores + 1), cores) == cores + 1 or cores == 1
    together = Together(balanced_workers([1000] * (cores + 1), cores))
    results = hash_files([_job(f) for f in files], tracker=together, method=HashMethod.READ)
    assert all(isinstance(r, Hashed) for r in results.values())


class Meddler(Recorder):
    """Changes the file being hashed after its first chunk, as another process might."""

    def __init__(self, path: Path, change: str) -> None:
        super().__init__()
        self.path, self.change = path, change

    def advance(self, amount: float) -> None:
        if not self.amounts:
            with self.path.open("r+b") as f:
                if self.change == "grow":
                    f.seek(0, os.SEEK_END)
                    f.write(b"more")
                elif self.change == "truncate":
                    f.truncate(10)
                else:  # rewrite a byte already hashed: same size, new mtime
                    f.write(b"X")
            if self.change == "rewrite-mtime-restored":  # only the ctime still shows it
                os.utime(self.path, ns=(1_000_000_000, 1_000_000_000))
        super().advance(amount)


@pytest.mark.parametrize("change", ["grow", "truncate", "rewrite", "rewrite-mtime-restored"])
def test_a_file_changing_while_hashed_is_caught(tmp_path: Path, change: str) -> None:
    path = _write(tmp_path / "shard", 50_000)
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))  # an old mtime, so a write shows
    meddler = Meddler(path, change)
    results = hash_files([_job(path)], buffer_size=4096, tracker=meddler, method=HashMethod.READ)
    problem = results["shard"]
    assert isinstance(problem, FileProblem)
    assert problem.kind is ProblemKind.CHANGED
    assert problem.expected == "50000 bytes, unchanged while hashed"


@pytest.mark.parametrize("method", [HashMethod.READ, HashMethod.MAP])
def test_a_size_differing_when_opened_is_caught(tmp_path: Path, method: HashMethod) -> None:
    path = _write(tmp_path / "f", 100)
    problem = hash_files([LocalFile(path="f", size=99, source=path)], method=method)["f"]
    assert isinstance(problem, FileProblem) and problem.kind is ProblemKind.CHANGED
    assert "100 bytes when opened" in problem.actual


@pytest.mark.parametrize("method", [HashMethod.READ, HashMethod.MAP])
def test_a_disk_read_error_is_reported_not_raised(method: HashMethod) -> None:
    # Reading /proc/self/mem at offset 0 fails with EIO: a real I/O error from the kernel.
    job = LocalFile(path="mem", size=0, source=Path("/proc/self/mem"))
    problem = hash_files([job], method=method)["mem"]
    assert isinstance(problem, FileProblem) and problem.kind is ProblemKind.UNREADABLE
    assert "errno 5" in problem.actual


@pytest.mark.parametrize("method", [HashMethod.READ, HashMethod.MAP])
def test_fifos_links_and_vanished_files_are_unreadable(tmp_path: Path, method: HashMethod) -> None:
    os.mkfifo(tmp_path / "fifo")  # opened without blocking, refused as not regular
    (tmp_path / "target").write_bytes(b"x")
    (tmp_path / "link").symlink_to("target")  # a file swapped for a link after the walk
    jobs = [
        LocalFile(path="fifo", size=0, source=tmp_path / "fifo"),
        LocalFile(path="link", size=1, source=tmp_path / "link"),
        LocalFile(path="gone", size=1, source=tmp_path / "gone"),
    ]
    results = hash_files(jobs, method=method)
    actual = {p: r.actual for p, r in results.items() if isinstance(r, FileProblem)}
    assert actual["fifo"] == "not a regular file"
    assert "errno 40" in actual["link"]  # ELOOP: O_NOFOLLOW
    assert "errno 2" in actual["gone"]


def test_the_mapped_digest_spans_windows_and_chunks(tmp_path: Path) -> None:
    path = _write(tmp_path / "f", 3 * 65536 + 123)
    fd = os.open(path, os.O_RDONLY)
    try:
        digest = mapped_digest(fd, path.stat().st_size, window=65536, chunk=4096)
    finally:
        os.close(fd)
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest()


def test_auto_maps_large_trees_only(tmp_path: Path) -> None:
    small = _write(tmp_path / "small", 1000)
    recorder = Recorder()
    hash_files([_job(small)], tracker=recorder)
    assert recorder.amounts == [1000]  # the reader: one read, reported at once
    big = _write(tmp_path / "big", MAP_MIN_BYTES)
    recorder = Recorder()
    result = hash_files([_job(big)], tracker=recorder)["big"]
    assert isinstance(result, Hashed) and sum(recorder.amounts) == MAP_MIN_BYTES


class Truncator(Recorder):
    """Truncates the file the first time a mapped worker reports progress."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def advance(self, amount: float) -> None:
        if amount and not any(self.amounts):
            os.truncate(self.path, 10)
        super().advance(amount)


def test_a_mapped_worker_killed_by_sigbus_hands_the_file_to_the_reader(tmp_path: Path) -> None:
    # Truncating a mapped file under a worker kills it with SIGBUS; the file is then
    # read again, which names the change instead of crashing or passing.
    for attempt in range(3):
        path = _write(tmp_path / f"shard{attempt}", 256 << 20)
        result = hash_files([_job(path)], method=HashMethod.MAP, tracker=Truncator(path))
        problem = result[path.name]
        assert isinstance(problem, FileProblem), "a file truncated while hashed must not pass"
        assert problem.kind is ProblemKind.CHANGED
        if problem.actual == "10 bytes when opened":  # the reader's verdict after the crash
            return
    pytest.fail("the worker always finished before the truncation; the crash path was not run")


def _children() -> set[int]:
    pid = os.getpid()
    tasks = Path(f"/proc/{pid}/task").iterdir()
    return {int(c) for t in tasks for c in (t / "children").read_text().split()}


def test_mapped_progress_totals_are_exact_and_no_worker_outlives_the_call(
    tmp_path: Path,
) -> None:
    # each worker counts its own bytes, without a lock; the sum must still be every byte
    sizes = [0, 1, 5 << 20, (9 << 20) + 7, 3 << 20, 4 << 20]
    files = [_write(tmp_path / f"f{i}", size, i) for i, size in enumerate(sizes)]
    before = _children()
    recorder = Recorder()
    results = hash_files(
        [_job(f) for f in files], workers=3, tracker=recorder, method=HashMethod.MAP
    )
    assert all(amount >= 0 for amount in recorder.amounts)
    assert sum(recorder.amounts) == sum(sizes)
    for f in files:
        result = results[f.name]
        assert isinstance(result, Hashed)
        assert result.sha256 == hashlib.sha256(f.read_bytes()).hexdigest()
    assert _children() == before  # every worker was waited for


def test_mapped_workers_are_stopped_when_the_caller_is_interrupted(tmp_path: Path) -> None:
    path = _write(tmp_path / "shard", 256 << 20)
    before = _children()

    class Interrupt(Recorder):
        def advance(self, amount: float) -> None:
            raise KeyboardInterrupt  # Ctrl-C while the workers hash

    with pytest.raises(KeyboardInterrupt):
        hash_files([_job(path)] * 2, workers=2, tracker=Interrupt(), method=HashMethod.MAP)
    assert _children() == before


def test_more_files_than_the_queue_pipe_holds_are_all_mapped(tmp_path: Path) -> None:
    # 20 000 indices of 4 bytes do not fit in a 64 KiB pipe: the rest is written as the
    # workers read; every file is hashed once, by one worker
    path = _write(tmp_path / "f", 3)
    jobs = [LocalFile(path=f"f{i}", size=3, source=path) for i in range(20_000)]
    recorder = Recorder()
    results = hash_files(jobs, workers=3, tracker=recorder, method=HashMethod.MAP)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert len(results) == 20_000
    assert all(isinstance(r, Hashed) and r.sha256 == digest for r in results.values())
    assert sum(recorder.amounts) == 3 * 20_000
