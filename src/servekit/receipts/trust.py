"""Trust files: which key may sign which publisher's packages (and that publisher's feed).

A trust file is TOML, one table per trusted key, named by its key id::

    [keys.3b0c...e9]                    # lower-case hex sha256 of the raw public key
    publisher = "Example Labs"          # package.yaml's `publisher`, exactly
    packages = ["kimi-k3-*", "tiny"]    # package ids this key may sign (`*` and `?` globs)
    public_key = "example-labs.pub"     # a PEM file next to this one, or the PEM itself

A key that speaks for several publishers (a store that signs every kit it sells) lists
each instead of ``publisher`` and ``packages``::

    [keys.3b0c...e9]
    public_key = "store.pub"
    grants = [{publisher = "Example Labs", packages = ["tiny"]},
              {publisher = "Other Lab", packages = ["big-*"]}]

A key that signs a package of a publisher it is not granted, or an id no pattern
matches, is refused (:class:`~servekit.errors.KeyGrantError`); a key signs a feed only
in the name of a publisher it is granted. This module only parses the file;
:func:`servekit.receipts.keys.load_trust_store` recognises it by its content and turns it
into a trust store.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from servekit.errors import SigningKeyError
from servekit.seams import ReadFailure, read_bytes

_KEY_ID = re.compile(r"^[0-9a-f]{64}$")
_PATTERN = re.compile(r"^[A-Za-z0-9._*?+-]+$")


@dataclass(frozen=True)
class Scope:
    """One publisher's packages whose ids match ``packages``."""

    publisher: str
    packages: tuple[str, ...]


@dataclass(frozen=True)
class Grant:
    """What one key may sign: the packages of each of its scopes, and those publishers' feeds.

    A *bare* grant (``bare=True``, no scopes) is one public key given without a trust
    file: it is trusted for the one publisher the command names (the kit's, the
    package's, ``--publisher``), and speaks for no feed until
    :meth:`~servekit.receipts.keys.TrustStore.scoped` binds it to that publisher.
    """

    scopes: tuple[Scope, ...]
    bare: bool = False

    def allows(self, publisher: str, package_id: str) -> bool:
        """Whether the key may sign ``package_id`` of ``publisher``."""
        if self.bare:
            return True
        return any(
            s.publisher == publisher and any(fnmatchcase(package_id, p) for p in s.packages)
            for s in self.scopes
        )

    def speaks_for(self, publisher: str) -> bool:
        """Whether the key may sign ``publisher``'s revocation feed (never an unscoped bare key)."""
        return any(s.publisher == publisher for s in self.scopes)

    def describe(self) -> str:
        if self.bare:
            return "one publisher (a bare key, no trust file)"
        return "; ".join(f"{s.publisher}: {', '.join(s.packages)}" for s in self.scopes)


BARE_KEY_GRANT = Grant(scopes=(), bare=True)


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


def _strings(path: Path, where: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise _bad(path, f"{where}.packages must be a non-empty list of strings")
    for pattern in value:
        if not _PATTERN.match(pattern):
            raise _bad(path, f"{where}.packages: {pattern!r} is not a package id pattern")
    return tuple(value)


def _pem(path: Path, key_id: str, value: Any, base: Path | None) -> bytes:
    if not isinstance(value, str) or not value:
        raise _bad(path, f"keys.{key_id}.public_key must be a PEM file name or a PEM block")
    if "-----BEGIN" in value:
        return value.encode("ascii", "replace")
    if base is None:  # a fetched trust file names no file on this machine
        raise _bad(path, f"keys.{key_id}.public_key must hold the PEM itself, not a file name")
    return read_bytes(
        base / value,
        lambda failure: _bad(
            path, f"keys.{key_id}.public_key: cannot read {value}: {_strerror(failure)}"
        ),
    )


def _strerror(failure: ReadFailure) -> str | None:
    return failure.exc.strerror if isinstance(failure.exc, OSError) else failure.reason


def _scope(path: Path, where: str, table: Any) -> Scope:
    if not isinstance(table, dict) or set(table) != {"publisher", "packages"}:
        raise _bad(path, f"{where} must set exactly publisher and packages")
    publisher = table["publisher"]
    if not isinstance(publisher, str) or not publisher.strip():
        raise _bad(path, f"{where}.publisher must be the publisher's name")
    return Scope(publisher, _strings(path, where, table["packages"]))


def _grant(path: Path, key_id: str, table: dict[str, Any]) -> Grant:
    where = f"keys.{key_id}"
    if set(table) == {"publisher", "packages", "public_key"}:
        return Grant((_scope(path, where, {k: table[k] for k in ("publisher", "packages")}),))
    grants = table.get("grants")
    if set(table) != {"grants", "public_key"} or not isinstance(grants, list) or not grants:
        raise _bad(
            path,
            f"{where} must set exactly publisher, packages and public_key "
            "(or public_key and a non-empty grants list)",
        )
    scopes = tuple(_scope(path, f"{where}.grants[{i}]", g) for i, g in enumerate(grants))
    publishers = [s.publisher for s in scopes]
    if len(set(publishers)) != len(publishers):
        raise _bad(path, f"{where}.grants names a publisher twice: give it one entry")
    return Grant(scopes)


def _entry(path: Path, key_id: str, table: Any, base: Path | None) -> TrustEntry:
    if not _KEY_ID.match(key_id):
        raise _bad(path, f"{key_id!r} is not a key id (64 lower-case hex digits)")
    if not isinstance(table, dict):
        raise _bad(path, f"keys.{key_id} must be a table")
    grant = _grant(path, key_id, table)
    pem = _pem(path, key_id, table["public_key"], base)
    return TrustEntry(key_id, grant, pem, f"{path} ({key_id})")


def parse_trust_file(path: Path, text: str, *, base: Path | None) -> list[TrustEntry]:
    """Every entry of a trust file; the caller checks each PEM against its key id.

    ``public_key`` file names are read relative to ``base``; with ``None`` (a fetched
    file) every key must be inline.
    """
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _bad(path, f"not a TOML trust file ({exc})") from exc
    keys = document.get("keys")
    if set(document) != {"keys"} or not isinstance(keys, dict) or not keys:
        raise _bad(path, "a trust file holds one [keys.<key id>] table per key, nothing else")
    return [_entry(path, key_id, table, base) for key_id, table in sorted(keys.items())]


def render_trust_file(entries: list[tuple[str, bytes, tuple[Scope, ...]]], comment: str) -> str:
    """A trust file for ``(key id, public key PEM, scopes)`` entries, with the PEM inline."""
    lines = [f"# {line}".rstrip() for line in comment.splitlines()]
    for key_id, pem, scopes in entries:
        lines += ["", f"[keys.{key_id}]", f"public_key = '''\n{pem.decode('ascii').strip()}\n'''"]
        rows = [
            f"  {{publisher = {_toml_string(s.publisher)}, packages = "
            f"[{', '.join(_toml_string(p) for p in s.packages)}]}},"
            for s in scopes
        ]
        lines += ["grants = [", *rows, "]"]
    return "\n".join(lines) + "\n"


def _toml_string(value: str) -> str:
    """A TOML basic string (JSON's escaping is valid TOML for the characters it escapes)."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "".join(c if c.isprintable() else f"\\U{ord(c):08x}" for c in escaped) + '"'
