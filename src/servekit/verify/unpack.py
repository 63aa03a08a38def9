"""Write a verified kit to disk: only the bytes that were verified, with canonical modes.

``servekit kit unpack`` verifies first and then calls :func:`write_files`; nothing an
archive says about a member (type, mode, owner, link target) reaches the disk, because
the files written are the verified in-memory bytes, under their kit paths.

The target directory must be new or empty, not a symbolic link, owned by the user
unpacking, and not writable by group or others. Everything below it is created relative to open directory handles
(``mkdir``/``open`` with ``dir_fd``, ``O_NOFOLLOW``, ``O_EXCL``), never by path name: a
symlink planted inside the directory while the kit is written (``deploy -> /etc``) is
refused rather than followed, and an entry that appears there is never overwritten.
Directories get mode 0755 and files their canonical mode exactly, whatever the umask,
so an unpacked kit always passes ``verify kit DIR``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from servekit.errors import UsageError
from servekit.receipts.archive import member_mode
from servekit.receipts.manifest import is_kit_path

DIRECTORY_MODE = 0o755
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW


def _open_target(directory: Path) -> int:
    """Create ``directory`` (or take it as it is, empty) and return an open handle on it."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    try:
        directory.mkdir(DIRECTORY_MODE)
        created = True
    except FileExistsError:
        created = False
    if stat.S_ISLNK(os.lstat(directory).st_mode):
        raise UsageError(
            f"{directory} is a symbolic link",
            hint="unpack into a real directory: a link could point the kit anywhere",
        )
    fd = os.open(directory, _DIRECTORY)
    if created:
        os.fchmod(fd, DIRECTORY_MODE)  # exact, whatever the umask
    return fd


def _check_target(fd: int, directory: Path) -> None:
    if os.listdir(fd):
        raise UsageError(
            f"{directory} is not empty",
            hint="unpack into a new directory, so no old file can pass for part of the kit",
        )
    st = os.fstat(fd)
    if st.st_uid != os.geteuid():
        raise UsageError(
            f"{directory} belongs to another user (uid {st.st_uid})",
            hint="unpack into a directory you own: its owner could swap the kit's files later",
        )
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o022:
        raise UsageError(
            f"{directory} can be written by group or others (mode {mode:04o})",
            hint="unpack into a directory only you can write: anyone who can write there "
            "could change the kit after it is unpacked",
        )


def _target_directory(directory: Path) -> int:
    try:
        fd = _open_target(directory)
    except OSError as exc:
        raise UsageError(f"cannot use {directory}: {exc.strerror}") from exc
    try:
        _check_target(fd, directory)
    except BaseException:
        os.close(fd)
        raise
    return fd


class _Tree:
    """The directories created so far under the target, as open handles by kit path."""

    def __init__(self, root: int) -> None:
        self.handles = {"": root}

    def directory(self, path: str) -> int:
        """The handle of directory ``path``, creating it (and its parents) on first use."""
        if path not in self.handles:
            parent, _, name = path.rpartition("/")
            parent_fd = self.directory(parent)
            os.mkdir(name, DIRECTORY_MODE, dir_fd=parent_fd)  # FileExistsError: not ours
            fd = os.open(name, _DIRECTORY, dir_fd=parent_fd)
            self.handles[path] = fd
            os.fchmod(fd, DIRECTORY_MODE)
        return self.handles[path]

    def write(self, path: str, data: bytes) -> None:
        if not is_kit_path(path):  # verified kits hold only kit paths; never trust that blindly
            raise UsageError(f"refusing to write {path!r}: not a plain kit path")
        parent, _, name = path.rpartition("/")
        fd = os.open(name, _NEW_FILE, 0o600, dir_fd=self.directory(parent))
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            os.fchmod(fh.fileno(), member_mode(path))  # exact, whatever the umask

    def close(self) -> None:
        for path, fd in self.handles.items():
            if path:
                os.close(fd)


def write_tree(root: int, files: Mapping[str, bytes]) -> None:
    """Write ``files`` (kit path to bytes) below the open directory ``root``.

    Raises ``OSError`` when an entry is already there (a planted file or link), when a
    path component is a link, or on any I/O failure.
    """
    tree = _Tree(root)
    try:
        for path in sorted(files):
            tree.write(path, files[path])
    finally:
        tree.close()


def write_files(files: Mapping[str, bytes], directory: Path) -> int:
    """Write ``files`` (kit path to bytes) under ``directory``; returns how many."""
    root = _target_directory(directory)
    try:
        write_tree(root, files)
    except OSError as exc:
        raise UsageError(
            f"cannot write into {directory}: {exc.strerror}",
            hint="something else is writing there; unpack into a new directory only you use",
        ) from exc
    finally:
        os.close(root)
    return len(files)
