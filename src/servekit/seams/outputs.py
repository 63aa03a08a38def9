"""The one overwrite rule for what a command writes: a directory or a single file."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from servekit.errors import UsageError


@contextlib.contextmanager
def output_dir(
    path: Path, *, force: bool | None, option: str = "--out", mode: int = 0o777
) -> Iterator[Path]:
    """The one overwrite rule for a command that writes a directory.

    Refuses a path that is a file, a directory whose parent does not exist (servekit
    creates no parent the user did not ask for), and a non-empty directory without
    ``--force`` (``force=None``: the command has no ``--force``, and its hint says none). Creates ``path`` when absent and removes it again, if still empty, when
    the command fails, so a failed command leaves no empty output directory behind.
    """
    if path.exists() and not path.is_dir():
        raise UsageError(f"{option} {path} is a file, not a directory", hint="name a directory")
    if not path.exists() and not path.parent.is_dir():
        raise UsageError(
            f"{option} {path}: its parent {path.parent} does not exist",
            hint=f"create {path.parent} first (servekit creates no parent directories)",
        )
    if path.is_dir() and any(path.iterdir()) and not force:
        overwrite = ", or pass --force to overwrite what is there" if force is False else ""
        raise UsageError(
            f"{option} {path} is not empty", hint=f"choose an empty or new directory{overwrite}"
        )
    created = not path.exists()
    try:
        path.mkdir(mode=mode, exist_ok=True)  # ``mode``, less the umask, when created
    except OSError as exc:
        raise UsageError(f"{option} {path}: cannot create ({exc.strerror or exc})") from exc
    try:
        yield path
    except BaseException:
        if created and path.is_dir() and not any(path.iterdir()):
            path.rmdir()
        raise


def output_file(path: Path, *, force: bool, option: str = "--out") -> Path:
    """The same rule for a single file: no overwrite without ``--force``, no new parents."""
    if path.is_dir():
        raise UsageError(f"{option} {path} is a directory, not a file", hint="name a file")
    if not path.parent.is_dir():
        raise UsageError(
            f"{option} {path}: its directory {path.parent} does not exist",
            hint=f"create {path.parent} first (servekit creates no parent directories)",
        )
    if path.exists() and not path.is_file():
        raise UsageError(f"{option} {path} is not a regular file", hint="name a new file")
    if path.exists() and not force:
        raise UsageError(f"{option} {path} exists", hint="pass --force to overwrite it")
    return path
