"""Rendered pages are reused until the catalog changes, and the cache stays bounded."""

from __future__ import annotations

from servekit.catalog import Catalog
from servekit.web.cache import PageCache


def test_reuses_until_the_catalog_changes() -> None:
    cache = PageCache(maxsize=2)
    first, second = Catalog([]), Catalog([])
    assert cache.get(first, "a") is None
    cache.put(first, "a", b"a1")
    assert cache.get(first, "a") == b"a1"  # hit
    assert cache.get(second, "a") is None  # a publish: all dropped
    cache.put(first, "a", b"stale")  # rendered from the old catalog: not kept
    assert cache.get(second, "a") is None
    for key in ("a", "b", "c"):  # "c" evicts "a", the least recently used
        cache.put(second, key, key.encode())
    assert [cache.get(second, k) for k in ("a", "b", "c")] == [None, b"b", b"c"]
