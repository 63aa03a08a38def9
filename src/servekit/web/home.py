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
     A draft is never published to the store (it can never be bought): only its copy is
     kept, so the catalog shows it for review, marked as a draft and with no way to buy it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from servekit.catalog.pages import package_dirs
from servekit.catalog.publish import publish as keep_copy
from servekit.catalog.publish import published_root
from servekit.config import Settings
from servekit.errors import Error, ServeError, StoreNotFoundError, UsageError
from servekit.package.load import load_package
from servekit.package.models import PackageStatus
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
    drafts: tuple[Path, ...] = ()
    """Draft package directories: shown for review, never in the store."""

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


@dataclass
class Publication:
    """What :func:`publish_all` did with each package directory."""

    published: list[VersionInfo] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)
    drafts: list[Path] = field(default_factory=list)


def _keep_draft(store: Store, directory: Path) -> bool:
    """Keep a draft's copy for review, unless the store sells that id and version (its
    page would then say draft while the version is for sale); True when kept."""
    package = load_package(directory).package
    if package.status is not PackageStatus.DRAFT:
        return False
    try:
        with store.transaction() as s:
            publishing.get_version(package.id, package.version, session=s)
    except StoreNotFoundError:
        keep_copy([directory], store.home)
        return True
    raise ServeError(
        f"{directory}: {package.id} {package.version} is a draft, but the store already "
        "sells that version",
        hint="a draft needs a version of its own: raise `version` in package.yaml",
    )


def publish_all(store: Store, dirs: list[Path], key: Path, threshold_usd: float) -> Publication:
    """Publish each directory through the store (one transaction each), then keep its copy;
    a draft is only kept, for review (step 4 above)."""
    done = Publication()
    for directory in dirs:
        try:
            if _keep_draft(store, directory):
                done.drafts.append(directory)
                continue
            with store.transaction() as s:
                result = publishing.publish(
                    directory, key, kits_dir=store.kits_dir, threshold_usd=threshold_usd, session=s
                )
        except Error as exc:
            done.refused.append(Refused(directory, exc.message))
            continue
        keep_copy([directory], store.home)
        done.published.append(result.version)
    return done


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
        done = publish_all(
            store, dirs, key_dir / PRIVATE_KEY_FILE, settings.enterprise_threshold_usd
        )
    finally:
        store.engine.dispose()
    return Home(
        root=root,
        database=store.engine.url.render_as_string(hide_password=True),
        key_dir=key_dir,
        key_created=created,
        published=tuple(done.published),
        refused=tuple(done.refused),
        drafts=tuple(done.drafts),
    )
