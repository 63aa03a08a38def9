"""The canonical kit archive: the one tar rendering of a kit's files.

Both sides use it: the builder writes it (gzip-compressed) and the verifier re-renders
it from the members it read and compares the decompressed stream with it byte for byte,
so an archive that any tar reader could read differently is refused.

Entries are regular files only, sorted by path, plain ustar headers written field by
field here (no extended header is ever needed: names are at most 100 bytes of
``[A-Za-z0-9._+-/]``), mtime 00:00 UTC of the package's publication date, uid/gid 0,
empty user and group names, mode 0644 (0755 for the kit's executables), and the
end-of-archive zero blocks padded to a 10240-byte record: the bytes Python's ``tarfile``
writes in POSIX format, owned here so no library upgrade can change them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from servekit.package.files import EXECUTABLES
from servekit.package.models import Package

NAME_BYTES = 100
"""A ustar name field; longer kit paths would need an extended header, which kits never hold."""
BLOCK = 512
RECORD = 20 * BLOCK
REGULAR = b"0"
USTAR = b"ustar\x0000"


@dataclass(frozen=True)
class KitFile:
    """One file of a kit."""

    path: str
    data: bytes
    executable: bool = False


def kit_file(path: str, data: bytes) -> KitFile:
    """A kit file with its canonical executable bit (only the kit's own scripts are 0755)."""
    return KitFile(path, data, path in EXECUTABLES)


def member_mode(path: str) -> int:
    """The canonical mode of a kit path."""
    return 0o755 if path in EXECUTABLES else 0o644


def date_mtime(day: dt.date | None) -> int:
    """00:00 UTC of ``day`` as a Unix time, or 0."""
    if day is None:
        return 0
    return int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp())


def kit_mtime(package: Package) -> int:
    """Every member's mtime: 00:00 UTC of the publication (or proof) date, else the epoch."""
    return date_mtime(package.published or package.proof_verified)


def _header(file: KitFile, mtime: int) -> bytes:
    """The member's 512-byte ustar header, field by field (docs/kit.md, Determinism)."""
    name = file.path.encode("utf-8")
    if len(name) > NAME_BYTES:
        raise ValueError(f"kit path longer than {NAME_BYTES} bytes: {file.path!r}")
    mode = 0o755 if file.executable else 0o644
    block = b"".join(
        [
            name.ljust(NAME_BYTES, b"\0"),  # name
            b"%07o\0" % mode,  # mode
            b"%07o\0" % 0 * 2,  # uid, gid
            b"%011o\0" % len(file.data),  # size
            b"%011o\0" % mtime,  # mtime
            b" " * 8,  # checksum, counted as spaces
            REGULAR,  # typeflag
            b"\0" * 100,  # linkname
            USTAR,  # magic and version
            b"\0" * 64,  # uname, gname: empty
            b"\0" * 16,  # devmajor, devminor: empty for a regular file
            b"\0" * 167,  # prefix (empty) and padding
        ]
    )
    return block[:148] + b"%06o\0 " % sum(block) + block[156:]


def tar_length(sizes: Iterable[int]) -> int:
    """The length of :func:`render_tar`'s bytes for members of these sizes, without
    rendering them (the verifier bounds the stream by it before it renders anything)."""
    body = sum(BLOCK + size + (-size % BLOCK) for size in sizes) + 2 * BLOCK
    return body + (-body % RECORD)


def render_tar(files: Iterable[KitFile], mtime: int) -> bytes:
    """The uncompressed canonical tar bytes of ``files`` (any order in, sorted out):
    each header and its data padded to 512 bytes, then two zero blocks, then zeros to a
    10240-byte record. Python's ``tarfile`` writes exactly these bytes (a test checks)."""
    parts = []
    for file in sorted(files, key=lambda f: f.path):
        parts += [_header(file, mtime), file.data, b"\0" * (-len(file.data) % BLOCK)]
    parts.append(b"\0" * (2 * BLOCK))
    parts.append(b"\0" * (-sum(map(len, parts)) % RECORD))
    return b"".join(parts)  # one join: a kit's bytes are held once, not twice
