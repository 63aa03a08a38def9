"""Prepare ``SERVEKIT_HOME`` for ``servekit serve``: the store, the development key, the catalog.

Steps:
  1. make the home directory (refuse one that cannot be written);
  2. open the store, creating or migrating it (SQLite under the home, or
     ``SERVEKIT_DATABASE_URL``);
  3. create a development publisher key under ``HOME/keys`` on the first start only;
  4. publish every package under the packages directory through the store
     (:func:`servekit.store.publishing.publish`: claim rules, signed kit, price, licence),
     then keep a copy of its directory for the pages' evidence. A package the store refuses
     (its claims, or changed content under a published version) is reported and skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from servekit.catalog.pages import package_dirs
from servekit.catalog.publish import publish as keep_copy
from servekit.catalog.publish import published_root
from servekit.config import Settings
from servekit.errors import Error, ServeError, UsageError
from servekit.receipts.keys import PRIVATE_KEY_FILE, PUBLIC_KEY_FILE, generate, write_key_pair
from servekit.store import publishing
from servekit.store.db import Store, open_store
from servekit.store.results import VersionInfo

KEYS = "keys"


@dataclass(frozen=True)
class Refused:
    """A package directory the store did not publish, and why."""

    directory: Path
    reason: str


@dataclass(frozen=True)
class Home:
    """What ``servekit serve`` prepared: where state lives and what it published."""

    root: Path
    database: str
    key_dir: Path
    key_created: bool
    published: tuple[VersionInfo, ...]
    refused: tuple[Refused, ...]

    @property
    def catalog_dir(self) -> Path:
        return published_root(self.root)


def _make(root: Path) -> None:
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = root / ".write-probe"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ServeError(
            f"cannot write to SERVEKIT_HOME {root}: {exc.strerror}",
            hint="point SERVEKIT_HOME at a writable directory",
        ) from exc


def _development_key(root: Path) -> tuple[Path, bool]:
    key_dir = root / KEYS
    if (key_dir / PUBLIC_KEY_FILE).exists():
        return key_dir, False
    write_key_pair(generate(), key_dir)
    return key_dir, True


def publish_all(
    store: Store, dirs: list[Path], key: Path, threshold_usd: float
) -> tuple[list[VersionInfo], list[Refused]]:
    """Publish each directory through the store (one transaction each), then keep its copy."""
    published: list[VersionInfo] = []
    refused: list[Refused] = []
    for directory in dirs:
        try:
            with store.transaction() as s:
                result = publishing.publish(
                    directory, key, kits_dir=store.kits_dir, threshold_usd=threshold_usd, session=s
                )
        except Error as exc:
            refused.append(Refused(directory, exc.message))
            continue
        keep_copy([directory], store.home)
        published.append(result.version)
    return published, refused


def prepare_home(settings: Settings, packages: Path) -> Home:
    """Run the steps above; returns what was prepared."""
    dirs = package_dirs(packages)
    if not dirs:
        raise UsageError(
            f"no package.yaml under {packages}/*/",
            hint="pass --packages DIR, the directory that holds one folder per package",
        )
    root = settings.home
    _make(root)
    store = open_store(settings)
    key_dir, created = _development_key(root)
    try:
        published, refused = publish_all(
            store, dirs, key_dir / PRIVATE_KEY_FILE, settings.enterprise_threshold_usd
        )
    finally:
        store.engine.dispose()
    return Home(
        root=root,
        database=store.engine.url.render_as_string(hide_password=True),
        key_dir=key_dir,
        key_created=created,
        published=tuple(published),
        refused=tuple(refused),
    )
