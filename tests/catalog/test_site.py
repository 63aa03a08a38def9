"""The static export: index pages, package pages, charts and the files figures link to."""

from __future__ import annotations

from pathlib import Path

from servekit.catalog import Catalog, Entry, export_site, load_catalog, package_page, render_package
from servekit.catalog.chart import charts, render
from servekit.catalog.site import StaticLinks
from servekit.web.links import LiveLinks

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "packages"


def test_export_paginates_and_links_everything_it_shows(tmp_path: Path) -> None:
    catalog = load_catalog(EXAMPLES)
    pages = export_site(catalog, tmp_path, page_size=2).pages
    assert [p.name for p in pages[:2]] == ["index.html", "page-2.html"]
    first = (tmp_path / "index.html").read_text()
    assert 'href="page-2.html"' in first and "<form" not in first  # no filters offline
    assert "<script" not in first and 'name="v"' not in first  # no search, sort or compare
    assert 'rel="prev" href="index.html"' in (tmp_path / "page-2.html").read_text()
    llama = (tmp_path / "llama-850m-h200-1.0.0.html").read_text()
    assert 'src="llama-850m-h200-1.0.0-latency.svg"' in llama
    for href in llama.split('href="files/')[1:]:
        assert (tmp_path / "files" / href.split('"')[0]).is_file(), href
    assert (tmp_path / "catalog.css").is_file()


def test_charts_are_exported_per_panel_and_deterministic(tmp_path: Path) -> None:
    catalog = load_catalog(EXAMPLES)
    export_site(catalog, tmp_path)
    llama = (tmp_path / "llama-850m-h200-1.0.0.html").read_text()
    for panel in ("latency", "per-token", "throughput"):
        assert f'src="llama-850m-h200-1.0.0-{panel}.svg"' in llama
        assert (tmp_path / f"llama-850m-h200-1.0.0-{panel}.svg").is_file()
    assert not list(tmp_path.glob("kimi-k3-8xb300-*.svg"))  # one point per series: no chart
    assert 'id="no-chart"' in (tmp_path / "kimi-k3-8xb300-1.0.0.html").read_text()
    card = next(c for c in catalog.cards if c.id == "llama-850m-h200")
    forward = charts(card.figures, card.concurrencies)
    backward = charts(tuple(reversed(card.figures)), reversed(card.concurrencies))
    assert [render(c) for c in forward] == [render(c) for c in backward]
    assert all(b"<script" not in render(c) for c in forward)


def test_a_live_package_page_links_each_other_version_to_compare() -> None:
    catalog = load_catalog(EXAMPLES)
    first = next(e for e in catalog.entries if e.card.id == "tiny-sim")
    later = Entry(loaded=first.loaded, card=first.card.model_copy(update={"version": "0.2.0"}))
    both = Catalog([first, later])
    live = render_package(package_page(both, later), LiveLinks(), live=True)
    href = "/compare?v=tiny-sim@0.2.0&amp;v=tiny-sim@0.1.0"
    assert f'<a class="compare" href="{href}">compare with this page</a>' in live
    assert 'class="compare"' not in render_package(
        package_page(both, later), StaticLinks(), live=False
    )
