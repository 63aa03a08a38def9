"""Trust files: which key may sign which publisher's packages.

A trust file is TOML, one table per trusted key, named by its key id::

    [keys.3b0c...e9]                    # lower-case hex sha256 of the raw public key
    publisher = "Example Labs"          # package.yaml's `publisher`, exactly
    packages = ["kimi-k3-*", "tiny"]    # package ids this key may sign (`*` and `?` globs)
    public_key = "example-labs.pub"     # a PEM file next to this one, or the PEM itself

A key that signs a package of another publisher, or an id no pattern matches, is
refused (:class:`~servekit.errors.KeyGrantError`). This module only parses the file;
:func:`servekit.receipts.keys.load_trust_store` turns it into a trust store.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from servekit.errors import SigningKeyError

_KEY_ID = re.compile(r"^[0-9a-f]{64}$")
_PATTERN = re.compile(r"^[A-Za-z0-9._*?+-]+$")
ANY_PUBLISHER = None


@dataclass(frozen=True)
class Grant:
    """What one key may sign: one publisher's packages whose ids match ``packages``.

    ``publisher`` is ``None`` only for a trust store of one bare key, which the buyer
    trusts for the one publisher whose kit they verify.
    """

    publisher: str | None
    packages: tuple[str, ...]

    def allows(self, publisher: str, package_id: str) -> bool:
        if self.publisher is not None and self.publisher != publisher:
            return False
        return any(fnmatchcase(package_id, p) for p in self.packages)

    def describe(self) -> str:
        who = self.publisher if self.publisher is not None else "one publisher"
        return f"{who}: {', '.join(self.packages)}"


SINGLE_KEY_GRANT = Grant(publisher=ANY_PUBLISHER, packages=("*",))


@dataclass(frozen=True)
class TrustEntry:
    """One key of a trust file, before its PEM is parsed."""

    key_id: str
    grant: Grant
    pem: bytes
    where: str


def _bad(path: Path, message: str) -> SigningKeyError:
    return SigningKeyError(
        f"{path}: {message}",
        hint="docs/kit.md (Keys and trust) shows the trust file format",
    )


def _strings(path: Path, key_id: str, value: Any, field: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise _bad(path, f"keys.{key_id}.{field} must be a non-empty list of strings")
    for pattern in value:
        if not _PATTERN.match(pattern):
            raise _bad(path, f"keys.{key_id}.{field}: {pattern!r} is not a package id pattern")
    return tuple(value)


def _pem(path: Path, key_id: str, value: Any) -> bytes:
    if not isinstance(value, str) or not value:
        raise _bad(path, f"keys.{key_id}.public_key must be a PEM file name or a PEM block")
    if "-----BEGIN" in value:
        return value.encode("ascii", "replace")
    try:
        return (path.parent / value).read_bytes()
    except OSError as exc:
        raise _bad(path, f"keys.{key_id}.public_key: cannot read {value}: {exc.strerror}") from exc


def _entry(path: Path, key_id: str, table: Any) -> TrustEntry:
    if not _KEY_ID.match(key_id):
        raise _bad(path, f"{key_id!r} is not a key id (64 lower-case hex digits)")
    if not isinstance(table, dict) or set(table) != {"publisher", "packages", "public_key"}:
        raise _bad(path, f"keys.{key_id} must set exactly publisher, packages and public_key")
    publisher = table["publisher"]
    if not isinstance(publisher, str) or not publisher.strip():
        raise _bad(path, f"keys.{key_id}.publisher must be the publisher's name")
    grant = Grant(publisher, _strings(path, key_id, table["packages"], "packages"))
    return TrustEntry(key_id, grant, _pem(path, key_id, table["public_key"]), f"{path} ({key_id})")


def parse_trust_file(path: Path, data: bytes) -> list[TrustEntry]:
    """Every entry of a trust file; the caller checks each PEM against its key id."""
    try:
        document = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise _bad(path, f"not a TOML trust file ({exc})") from exc
    keys = document.get("keys")
    if set(document) != {"keys"} or not isinstance(keys, dict):
        raise _bad(path, "a trust file holds one [keys.<key id>] table per key, nothing else")
    return [_entry(path, key_id, table) for key_id, table in sorted(keys.items())]
