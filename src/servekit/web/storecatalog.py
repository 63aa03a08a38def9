"""The catalog the store has published: the pages' source when the app runs on a store.

The store (``servekit.store``) is the source of truth for what is published and what is
retracted; the package directory each version was published from is kept under
``HOME/published`` (``servekit.catalog.publish``) for its evidence, chart and pages. A
version shows when the store holds it; a retracted one leaves the listing and its page
says why. A draft the store does not hold (``servekit serve`` keeps only its copy) shows
for review: its card and page say draft, and no page offers to buy it. Every request asks
the database for its publication state (one aggregate row, read from indexes in a
read-only snapshot that never queues behind a writer), so each worker, on each host, sees
a publish or a retraction on its next request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from threading import Lock

from servekit.catalog.pages import Catalog
from servekit.catalog.publish import generation, load_published
from servekit.store import publishing
from servekit.store.db import Store


@dataclass
class StoreCatalog:
    """A :class:`~servekit.catalog.publish.CatalogSource` reading the store."""

    store: Store
    _state: tuple[object, ...] | None = None
    _catalog: Catalog | None = None
    _lock: Lock = field(default_factory=Lock)

    def current(self) -> Catalog:
        with self.store.snapshot() as s:
            state: tuple[object, ...] = (
                publishing.publication_state(session=s),
                generation(self.store.home),
            )
            if self._catalog is not None and state == self._state:
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
            self._catalog, self._state = catalog, state
        return catalog
