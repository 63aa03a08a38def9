"""Publish package directories into a catalog home, and read the published catalog back.

Until the store (``servekit.store``) holds published versions, the published catalog is a
directory: ``HOME/published/<id>/<version>/`` is a copy of the package directory as it
was checked at publish time, and ``HOME/published/GENERATION`` changes on every publish.
A reader (every web worker, on every host that shares HOME) compares the generation with
the one it loaded and reloads when it moved, so no worker serves a stale card and nothing
lives only in one process's memory.

Publishing re-runs the claim rules: re-run or retract a measurement in the package
directory, publish again, and the card changes. What publishing computed (the validated
definition and the card, with the rules' verdict) is stored next to the copy as
``ENTRY_FILE``, so a reader loads JSON instead of re-checking every package: a worker
starts in seconds at 1 000 packages instead of minutes (docs/performance.md).
"""

from __future__ import annotations

import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from servekit.catalog.cards import Card
from servekit.catalog.pages import Catalog, Entry, load_entry
from servekit.errors import UsageError
from servekit.package.load import LoadedPackage
from servekit.package.models import Package
from servekit.package.source import DirectorySource
from servekit.seams import ReadFailure, read_optional

PUBLISHED = "published"
GENERATION = "GENERATION"
ENTRY_FILE = ".servekit-entry.json"


class StoredEntry(BaseModel):
    """What publishing computed for one version, as stored beside its copy."""

    model_config = ConfigDict(frozen=True)

    package: Package
    card: Card


def published_root(home: Path) -> Path:
    return home / PUBLISHED


def generation(home: Path) -> str:
    """The current publish generation ('' when nothing was published yet)."""
    path = published_root(home) / GENERATION
    return (read_optional(path, _unreadable) or b"").decode("utf-8", "replace").strip()


def _unreadable(failure: ReadFailure) -> UsageError:
    return UsageError(str(failure), hint="check the permissions of HOME/published")


def _bump(root: Path) -> None:
    tmp = root / f".{GENERATION}.{uuid.uuid4().hex}"
    tmp.write_text(uuid.uuid4().hex + "\n", encoding="utf-8")
    tmp.replace(root / GENERATION)


def publish(directories: list[Path], home: Path) -> list[Entry]:
    """Check each package directory and copy it into ``HOME/published`` (replacing a copy
    of the same id and version); returns the entries as published."""
    root = published_root(home)
    root.mkdir(parents=True, exist_ok=True)
    entries = [load_entry(d) for d in directories]
    for entry in entries:
        target = root / entry.card.id / entry.card.version
        staging = root / f".staging-{uuid.uuid4().hex}"
        shutil.copytree(entry.loaded.root, staging)
        stored = StoredEntry(package=entry.package, card=entry.card)
        (staging / ENTRY_FILE).write_text(stored.model_dump_json(), encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        staging.replace(target)
    _bump(root)
    return entries


def _stored(path: Path) -> Entry:
    try:
        stored = StoredEntry.model_validate_json(path.read_bytes())
    except ValidationError:  # stored by another servekit version: check the copy again
        return load_entry(path.parent)
    loaded = LoadedPackage(package=stored.package, source=DirectorySource(path.parent))
    return Entry(loaded=loaded, card=stored.card)


def load_published(home: Path) -> Catalog:
    """The published catalog (empty when nothing was published)."""
    return Catalog([_stored(p) for p in sorted(published_root(home).glob(f"*/*/{ENTRY_FILE}"))])


class CatalogSource(Protocol):
    """Where the web app gets the published catalog on each request.

    :class:`PublishedCatalog` reads ``HOME/published``; a store-backed source (published
    versions as database rows) plugs in with the same method. ``current`` returns the same
    object until something is published, which is what the page cache keys on.
    """

    def current(self) -> Catalog: ...


@dataclass
class PublishedCatalog:
    """The published catalog of one HOME, reloaded when another process publishes."""

    home: Path
    _generation: str | None = None
    _catalog: Catalog | None = None

    def current(self) -> Catalog:
        now = generation(self.home)
        if self._catalog is None or now != self._generation:
            self._catalog = load_published(self.home)
            self._generation = now
        return self._catalog
