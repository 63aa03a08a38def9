"""The canonical kit archive: the one tar rendering of a kit's files.

Both sides use it: the builder writes it (gzip-compressed) and the verifier re-renders
it from the members it read and compares the decompressed stream with it byte for byte,
so an archive that any tar reader could read differently is refused.

Entries are regular files only, sorted by path, ustar headers as Python's ``tarfile``
writes them in POSIX (pax) format (no extended header is ever needed: names are at most
100 bytes of ``[A-Za-z0-9._+-/]``), mtime 00:00 UTC of the package's publication date,
uid/gid 0, empty user and group names, mode 0644 (0755 for the kit's executables), and
the end-of-archive zero blocks padded to a 10240-byte record.
"""

from __future__ import annotations

import datetime as dt
import io
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass

from servekit.package.models import Package
from servekit.receipts.formats import EXECUTABLES

NAME_BYTES = 100
"""A ustar name field; longer kit paths would need an extended header, which kits never hold."""


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


def _info(file: KitFile, mtime: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(file.path)
    info.size = len(file.data)
    info.mtime = mtime
    info.mode = 0o755 if file.executable else 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.type = tarfile.REGTYPE
    return info


def render_tar(files: Iterable[KitFile], mtime: int) -> bytes:
    """The uncompressed canonical tar bytes of ``files`` (any order in, sorted out)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for file in sorted(files, key=lambda f: f.path):
            if len(file.path.encode("utf-8")) > NAME_BYTES:
                raise ValueError(f"kit path longer than {NAME_BYTES} bytes: {file.path!r}")
            tar.addfile(_info(file, mtime), io.BytesIO(file.data))
    return buffer.getvalue()
