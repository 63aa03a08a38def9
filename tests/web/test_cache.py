"""Rendered pages are reused until the catalog changes, and the cache stays bounded."""

from __future__ import annotations

from servekit.catalog import Catalog
from servekit.web.cache import PageCache


def test_reuses_until_the_catalog_changes() -> None:
    cache, calls = PageCache(maxsize=2), []

    def render(text: str) -> str:
        calls.append(text)
        return text

    first, second = Catalog([]), Catalog([])
    assert cache.get(first, "a", lambda: render("a1")) == "a1"
    assert cache.get(first, "a", lambda: render("a2")) == "a1"  # hit
    assert cache.get(second, "a", lambda: render("a3")) == "a3"  # a publish: all dropped
    cache.get(second, "b", lambda: render("b"))
    cache.get(second, "c", lambda: render("c"))  # evicts "a", the least recently used
    assert cache.get(second, "a", lambda: render("a4")) == "a4"
    assert calls == ["a1", "a3", "b", "c", "a4"]
