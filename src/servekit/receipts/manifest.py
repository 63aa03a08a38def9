"""The kit manifest: sha256 and size of every kit file, and the kit's content digest.

Format (UTF-8, ``\\n`` line ends, no trailing spaces)::

    servekit-manifest/v1
    <sha256 hex>  <size in bytes>  <path>
    ...

One line per kit file except ``MANIFEST`` and ``receipt.dsse.json``, sorted by path
(byte order). Paths are relative, ``/``-separated, made of ``[A-Za-z0-9._+-]`` parts.
The kit's content digest is the sha256 of the exact ``MANIFEST`` bytes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from servekit.errors import FileChangedError
from servekit.package.files import MANIFEST_FILE, UNLISTED
from servekit.receipts.canonical import sha256_hex
from servekit.receipts.formats import MANIFEST_FORMAT

_PATH = re.compile(r"^[A-Za-z0-9._+-]+(/[A-Za-z0-9._+-]+)*$")
# A size has at most 19 digits (below 2**63): bounded before int() ever sees it, so an
# unsigned MANIFEST with a size of thousands of digits is a format error, not a traceback.
_LINE = re.compile(r"^([0-9a-f]{64})  (0|[1-9][0-9]{0,18})  (\S+)$")


@dataclass(frozen=True)
class ManifestEntry:
    """One kit file as the manifest records it."""

    path: str
    sha256: str
    size: int


def is_kit_path(path: str) -> bool:
    """Whether ``path`` is a plain relative kit path (no ``.``/``..`` parts)."""
    return bool(_PATH.match(path)) and not ({".", ".."} & set(path.split("/")))


def manifest_entries(files: Mapping[str, bytes]) -> tuple[ManifestEntry, ...]:
    """Entries for every file in ``files`` except the unlisted ones, sorted by path."""
    for path in files:
        if not is_kit_path(path):
            raise ValueError(f"not a plain kit path: {path!r}")
    return tuple(
        ManifestEntry(path=p, sha256=sha256_hex(files[p]), size=len(files[p]))
        for p in sorted(files)
        if p not in UNLISTED
    )


def render_manifest(entries: tuple[ManifestEntry, ...]) -> bytes:
    """The manifest bytes for ``entries`` (which must already be sorted)."""
    lines = [MANIFEST_FORMAT, *(f"{e.sha256}  {e.size}  {e.path}" for e in entries)]
    return ("\n".join(lines) + "\n").encode("utf-8")


def kit_digest(manifest: bytes) -> str:
    """The kit's content digest: hex sha256 of the exact manifest bytes."""
    return sha256_hex(manifest)


def _malformed(expected: str, actual: str) -> FileChangedError:
    return FileChangedError(
        "the manifest is not in the servekit manifest format",
        file=MANIFEST_FILE,
        expected=expected,
        actual=actual,
        hint="the kit was edited or damaged; obtain it again from the publisher",
    )


def _parse_line(line: str) -> ManifestEntry:
    match = _LINE.match(line)
    if match is None or not is_kit_path(match.group(3)):
        raise _malformed("'<sha256 hex>  <size>  <path>'", repr(line))
    return ManifestEntry(path=match.group(3), sha256=match.group(1), size=int(match.group(2)))


def parse_manifest(data: bytes) -> tuple[ManifestEntry, ...]:
    """Parse manifest bytes strictly: the result renders back to exactly ``data``."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _malformed("UTF-8 text", f"invalid byte at offset {exc.start}") from exc
    lines = text.split("\n")
    if lines[0] != MANIFEST_FORMAT:
        raise _malformed(MANIFEST_FORMAT, repr(lines[0][:80]))
    entries = tuple(_parse_line(line) for line in lines[1:-1])
    paths = [e.path for e in entries]
    if paths != sorted(set(paths)) or render_manifest(entries) != data:
        raise _malformed("unique lines sorted by path, each ending in a newline", "another layout")
    return entries
