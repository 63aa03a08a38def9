"""Opening a file to hash it, and the checks around the hashing (shared by both readers).

A file is opened without following links (``O_NOFOLLOW``) and without blocking
(``O_NONBLOCK``: a FIFO would otherwise hang the open), must be a regular file of the
expected size, and must end the hashing at end of file with the same size, modification
time, status-change time, inode and device (a file replaced or rewritten in place,
even with its mtime set back, changes its ctime). Anything else is a :class:`~servekit.weights.models.FileProblem`.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from servekit.weights.models import FileProblem, ProblemKind, os_reason
from servekit.weights.tree import LocalFile

OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass(frozen=True)
class Hashed:
    """A file hashed from start to end without changing."""

    path: str
    size: int
    sha256: str


def changed(job: LocalFile, actual: str) -> FileProblem:
    return FileProblem(
        kind=ProblemKind.CHANGED,
        path=job.path,
        expected=f"{job.size} bytes, unchanged while hashed",
        actual=actual,
    )


def read_failed(job: LocalFile, exc: OSError) -> FileProblem:
    return FileProblem.unreadable(job.path, f"read failed: {os_reason(exc)}")


def identity(st: os.stat_result) -> tuple[int, int, int, int, int]:
    """What must not change while a file is hashed: size, mtime, ctime, inode, device."""
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def open_checked(job: LocalFile) -> tuple[int, os.stat_result] | FileProblem:
    """An open descriptor and its status, or why the file cannot be hashed."""
    try:
        fd = os.open(job.source, OPEN_FLAGS)
    except OSError as exc:
        return FileProblem.unreadable(job.path, os_reason(exc))
    before = os.fstat(fd)
    problem = None
    if not stat.S_ISREG(before.st_mode):
        problem = FileProblem.unreadable(job.path, "not a regular file")
    elif before.st_size != job.size:
        problem = changed(job, f"{before.st_size} bytes when opened")
    if problem is not None:
        os.close(fd)
        return problem
    return fd, before


def outcome(
    job: LocalFile, fd: int, before: os.stat_result, done: int, hexdigest: str
) -> Hashed | FileProblem:
    """The result once ``done`` bytes were hashed: the file must not have changed."""
    after = os.fstat(fd)
    if done != job.size or after.st_size != job.size:
        return changed(job, f"read {done} bytes; {after.st_size} bytes when hashing ended")
    if identity(after) != identity(before):
        return changed(job, "modified while it was being hashed (mtime, ctime, inode or device)")
    return Hashed(path=job.path, size=done, sha256=hexdigest)
