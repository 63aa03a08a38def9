"""The static export: index pages, package pages, charts and the files figures link to."""

from __future__ import annotations

from pathlib import Path

from servekit.catalog import export_site, load_catalog
from servekit.catalog.chart import chart_series, render_chart

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "packages"


def test_export_paginates_and_links_everything_it_shows(tmp_path: Path) -> None:
    catalog = load_catalog(EXAMPLES)
    pages = export_site(catalog, tmp_path, page_size=2).pages
    assert [p.name for p in pages[:2]] == ["index.html", "page-2.html"]
    first = (tmp_path / "index.html").read_text()
    assert 'href="page-2.html"' in first and "<form" not in first  # no filters offline
    assert 'rel="prev" href="index.html"' in (tmp_path / "page-2.html").read_text()
    llama = (tmp_path / "llama-850m-h200-1.0.0.html").read_text()
    assert 'src="llama-850m-h200-1.0.0.svg"' in llama
    for href in llama.split('href="files/')[1:]:
        assert (tmp_path / "files" / href.split('"')[0]).is_file(), href
    assert (tmp_path / "catalog.css").is_file()


def test_chart_splits_latency_from_throughput_and_is_deterministic() -> None:
    card = next(c for c in load_catalog(EXAMPLES).cards if c.id == "llama-850m-h200")
    latency, throughput = chart_series(card.figures)
    names = {name for name, _, _ in latency}
    assert {"e2el p50", "e2el p99", "ttft p50", "tpot p50"} <= names
    e2el_p50 = next(points for name, _, points in latency if name == "e2el p50")
    assert [c for c, _ in e2el_p50] == [1, 8, 32]
    assert [name for name, _, _ in throughput] == ["output throughput per GPU"]
    svg = render_chart(card.figures)
    assert svg == render_chart(tuple(reversed(card.figures)))
    assert b"<script" not in svg and b"output throughput per GPU (tok/s)" in svg
