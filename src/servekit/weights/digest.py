"""The versioned tree digest of a model tree (scheme ``servekit-tree-v1``, docs/digest.md).

The digest binds every file's relative path, size and sha256. It is computed over a
canonical listing, so it does not depend on the order in which a tree was walked,
on the machine, or on the file system:

1. every path is checked against the path rules (:func:`check_path`);
2. entries are sorted by the UTF-8 bytes of their path;
3. the listing is the header line ``servekit-tree-v1\\n`` followed by one line
   ``<sha256 hex> <size> <path>\\n`` per file;
4. the digest is ``sha256:`` + the lowercase hex sha256 of the listing's bytes.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Iterable
from typing import Protocol

SCHEME = "servekit-tree-v1"
DIGEST_PREFIX = "sha256:"

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f\\]")


class DigestEntry(Protocol):
    """What the digest reads from a file entry."""

    @property
    def path(self) -> str: ...

    @property
    def size(self) -> int: ...

    @property
    def sha256(self) -> str: ...


def path_problem(path: str) -> str | None:
    """Why ``path`` cannot be part of a tree, or ``None`` when it can."""
    if not path:
        return "the path is empty"
    if _FORBIDDEN.search(path):
        return "the path holds a control character or a backslash"
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return "the path is not valid UTF-8"
    if path.startswith("/"):
        return "the path is absolute"
    if any(part in ("", ".", "..") for part in path.split("/")):
        return "the path has an empty, '.' or '..' part"
    return None


def check_path(path: str) -> str:
    """Return ``path`` when it follows the path rules, else raise ``ValueError``."""
    problem = path_problem(path)
    if problem is not None:
        raise ValueError(f"{path!r}: {problem}")
    return path


def sort_key(path: str) -> bytes:
    """The canonical order of paths: by their UTF-8 bytes."""
    return path.encode("utf-8")


def _line(entry: DigestEntry) -> bytes:
    check_path(entry.path)
    if not _SHA256.match(entry.sha256):
        raise ValueError(f"{entry.path!r}: sha256 must be 64 lowercase hex digits")
    if entry.size < 0:
        raise ValueError(f"{entry.path!r}: size must not be negative")
    return f"{entry.sha256} {entry.size} {entry.path}\n".encode()


def canonical_listing(entries: Iterable[DigestEntry]) -> bytes:
    """The exact bytes the tree digest hashes (raises ``ValueError`` on a bad entry)."""
    ordered = sorted(entries, key=lambda e: sort_key(e.path))
    for before, after in itertools.pairwise(ordered):
        if before.path == after.path:
            raise ValueError(f"{after.path!r} is listed twice")
    return (SCHEME + "\n").encode() + b"".join(_line(e) for e in ordered)


def tree_digest(entries: Iterable[DigestEntry]) -> str:
    """The tree digest, ``sha256:<64 hex>``, of ``entries`` in any order."""
    return DIGEST_PREFIX + hashlib.sha256(canonical_listing(entries)).hexdigest()
