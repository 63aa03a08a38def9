"""Canonical JSON (RFC 8785, the JSON Canonicalization Scheme) and sha256 digests.

Signed content is opaque bytes: it is canonicalized once, signed, stored, and
later verified as stored. Nothing here re-serializes a parsed document to check it.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import rfc8785


def canonical_json(value: Any) -> bytes:
    """``value`` as RFC 8785 canonical JSON bytes (UTF-8, sorted keys, ES6 numbers)."""
    return rfc8785.dumps(value)


def sha256_hex(data: bytes) -> str:
    """Lower-case hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


# --- strict reading ------------------------------------------------------------------

MAX_DEPTH = 32
"""Receipts nest 6 levels deep; anything past this is refused before ``json`` recurses."""
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = re.compile(rb"[^\[\]{}]")


def nesting_depth(data: bytes, *, stop: int | None = None) -> int:
    """The deepest ``[``/``{`` nesting of JSON text (strings skipped), in linear time;
    with ``stop``, it returns as soon as the depth passes ``stop``."""
    depth = deepest = 0
    for byte in _NOT_BRACKET.sub(b"", _STRING.sub(b"", data)):
        depth += 1 if byte in b"[{" else -1
        deepest = max(deepest, depth)
        if stop is not None and deepest > stop:
            break
    return deepest


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKeyError(key)
        out[key] = value
    return out


class DuplicateKeyError(ValueError):
    """A JSON object names a key twice (``json`` would silently keep the last)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {key!r}")
        self.key = key


def strict_loads(data: bytes) -> Any:
    """Parse JSON refusing duplicate keys (:class:`DuplicateKeyError`), NaN and Infinity.

    Call :func:`nesting_depth` first: ``json`` recurses once per level.
    """

    def constant(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return json.loads(data, object_pairs_hook=_unique, parse_constant=constant)


def is_canonical(data: bytes, value: Any) -> bool:
    """Whether ``data`` is exactly the RFC 8785 form of ``value`` (parsed from it)."""
    try:
        return canonical_json(value) == data
    except (TypeError, ValueError, OverflowError):  # e.g. an integer past 2**53
        return False
