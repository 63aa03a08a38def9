"""Read a kit safely into memory, from a ``.tar.gz`` archive or a directory.

Nothing is extracted to disk. Each member is checked before a byte of it is read:

* its name is a plain relative path (no leading ``/``, no ``..``, no empty or ``.`` part,
  only ``[A-Za-z0-9._+-]`` characters), and appears once;
* it is a regular file (directories are skipped): symlinks, hard links, devices and
  FIFOs are refused, in an archive and in a directory alike (links are never followed);
* no member exceeds ``Limits.max_member_bytes``, all together stay under
  ``Limits.max_total_bytes``, and there are at most ``Limits.max_members`` of them.

Any violation raises :class:`~servekit.errors.UnsafeArchiveError` naming the member;
an I/O failure raises :class:`~servekit.errors.ReadError`. :func:`read_kit` is public:
``servekit verify weights --kit`` uses it to read ``model/pin.json``.
"""

from __future__ import annotations

import os
import stat
import tarfile
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from servekit.errors import ReadError, UnsafeArchiveError
from servekit.receipts.manifest import is_kit_path

MiB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """Bounds on what a kit may hold; kits are small (the K3 kit is under 3 MB)."""

    max_member_bytes: int = 256 * MiB
    max_total_bytes: int = 1024 * MiB
    max_members: int = 10_000


@dataclass(frozen=True)
class KitContents:
    """Every file of a kit, by kit path, read into memory."""

    source: str
    files: Mapping[str, bytes] = field(default_factory=lambda: MappingProxyType({}))

    def get(self, path: str) -> bytes | None:
        return self.files.get(path)


def _unsafe(message: str, member: str, expected: str, actual: str) -> UnsafeArchiveError:
    return UnsafeArchiveError(
        message,
        file=member,
        expected=expected,
        actual=actual,
        hint="do not unpack or deploy this kit; obtain it again from the publisher",
    )


def kit_member_name(raw: str) -> str:
    """The kit path of a member name (a leading ``./`` is dropped), or refuse it."""
    if raw.startswith("/"):
        raise _unsafe("an archive member has an absolute path", raw, "a relative path", raw)
    name = raw.rstrip("/")
    while name.startswith("./"):
        name = name[2:]
    if name in ("", "."):
        return ""  # the kit's own top directory, as `tar -C KIT .` writes it
    if ".." in name.split("/"):
        raise _unsafe("an archive member leaves the kit", raw, "no '..' part", raw)
    if not is_kit_path(name):
        raise _unsafe(
            "an archive member name is not a plain kit path", raw, "[A-Za-z0-9._+-] parts", raw
        )
    return name


class _Budget:
    """Counts members and bytes against the limits."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.members = 0
        self.total = 0

    def member(self, name: str) -> None:
        self.members += 1
        if self.members > self.limits.max_members:
            raise _unsafe(
                "the kit has too many members",
                name,
                f"at most {self.limits.max_members}",
                f"more than {self.limits.max_members}",
            )

    def size(self, name: str, size: int) -> None:
        if size > self.limits.max_member_bytes:
            raise _unsafe(
                "a kit member is too large",
                name,
                f"<= {self.limits.max_member_bytes} bytes",
                f"{size} bytes",
            )
        self.total += size
        if self.total > self.limits.max_total_bytes:
            raise _unsafe(
                "the kit is too large in total",
                name,
                f"<= {self.limits.max_total_bytes} bytes",
                f"{self.total} bytes so far",
            )


def _add(files: dict[str, bytes], name: str, data: bytes) -> None:
    if name in files:
        raise _unsafe("the kit holds the same name twice", name, "each name once", "a duplicate")
    files[name] = data


# --- tar.gz ----------------------------------------------------------------------------


def _member_kind(member: tarfile.TarInfo) -> str:
    if member.issym() or member.islnk():
        return f"a link to {member.linkname!r}"
    if member.ischr() or member.isblk():
        return "a device"
    if member.isfifo():
        return "a FIFO"
    return f"an unsupported member (type {member.type!r})"


def _read_member(tar: tarfile.TarFile, member: tarfile.TarInfo, name: str) -> bytes:
    handle = tar.extractfile(member)
    if handle is None:
        raise _unsafe("an archive member cannot be read", name, "a regular file", "no data")
    data = handle.read()
    if len(data) != member.size:
        raise _unsafe(
            "an archive member is truncated", name, f"{member.size} bytes", f"{len(data)} bytes"
        )
    return data


def _tar_members(tar: tarfile.TarFile, budget: _Budget) -> Iterator[tuple[str, bytes]]:
    while (member := tar.next()) is not None:
        name = kit_member_name(member.name)
        budget.member(member.name)
        if member.isdir():
            continue
        if not name:
            raise _unsafe("an archive member has no name", member.name, "a file name", "none")
        if not member.isreg():
            raise _unsafe(
                "an archive member is not a regular file",
                name,
                "a regular file",
                _member_kind(member),
            )
        budget.size(name, member.size)
        yield name, _read_member(tar, member, name)


def _read_archive(path: Path, limits: Limits) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    try:
        with tarfile.open(path, mode="r:gz") as tar:
            for name, data in _tar_members(tar, _Budget(limits)):
                _add(files, name, data)
    except (tarfile.TarError, EOFError, zlib.error) as exc:
        raise _unsafe(
            "the kit is not a readable .tar.gz archive",
            str(path),
            "a gzip-compressed tar archive",
            str(exc),
        ) from exc
    except OSError as exc:
        raise ReadError("the kit cannot be read", file=str(path), actual=str(exc)) from exc
    return files


# --- directory --------------------------------------------------------------------------


def _read_regular(path: Path, name: str, budget: _Budget) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as fh:
            budget.size(name, os.fstat(fh.fileno()).st_size)
            return fh.read()
    except OSError as exc:
        raise ReadError("a kit file cannot be read", file=name, actual=exc.strerror) from exc


def _dir_entries(root: Path, directory: Path, budget: _Budget) -> Iterator[tuple[str, bytes]]:
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as exc:
        raise ReadError(
            "a kit directory cannot be listed", file=str(directory), actual=exc.strerror
        ) from exc
    for entry in entries:
        name = kit_member_name(Path(entry.path).relative_to(root).as_posix())
        budget.member(name)
        mode = entry.stat(follow_symlinks=False).st_mode
        if stat.S_ISDIR(mode):
            yield from _dir_entries(root, Path(entry.path), budget)
        elif stat.S_ISREG(mode):
            yield name, _read_regular(Path(entry.path), name, budget)
        else:
            kind = "a symlink" if stat.S_ISLNK(mode) else "a device, FIFO or socket"
            raise _unsafe("a kit entry is not a regular file", name, "a regular file", kind)


def _read_directory(root: Path, limits: Limits) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for name, data in _dir_entries(root, root, _Budget(limits)):
        _add(files, name, data)
    return files


def read_kit(path: Path | str, limits: Limits | None = None) -> KitContents:
    """Read a kit (a ``.tar.gz`` file or a directory) safely into memory."""
    kit = Path(path)
    limits = limits or Limits()
    if kit.is_dir():
        files = _read_directory(kit, limits)
    elif kit.is_file():
        files = _read_archive(kit, limits)
    else:
        raise ReadError(
            "the kit does not exist",
            file=str(kit),
            hint="pass KIT.tar.gz or an unpacked kit directory",
        )
    return KitContents(source=str(kit), files=MappingProxyType(files))
