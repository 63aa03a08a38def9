"""Where a package's files are read from: its directory, or a verified kit's bytes.

The loader, the claim rules and the evidence loader read every file through a
:class:`FileSource`, so ``verify kit`` re-runs the rules on the very bytes it verified,
in memory, and ``package check`` on a directory reads the files where they lie. Paths
are the relative paths ``package.yaml`` names (plain, checked by the models).
"""

from __future__ import annotations

import errno
import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Protocol


class FileSource(Protocol):
    """A package's files by the relative paths ``package.yaml`` names."""

    def where(self, relative: str) -> Path:
        """What a message calls the file: its path on disk, or its path inside the kit."""
        ...

    def inside(self, relative: str) -> PurePosixPath | None:
        """The file's path inside the source, links resolved; None when it leads outside."""
        ...

    def is_file(self, relative: str) -> bool:
        """Whether a regular file is there."""
        ...

    def size(self, relative: str) -> int:
        """Its size in bytes (raises ``OSError`` as reading it would)."""
        ...

    def read_bytes(self, relative: str) -> bytes:
        """Its bytes; ``FileNotFoundError`` (an ``OSError``) when it is not there."""
        ...


@dataclass(frozen=True)
class DirectorySource:
    """A package directory on disk: every read opens the file at its path."""

    root: Path

    def where(self, relative: str) -> Path:
        return self.root / relative

    def inside(self, relative: str) -> PurePosixPath | None:
        root = self.root.resolve()
        target = (self.root / relative).resolve()
        if not target.is_relative_to(root):
            return None
        return PurePosixPath(target.relative_to(root).as_posix())

    def is_file(self, relative: str) -> bool:
        return self.where(relative).is_file()

    def size(self, relative: str) -> int:
        return self.where(relative).stat().st_size

    def read_bytes(self, relative: str) -> bytes:
        return self.where(relative).read_bytes()


@dataclass(frozen=True)
class MemorySource:
    """Files held in memory (a verified kit's), by relative path; nothing touches the disk.

    ``names`` maps a relative path to what messages call the file (its path inside the
    kit); a file without one is called by its relative path.
    """

    files: Mapping[str, bytes]
    names: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:  # a copy the caller cannot change under the reader
        object.__setattr__(self, "files", MappingProxyType(dict(self.files)))
        object.__setattr__(self, "names", MappingProxyType(dict(self.names)))

    def where(self, relative: str) -> Path:
        return Path(self.names.get(relative, relative))

    def inside(self, relative: str) -> PurePosixPath | None:
        normal = posixpath.normpath(relative)
        if normal.startswith(("/", "../")) or normal == "..":
            return None
        return PurePosixPath(normal)

    def is_file(self, relative: str) -> bool:
        return self._key(relative) in self.files

    def size(self, relative: str) -> int:
        return len(self.read_bytes(relative))

    def read_bytes(self, relative: str) -> bytes:
        data = self.files.get(self._key(relative))
        if data is None:
            missing = errno.ENOENT
            raise FileNotFoundError(missing, os.strerror(missing), str(self.where(relative)))
        return data

    def _key(self, relative: str) -> str:
        inside = self.inside(relative)
        return "" if inside is None else str(inside)
