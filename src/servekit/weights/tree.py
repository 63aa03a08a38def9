"""Walk a local model tree safely: what is there, how large, and where its bytes live.

A tree is a plain directory or a Hugging Face cache snapshot
(``models--org--name/snapshots/<commit>/``, whose files are symlinks into
``../../blobs/``). Symlinks to regular files are followed when their target stays
inside the tree, or inside the snapshot's own ``blobs/`` directory. A symlink loop,
a dangling link, a link that leaves those places, a link to a directory, or anything
that is not a regular file is reported as a problem, never followed or skipped.

``.git/`` and ``.cache/huggingface/`` at the top of the tree are not part of it
(the second holds the metadata ``huggingface_hub`` writes into a ``local_dir``).
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from servekit.errors import UsageError
from servekit.weights.digest import path_problem, sort_key
from servekit.weights.models import FileProblem, ProblemKind, os_reason

IGNORED_AT_ROOT = frozenset({".git", ".cache/huggingface"})


@dataclass(frozen=True)
class LocalFile:
    """A regular file of the tree: its tree path, size, and the path of its bytes."""

    path: str
    size: int
    source: Path


@dataclass(frozen=True)
class TreeScan:
    """What a walk found: the files, and the entries that cannot be verified."""

    root: Path
    files: tuple[LocalFile, ...]
    problems: tuple[FileProblem, ...]

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)


def link_boundaries(root: Path) -> tuple[Path, ...]:
    """Where a symlink in ``root`` may point: the tree, plus ``blobs/`` of a cache snapshot."""
    snapshots = root.parent
    blobs = snapshots.parent / "blobs"
    if snapshots.name == "snapshots" and blobs.is_dir():
        return (root, blobs.resolve())
    return (root,)


def _type_name(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _unsafe(path: str, expected: str, actual: str) -> FileProblem:
    return FileProblem(kind=ProblemKind.UNSAFE, path=path, expected=expected, actual=actual)


class _Walk:
    """One walk of a tree; collects files and problems."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.boundaries = link_boundaries(root)
        self.files: list[LocalFile] = []
        self.problems: list[FileProblem] = []

    def directory(self, path: Path, prefix: str) -> None:
        try:
            with os.scandir(path) as entries:
                listed = list(entries)
        except OSError as exc:
            self.problems.append(FileProblem.unreadable(prefix.rstrip("/") or ".", os_reason(exc)))
            return
        for entry in listed:
            relative = prefix + entry.name
            if relative in IGNORED_AT_ROOT:
                continue
            self.entry(entry, relative)

    def entry(self, entry: os.DirEntry[str], relative: str) -> None:
        problem = path_problem(relative)
        if problem is not None:
            self.problems.append(
                FileProblem.unreadable(repr(relative), f"a name that cannot be pinned: {problem}")
            )
            return
        try:
            if entry.is_symlink():
                self.link(Path(entry.path), relative)
                return
            mode = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode):
                self.directory(Path(entry.path), relative + "/")
            elif stat.S_ISREG(mode):
                size = entry.stat(follow_symlinks=False).st_size
                self.files.append(LocalFile(relative, size, Path(entry.path)))
            else:
                self.problems.append(FileProblem.unreadable(relative, _type_name(mode)))
        except OSError as exc:
            self.problems.append(FileProblem.unreadable(relative, os_reason(exc)))

    def link(self, path: Path, relative: str) -> None:
        where = " or ".join(str(b) for b in self.boundaries)
        try:
            target = path.resolve(strict=True)
        except (RuntimeError, OSError) as exc:  # 3.11 raises RuntimeError on a loop
            if isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == errno.ELOOP:
                self.problems.append(_unsafe(relative, f"a link inside {where}", "a symlink loop"))
            else:
                self.problems.append(
                    FileProblem.unreadable(relative, f"a dangling symlink to {path.readlink()}")
                )
            return
        if not any(target.is_relative_to(b) for b in self.boundaries):
            self.problems.append(_unsafe(relative, f"a link inside {where}", f"a link to {target}"))
            return
        try:
            info = target.stat()
        except OSError as exc:
            self.problems.append(FileProblem.unreadable(relative, os_reason(exc)))
            return
        if not stat.S_ISREG(info.st_mode):
            kind = _type_name(info.st_mode)
            self.problems.append(FileProblem.unreadable(relative, f"a link to {kind} ({target})"))
            return
        self.files.append(LocalFile(relative, info.st_size, target))


def scan_tree(directory: Path) -> TreeScan:
    """Walk ``directory`` (a plain tree or a cache snapshot) without following unsafe links."""
    if not directory.is_dir():
        raise UsageError(
            f"{directory}: not a directory",
            hint="pass the model directory, or a snapshot directory of the Hugging Face cache",
        )
    walk = _Walk(directory.resolve())
    walk.directory(walk.root, "")
    files = tuple(sorted(walk.files, key=lambda f: sort_key(f.path)))
    problems = tuple(sorted(walk.problems, key=lambda p: sort_key(p.path)))
    return TreeScan(root=walk.root, files=files, problems=problems)
