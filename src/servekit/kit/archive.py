"""The deterministic kit archive: the same files always give the same ``.tar.gz`` bytes.

The tar stream is :func:`servekit.receipts.archive.render_tar` (the canonical rendering
the verifier compares with); the gzip header has mtime 0, no file name and no extra
fields, and the file is that one gzip member.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterable

from servekit.receipts.archive import KitFile, kit_mtime, render_tar

__all__ = ["KitFile", "kit_mtime", "write_archive"]


def write_archive(files: Iterable[KitFile], mtime: int) -> bytes:
    """The ``.tar.gz`` bytes of ``files``."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as gz:
        gz.write(render_tar(files, mtime))
    return buffer.getvalue()


def kit_filename(package_id: str, version: str) -> str:
    """The file name a kit is downloaded as (the store's attachment name, which the
    package page's commands use): ``ID-VERSION.kit.tar.gz``."""
    return f"{package_id}-{version}.kit.tar.gz"
