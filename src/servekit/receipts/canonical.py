"""Canonical JSON (RFC 8785, the JSON Canonicalization Scheme) and sha256 digests.

Signed content is opaque bytes: it is canonicalized once, signed, stored, and
later verified as stored. Nothing here re-serializes a parsed document to check it.
"""

from __future__ import annotations

import hashlib
from typing import Any

import rfc8785


def canonical_json(value: Any) -> bytes:
    """``value`` as RFC 8785 canonical JSON bytes (UTF-8, sorted keys, ES6 numbers)."""
    return rfc8785.dumps(value)


def sha256_hex(data: bytes) -> str:
    """Lower-case hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()
