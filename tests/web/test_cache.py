"""Rendered pages are reused until the catalog changes, and the cache stays bounded."""

from __future__ import annotations

from servekit.catalog import Catalog
from servekit.web.cache import PageCache
from servekit.web.routes import catalog as routes


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


def _scope(path: str, query: bytes) -> dict[str, object]:
    return {"type": "http", "method": "GET", "path": path, "query_string": query}


def test_only_short_requests_are_memoized_so_the_memo_stays_small() -> None:
    short = _scope("/", b"q=llama")
    long = _scope("/", b"q=llama&pad=" + b"x" * routes.MEMO_MAX)
    routes._key_of.cache_clear()
    assert routes._cache_key(long) == routes._cache_key(short) is not None  # the same page
    assert routes._key_of.cache_info().currsize == 1  # the short one alone is kept
    for n in range(50):  # distinct long paths a client could send forever
        assert routes._cache_key(_scope(f"/packages/{'p' * 600}{n}/1", b"")) is not None
    assert routes._key_of.cache_info().currsize == 1
