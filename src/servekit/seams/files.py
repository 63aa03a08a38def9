"""Reading and writing files: ``OSError`` and ``UnicodeDecodeError`` become the caller's error.

Every file servekit reads on a user's behalf is read here, so a missing file, a directory, a
refused permission or bytes that are not UTF-8 are worded once (:class:`ReadFailure`) and
each caller only picks its error class, its message and its hint.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from servekit.errors import Error

ErrorFactory = Callable[[str], Error]
"""Builds the caller's error from a message (the caller knows which class it owes)."""


@dataclass(frozen=True)
class ReadFailure:
    """Why ``path`` could not be read: ``reason`` in servekit's words (without the path),
    ``missing`` when it does not exist, and the foreign exception for callers that quote it."""

    path: Path
    reason: str
    missing: bool
    exc: OSError | UnicodeDecodeError

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"

    @classmethod
    def of(cls, path: Path, exc: OSError | UnicodeDecodeError) -> ReadFailure:
        if isinstance(exc, UnicodeDecodeError):
            return cls(path, f"not UTF-8 text (byte {exc.start})", False, exc)
        if isinstance(exc, FileNotFoundError):
            return cls(path, "no such file", True, exc)
        if isinstance(exc, IsADirectoryError):
            return cls(path, "is a directory, not a file", False, exc)
        return cls(path, f"cannot read ({exc.strerror or exc})", False, exc)


ReadFailed = Callable[[ReadFailure], Error]
"""Builds the caller's error from why a read failed."""


class reading:  # noqa: N801 - used as ``with reading(path, failed):``, like a function
    """A block that reads ``path``: an ``OSError`` or ``UnicodeDecodeError`` raised in it
    becomes ``failed(ReadFailure)``, raised from the original. For readers that stream
    (a file iterated line by line); :func:`read_bytes` and :func:`read_utf8` read whole."""

    def __init__(self, path: Path, failed: ReadFailed) -> None:
        self.path, self.failed = path, failed

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if isinstance(exc, OSError | UnicodeDecodeError):
            raise self.failed(ReadFailure.of(self.path, exc)) from exc


def read_bytes(path: Path, failed: ReadFailed) -> bytes:
    """The bytes of ``path``; a failure to read it becomes ``failed(ReadFailure)``."""
    with reading(path, failed):
        return path.read_bytes()


def read_utf8(path: Path, failed: ReadFailed) -> str:
    """The UTF-8 text of ``path``; a failure to read or decode it becomes ``failed(...)``."""
    with reading(path, failed):
        return path.read_text(encoding="utf-8")


def read_optional(path: Path, failed: ReadFailed) -> bytes | None:
    """The bytes of ``path``, or ``None`` when it does not exist (a state file not yet
    written); any other failure becomes ``failed(ReadFailure)``."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise failed(ReadFailure.of(path, exc)) from exc


def read_head(path: str, limit: int) -> bytes:
    """The first ``limit`` bytes of ``path``, ``b''`` when it is missing: two system calls
    rather than ``Path.read_text``'s buffered text stack, for a check made per request."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return b""
    try:
        return os.read(fd, limit)
    finally:
        os.close(fd)


def read_text(path: Path, error: ErrorFactory) -> str:
    """The UTF-8 text of ``path``; any failure becomes ``error("PATH: reason")``."""
    return read_utf8(path, lambda failure: error(str(failure)))


def write_text(path: Path, text: str, error: ErrorFactory) -> None:
    """Write ``text`` to ``path``; a missing parent or an OS refusal becomes ``error``."""
    try:
        path.write_text(text, encoding="utf-8")
    except FileNotFoundError as exc:
        raise error(f"{path}: its directory {path.parent} does not exist") from exc
    except OSError as exc:
        raise error(f"{path}: cannot write ({exc.strerror or exc})") from exc
