"""The store's signing keys, as a buyer fetches and checks them.

The store signs every kit it sells with one key (``HOME/keys/servekit.key``), for the
publishers its packages name. What it publishes about that key:

* ``/keys``: a page with each key id and the publishers and packages it signs for;
* ``/keys/trust.toml``: a trust file granting the key exactly those publishers' packages
  (``servekit trust fetch URL`` writes it and prints the key id to compare);
* ``/api/v1/keys``: the same as JSON.

The grants are read from the kits themselves: each published version's publisher is its
kit's ``package.yaml`` ``publisher``, read once per kit digest (a kit never changes under
its digest). A buyer compares the key id out of band (docs/kit.md, "Checking the key").
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from servekit.errors import StoreNotFoundError
from servekit.receipts.keys import PUBLIC_KEY_FILE, load_public_key
from servekit.receipts.trust import Scope, render_trust_file
from servekit.store import publishing
from servekit.store.db import Store
from servekit.store.results import VersionInfo
from servekit.verify.archive import read_kit
from servekit.verify.contents import kit_package
from servekit.web.home import KEYS


@dataclass(frozen=True)
class StoreKey:
    """One signing key of the store and what it signs for."""

    key_id: str
    pem: bytes
    scopes: tuple[Scope, ...]


@lru_cache(maxsize=4096)
def _publisher_of(kit: Path, sha256: str) -> str:
    """The publisher a stored kit names (``sha256`` keys the cache: a kit never changes)."""
    return kit_package(read_kit(kit)).publisher


def publisher_of(store: Store, version: VersionInfo) -> str:
    return _publisher_of(
        publishing.kit_path(store.kits_dir, version.kit_sha256), version.kit_sha256
    )


def _versions(store: Store) -> list[VersionInfo]:
    with store.transaction() as s:
        return publishing.catalog(session=s, include_retracted=True)


def store_key_id(store: Store) -> str | None:
    """The store's signing key id (``None`` before ``servekit serve`` made the key)."""
    path = store.home / KEYS / PUBLIC_KEY_FILE
    return load_public_key(path).key_id if path.exists() else None


def store_key(store: Store) -> StoreKey:
    """The store's public key and the publishers' packages it signed."""
    path = store.home / KEYS / PUBLIC_KEY_FILE
    if not path.exists():
        raise StoreNotFoundError(
            f"this store has no publisher key at {Path(KEYS) / PUBLIC_KEY_FILE}",
            hint="`servekit serve` creates one on its first start",
        )
    key = load_public_key(path)
    packages: dict[str, set[str]] = defaultdict(set)
    for version in _versions(store):
        packages[publisher_of(store, version)].add(version.package_id)
    scopes = tuple(Scope(p, tuple(sorted(ids))) for p, ids in sorted(packages.items()))
    return StoreKey(key.key_id, key.pem(), scopes)


def trust_file(store: Store, origin: str) -> str:
    """``/keys/trust.toml``: the store's key with its grants, the PEM inline."""
    key = store_key(store)
    if not key.scopes:
        raise StoreNotFoundError(
            "this store has published no kit yet, so its key is granted nothing",
            hint="publish a package first (`servekit store publish`)",
        )
    comment = (
        f"The store at {origin}: its signing key and what it signs for.\n"
        f"Compare the key id below with the one the store publishes elsewhere:\n"
        f"  {key.key_id}\n"
        "Use: servekit verify kit KIT --trust trust.toml"
    )
    return render_trust_file([(key.key_id, key.pem, key.scopes)], comment)


def publisher_versions(store: Store, publisher: str) -> set[tuple[str, str]]:
    """(package id, version) of every version whose kit names ``publisher``."""
    return {
        (v.package_id, v.version) for v in _versions(store) if publisher_of(store, v) == publisher
    }
