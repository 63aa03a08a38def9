"""Read a kit safely into memory, from a ``.tar.gz`` archive or a directory.

Nothing is extracted to disk. An archive is read by :mod:`servekit.verify.tarstream`:
one bounded gzip member, strict raw headers, ``MANIFEST`` first, each later member
admitted by name and size against ``MANIFEST`` before its data is read, and the whole
stream equal to the canonical rendering of what was read. A directory (an unpacked kit)
is walked without following links: regular files with their canonical mode (0644, 0755
for ``deploy/launch.sh``) and directories nobody else can write (the kit's own directory
included) that each hold some kit file, nothing else; a file is opened without following
a link or blocking (a FIFO swapped in after the listing is refused, not waited on), and
one that changes while it is read (size, mtime, ctime, inode or device) is refused.

Any violation raises the specific :class:`~servekit.errors.UnsafeArchiveError`
subclass naming the member; an I/O failure raises :class:`~servekit.errors.ReadError`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from servekit.errors import (
    ArchiveLimitError,
    ExtraFileError,
    FileChangedError,
    MemberMetadataError,
    ReadError,
    ReceiptLimitError,
    UnsafeArchiveError,
)
from servekit.package.files import MANIFEST_FILE, RECEIPT_FILE
from servekit.receipts.archive import NAME_BYTES, member_mode
from servekit.receipts.manifest import ManifestEntry, is_kit_path, parse_manifest
from servekit.verify.tarstream import HINT, StreamLimits, scan_archive

KiB = 1024
MiB = 1024 * KiB


@dataclass(frozen=True)
class Limits:
    """Bounds on what a kit may hold, sized to real kits (the largest example is under 3 MB).

    ``docs/kit.md`` lists them; ``bench/verify_limits.py`` times each hostile input.
    """

    max_archive_bytes: int = 64 * MiB
    max_member_bytes: int = 32 * MiB
    max_total_bytes: int = 64 * MiB
    max_members: int = 2_000
    max_manifest_bytes: int = 512 * KiB
    max_receipt_bytes: int = 1 * MiB

    @property
    def stream(self) -> StreamLimits:
        """The decompressed stream: every member, its header and padding, the end blocks."""
        overhead = (self.max_members + 2) * 1024 + 10240
        tar_bytes = self.max_total_bytes + self.max_manifest_bytes + self.max_receipt_bytes
        return StreamLimits(self.max_archive_bytes, tar_bytes + overhead)


@dataclass(frozen=True)
class KitContents:
    """Every file of a kit, by kit path, read into memory.

    ``mtime`` is the archive members' common mtime (``None`` for a directory): the
    verifier checks it against the package's date once the package is known.
    """

    source: str
    files: Mapping[str, bytes] = field(default_factory=lambda: MappingProxyType({}))
    mtime: int | None = None

    def get(self, path: str) -> bytes | None:
        return self.files.get(path)


def _unsafe(message: str, member: str, expected: str, actual: str) -> UnsafeArchiveError:
    return UnsafeArchiveError(message, file=member, expected=expected, actual=actual, hint=HINT)


def _limit(message: str, member: str, expected: str, actual: str) -> ArchiveLimitError:
    return ArchiveLimitError(message, file=member, expected=expected, actual=actual, hint=HINT)


def kit_member_name(raw: str) -> str:
    """The kit path of a directory entry's relative name, or refuse it."""
    if raw.startswith("/"):
        raise _unsafe("an archive member has an absolute path", raw, "a relative path", raw)
    if ".." in raw.split("/"):
        raise _unsafe("an archive member leaves the kit", raw, "no '..' part", raw)
    if not is_kit_path(raw):
        raise _unsafe(
            "an archive member name is not a plain kit path", raw, "[A-Za-z0-9._+-] parts", raw
        )
    if len(raw) > NAME_BYTES:  # no kit holds one; it also bounds how deep a walk recurses
        raise _unsafe(
            "a kit path is longer than any kit holds",
            raw[:NAME_BYTES] + "...",
            f"at most {NAME_BYTES} bytes",
            f"{len(raw)} bytes",
        )
    return raw


