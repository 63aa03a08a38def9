"""Prepare ``SERVEKIT_HOME`` for ``servekit serve``: the development key and the catalog.

Steps:
  1. make the home directory (refuse one that cannot be written);
  2. create a development publisher key under ``HOME/keys`` on the first start only;
  3. publish every package under the packages directory (re-publishing replaces a version).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from servekit.catalog.pages import Entry, package_dirs
from servekit.catalog.publish import publish, published_root
from servekit.errors import ServeError, UsageError
from servekit.receipts.keys import PUBLIC_KEY_FILE, generate, write_key_pair

KEYS = "keys"


@dataclass(frozen=True)
class Home:
    """What ``servekit serve`` prepared: where state lives and what it published."""

    root: Path
    key_dir: Path
    key_created: bool
    published: tuple[Entry, ...]

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


def prepare_home(root: Path, packages: Path) -> Home:
    """Run the steps above; returns what was prepared."""
    dirs = package_dirs(packages)
    if not dirs:
        raise UsageError(
            f"no package.yaml under {packages}/*/",
            hint="pass --packages DIR, the directory that holds one folder per package",
        )
    _make(root)
    key_dir, created = _development_key(root)
    entries = publish(dirs, root)
    return Home(root=root, key_dir=key_dir, key_created=created, published=tuple(entries))
