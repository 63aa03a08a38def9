"""The deterministic kit archive: the same files always give the same ``.tar.gz`` bytes.

Entries are regular files only, sorted by path, in POSIX (pax) format, with one mtime
taken from the package, uid/gid 0, empty user and group names, and mode 0644 (0755 for
executables). The gzip header has mtime 0 and no file name.
"""

from __future__ import annotations

import datetime as dt
import gzip
import io
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass

from servekit.package.models import Package


@dataclass(frozen=True)
class KitFile:
    """One file of a kit."""

    path: str
    data: bytes
    executable: bool = False


def kit_mtime(package: Package) -> int:
    """The archive's mtime: 00:00 UTC of the publication (or proof) date, else the epoch."""
    day = package.published or package.proof_verified
    if day is None:
        return 0
    return int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp())


def _info(file: KitFile, mtime: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(file.path)
    info.size = len(file.data)
    info.mtime = mtime
    info.mode = 0o755 if file.executable else 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.type = tarfile.REGTYPE
    return info


def write_archive(files: Iterable[KitFile], mtime: int) -> bytes:
    """The ``.tar.gz`` bytes of ``files``."""
    buffer = io.BytesIO()
    with (
        gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for file in sorted(files, key=lambda f: f.path):
            tar.addfile(_info(file, mtime), io.BytesIO(file.data))
    return buffer.getvalue()
