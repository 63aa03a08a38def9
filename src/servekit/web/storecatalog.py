"""The catalog the store has published: the pages' source when the app runs on a store.

The store (``servekit.store``) is the source of truth for what is published and what is
retracted; the package directory each version was published from is kept under
``HOME/published`` (``servekit.catalog.publish``) for its evidence, chart and pages. A
version shows when the store holds it; a retracted one leaves the listing and its page
says why. A draft the store does not hold (``servekit serve`` keeps only its copy) shows
for review: its card and page say draft, and no page offers to buy it.

Every request sees a publish or a retraction made by any worker, on any host, before it
started: there is no time-to-live. How each request finds out:

* SQLite: :meth:`StoreCatalog.unchanged` reads ``PRAGMA data_version`` on a connection
  kept for nothing else (SQLite changes it whenever another connection, in any process,
  commits) and the publish generation (``HOME/published/GENERATION``). When neither moved
  since the last check, the catalog in memory is current and no query runs: a few
  microseconds, cheap enough for the event loop. When either moved (any commit, a
  checkout included), :meth:`StoreCatalog.current` asks the store for its publication
  state (one aggregate row, read from indexes in a read-only snapshot that never queues
  behind a writer) and reloads the catalog only if that state changed.
* PostgreSQL: every request asks for the publication state (``unchanged`` returns None).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from threading import Lock

from servekit.catalog.pages import Catalog
from servekit.catalog.publish import GENERATION, generation, load_published, published_root
from servekit.seams import read_head
from servekit.store import publishing
from servekit.store.db import Store


class DataVersion:
    """``PRAGMA data_version`` of one SQLite database, on a connection of its own.

    The value changes when a connection other than this one commits, so this connection
    must never write (it only ever runs the pragma).
    """

    def __init__(self, path: str) -> None:
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._lock = Lock()

    def __call__(self) -> int:
        with self._lock:
            row = self._conn.execute("PRAGMA data_version").fetchone()
        return int(row[0])


def _read_small(path: str) -> bytes:
    """The first 256 bytes of ``path`` (b'' if it is missing): the generation."""
    return read_head(path, 256)


def _data_version(store: Store) -> DataVersion | None:
    url = store.engine.url
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return None
    return DataVersion(url.database)


@dataclass
class StoreCatalog:
    """A :class:`~servekit.catalog.publish.CatalogSource` reading the store."""

    store: Store
    _state: tuple[object, ...] | None = None
    _catalog: Catalog | None = None
    _seen: tuple[int, bytes] | None = None  # (data_version, generation) at the last check
    _lock: Lock = field(default_factory=Lock)
    _version: DataVersion | None = field(init=False, default=None)
    _generation_file: str = field(init=False, default="")

    def __post_init__(self) -> None:
        self._version = _data_version(self.store)
        self._generation_file = str(published_root(self.store.home) / GENERATION)

    def _marks(self) -> tuple[int, bytes] | None:
        if self._version is None:
            return None
        return self._version(), _read_small(self._generation_file)

    def unchanged(self) -> Catalog | None:
        """The catalog in memory if nothing was committed or published since the last
        check (SQLite only; no query), else None: call :meth:`current`."""
        marks = self._marks()
        with self._lock:
            if marks is not None and marks == self._seen:
                return self._catalog
        return None

    def current(self) -> Catalog:
        marks = self._marks()  # before the snapshot: a commit after it moves the marks
        with self.store.snapshot() as s:
            state: tuple[object, ...] = (
                publishing.publication_state(session=s),
                generation(self.store.home),
            )
            with self._lock:
                if self._catalog is not None and state == self._state:
                    self._seen = marks
                    return self._catalog
            rows = publishing.catalog(session=s, include_retracted=True)
        held = {(r.package_id, r.version): r for r in rows}
        entries = [
            e
            for e in load_published(self.store.home).entries
            if (e.card.id, e.card.version) in held or e.card.draft
        ]
        retracted = {
            key: row.retract_reason or "retracted by the publisher"
            for key, row in held.items()
            if row.retracted
        }
        catalog = Catalog(entries, retracted)
        with self._lock:
            self._catalog, self._state, self._seen = catalog, state, marks
        return catalog
