"""Write a verified kit to disk: only the bytes that were verified, with canonical modes.

``servekit kit unpack`` verifies first and then calls :func:`write_files`; nothing an
archive says about a member (type, mode, owner, link target) reaches the disk, because
the files written are the verified in-memory bytes, under their kit paths, created
exclusively (``O_EXCL | O_NOFOLLOW``) inside a directory that must be new or empty.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from servekit.errors import UsageError
from servekit.receipts.archive import member_mode
from servekit.receipts.manifest import is_kit_path


def _target_directory(directory: Path) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o755)
        if any(directory.iterdir()):
            raise UsageError(
                f"{directory} is not empty",
                hint="unpack into a new directory, so no old file can pass for part of the kit",
            )
    except OSError as exc:
        raise UsageError(f"cannot use {directory}: {exc.strerror}") from exc


def _write_one(root: Path, path: str, data: bytes) -> None:
    if not is_kit_path(path):  # verified kits hold only kit paths; never trust that blindly
        raise UsageError(f"refusing to write {path!r}: not a plain kit path")
    target = root.joinpath(*path.split("/"))
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(target, flags, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        os.fchmod(fh.fileno(), member_mode(path))  # exact, whatever the umask


def write_files(files: Mapping[str, bytes], directory: Path) -> int:
    """Write ``files`` (kit path to bytes) under ``directory``; returns how many."""
    _target_directory(directory)
    try:
        for path in sorted(files):
            _write_one(directory, path, files[path])
    except OSError as exc:
        raise UsageError(f"cannot write into {directory}: {exc.strerror}") from exc
    return len(files)
