"""Rendered pages, kept per worker until the next publish.

A catalog or package page is a pure function of the published catalog and the request's
path and query, so each worker keeps the page it rendered, encoded and ready to send, and
drops all of them when the published catalog changes (the source returns a new
``Catalog`` object, which every worker sees on its next request). Bounded: the least
recently used page goes first. Nothing in it is state another worker needs: a miss only
costs a render.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from threading import Lock

from servekit.catalog import Catalog


class PageCache:
    def __init__(self, maxsize: int = 1024) -> None:
        self.maxsize = maxsize
        self._pages: OrderedDict[Hashable, bytes] = OrderedDict()
        self._catalog: Catalog | None = None
        self._lock = Lock()

    def get(self, catalog: Catalog, key: Hashable) -> bytes | None:
        """The page for ``key`` rendered from ``catalog``, or None if none is kept."""
        with self._lock:
            if catalog is not self._catalog:
                self._pages.clear()
                self._catalog = catalog
            page = self._pages.get(key)
            if page is not None:
                self._pages.move_to_end(key)
            return page

    def put(self, catalog: Catalog, key: Hashable, page: bytes) -> None:
        """Keep ``page``, rendered from ``catalog`` (unless a newer catalog came since)."""
        with self._lock:
            if catalog is self._catalog:
                self._pages[key] = page
                if len(self._pages) > self.maxsize:
                    self._pages.popitem(last=False)