class _Budget:
    """Counts members and bytes against the limits."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.members = 0
        self.total = 0

    def member(self, name: str) -> None:
        self.members += 1
        if self.members > self.limits.max_members:
            most = self.limits.max_members
            raise _limit(
                "the kit has too many members", name, f"at most {most}", f"more than {most}"
            )

    def size(self, name: str, size: int) -> None:
        most = self.limits.max_member_bytes
        if name == RECEIPT_FILE and size > self.limits.max_receipt_bytes:
            raise ReceiptLimitError(
                "the receipt is too large",
                file=name,
                expected=f"<= {self.limits.max_receipt_bytes} bytes",
                actual=f"{size} bytes",
                hint=HINT,
            )
        if name == MANIFEST_FILE:
            most = self.limits.max_manifest_bytes
        if size > most:
            raise _limit("a kit member is too large", name, f"<= {most} bytes", f"{size} bytes")
        self.total += size
        if self.total > self.limits.max_total_bytes:
            most = self.limits.max_total_bytes
            raise _limit(
                "the kit is too large in total",
                name,
                f"<= {most} bytes",
                f"{self.total} bytes so far",
            )


# --- tar.gz ----------------------------------------------------------------------------


class _Admission:
    """The archive's :class:`~servekit.verify.tarstream.Gate`: limits, then ``MANIFEST``
    (always the first member) admits every later member by name and size."""

    def __init__(self, limits: Limits) -> None:
        self.budget = _Budget(limits)
        self.listed: dict[str, ManifestEntry] | None = None

    def admit(self, name: str, size: int) -> None:
        self.budget.member(name)
        self.budget.size(name, size)
        if self.listed is not None and name != RECEIPT_FILE:
            _check_listed(self.listed.get(name), name, size)

    def accept(self, name: str, data: bytes) -> None:
        if name != MANIFEST_FILE:
            return
        entries = parse_manifest(data)
        limits, listed = self.budget.limits, sum(e.size for e in entries)
        if len(entries) + 1 > limits.max_members:
            raise _limit(
                "MANIFEST lists too many files",
                name,
                f"at most {limits.max_members}",
                str(len(entries)),
            )
        if listed > limits.max_total_bytes:
            raise _limit(
                "MANIFEST lists more bytes than a kit may hold",
                name,
                f"<= {limits.max_total_bytes} bytes",
                f"{listed} bytes",
            )
        self.listed = {e.path: e for e in entries}


def _check_listed(entry: ManifestEntry | None, name: str, size: int) -> None:
    if entry is None:
        raise ExtraFileError(
            "the kit holds a file that MANIFEST does not list",
            file=name,
            expected="only the files listed in MANIFEST",
            actual=f"an extra file of {size} bytes",
            hint="someone added it after signing; do not use it",
        )
    if entry.size != size:
        raise FileChangedError(
            "a file's size differs from MANIFEST",
            file=name,
            expected=f"{entry.size} bytes",
            actual=f"{size} bytes",
            hint=HINT,
        )


def _read_archive(path: Path, limits: Limits) -> KitContents:
    try:
        with path.open("rb") as fh:
            scanned = scan_archive(fh, limits.stream, str(path), _Admission(limits))
    except OSError as exc:
        raise ReadError("the kit cannot be read", file=str(path), actual=str(exc)) from exc
    files = {m.name: m.data for m in scanned.members}
    return KitContents(str(path), MappingProxyType(files), scanned.mtime)


# --- directory --------------------------------------------------------------------------


def _identity(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def _check_mode(name: str, st: os.stat_result) -> None:
    if st.st_nlink != 1:
        raise MemberMetadataError(
            "an unpacked kit file has other hard links",
            file=name,
            expected="1 link",
            actual=f"{st.st_nlink} links",
            hint="another path could change it after it is verified; unpack the kit again "
            "with `servekit kit unpack`",
        )
    mode, expected = stat.S_IMODE(st.st_mode), member_mode(name)
    if mode != expected:
        raise MemberMetadataError(
            "an unpacked kit file does not have its canonical mode",
            file=name,
            expected=f"{expected:04o}",
            actual=f"{mode:04o}",
            hint="unpack kits with `servekit kit unpack`, which writes the canonical modes",
        )


_OPEN_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
"""No link followed; a FIFO or device swapped in after the listing must not block the open."""


def _not_regular(name: str, st: os.stat_result) -> UnsafeArchiveError:
    kind = "a symlink" if stat.S_ISLNK(st.st_mode) else "a device, FIFO or socket"
    return _unsafe("a kit entry is not a regular file", name, "a regular file", kind)


def _read_regular(path: Path, name: str, budget: _Budget) -> bytes:
    try:
        fd = os.open(path, _OPEN_FILE)
        with os.fdopen(fd, "rb") as fh:
            before = os.fstat(fh.fileno())
            if not stat.S_ISREG(before.st_mode):  # swapped since it was listed
                raise _not_regular(name, before)
            _check_mode(name, before)
            budget.size(name, before.st_size)
            data = fh.read(before.st_size + 1)
            after = os.fstat(fh.fileno())
    except OSError as exc:
        raise ReadError("a kit file cannot be read", file=name, actual=exc.strerror) from exc
    if _identity(before) != _identity(after) or len(data) != before.st_size:
        raise ReadError(
            "a kit file changed while it was read",
            file=name,
            expected=f"{before.st_size} bytes, unchanged",
            actual=f"{len(data)} bytes read; size, times, inode or device changed",
            hint="verify again once nothing is writing to the kit directory",
        )
    return data


def _check_directory(name: str, st: os.stat_result) -> None:
    if stat.S_IMODE(st.st_mode) & 0o022:
        raise MemberMetadataError(
            "an unpacked kit directory can be written by others",
            file=name,
            expected="not group- or world-writable",
            actual=f"{stat.S_IMODE(st.st_mode):04o}",
            hint="anyone who can write there can change the kit after it is verified",
        )


def _empty_directory(name: str) -> ExtraFileError:
    return ExtraFileError(
        "the unpacked kit holds a directory with no kit file in it",
        file=name,
        expected="only the directories of files MANIFEST lists",
        actual="an empty directory",
        hint="a kit never holds an empty directory; someone added it after unpacking",
    )


def _dir_entries(root: Path, directory: Path, budget: _Budget) -> Iterator[tuple[str, bytes]]:
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as exc:
        raise ReadError(
            "a kit directory cannot be listed", file=str(directory), actual=exc.strerror
        ) from exc
    if not entries and directory != root:
        raise _empty_directory(directory.relative_to(root).as_posix())
    for entry in entries:
        name = kit_member_name(Path(entry.path).relative_to(root).as_posix())
        budget.member(name)
        st = entry.stat(follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            _check_directory(name, st)
            yield from _dir_entries(root, Path(entry.path), budget)
        elif stat.S_ISREG(st.st_mode):
            yield name, _read_regular(Path(entry.path), name, budget)
        else:
            raise _not_regular(name, st)


def _read_directory(root: Path, limits: Limits) -> KitContents:
    _check_directory(str(root), root.stat())
    files: dict[str, bytes] = {}
    for name, data in _dir_entries(root, root, _Budget(limits)):
        files[name] = data
    return KitContents(str(root), MappingProxyType(files))


def read_kit(path: Path | str, limits: Limits | None = None) -> KitContents:
    """Read a kit (a ``.tar.gz`` file or a directory) safely into memory."""
    kit = Path(path)
    limits = limits or Limits()
    if kit.is_dir():
        return _read_directory(kit, limits)
    if kit.is_file():
        return _read_archive(kit, limits)
    raise ReadError(
        "the kit does not exist",
        file=str(kit),
        hint="pass KIT.tar.gz or an unpacked kit directory",
    )
