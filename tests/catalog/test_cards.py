"""Cards read every number from the package definition and label its provenance."""

from __future__ import annotations

from pathlib import Path

from servekit.catalog import Badge, Card, build_card, export_site, load_catalog
from servekit.package import check, load_package
from tests.package.factories import edit_definition, write_package

ROOT = Path(__file__).resolve().parents[2]
K3 = ROOT / "examples" / "packages" / "kimi-k3-8xb300"


def _card(directory: Path) -> Card:
    loaded = load_package(directory)
    return build_card(loaded, check(loaded))


def test_k3_card_shows_reported_figures_with_their_source() -> None:
    card = _card(K3)
    assert {f.badge for f in card.figures} == {Badge.REPORTED}
    p50 = next(f for f in card.figures if f.id == "e2el-p50-c8")
    assert p50.display == "18695 ms" and "reported by RunInfra" in p50.badge_text
    assert "zero weight bytes" in card.weights


def test_measured_card_says_recomputed(tmp_path: Path) -> None:
    card = _card(write_package(tmp_path).root)
    assert {f.badge for f in card.figures} == {Badge.MEASURED}
    assert all("recomputed from raw records (2 runs)" in f.badge_text for f in card.figures)


def test_card_follows_the_definition(tmp_path: Path) -> None:
    write_package(tmp_path)
    retracted = {"state": "retracted", "reason": "run was on the wrong node", "date": "2026-11-30"}
    edit_definition(tmp_path, lambda d: d["measurements"]["figures"][1].update(status=retracted))
    card = _card(tmp_path)
    assert "e2el-p99-c4" not in {f.id for f in card.figures}
    assert card.checks_pass


def test_card_shows_refused_claims(tmp_path: Path) -> None:
    write_package(tmp_path)
    edit_definition(tmp_path, lambda d: d["measurements"]["figures"][0].update(value=1.0))
    card = _card(tmp_path)
    assert not card.checks_pass and card.violations[0].startswith("SK101")
    refused = next(f for f in card.figures if f.id == "ttft-p50-c1")
    assert refused.badge is Badge.REFUSED and "SK101" in refused.badge_text
    others = {f.badge for f in card.figures if f.id != "ttft-p50-c1"}
    assert others == {Badge.MEASURED}


def test_a_refused_figure_is_never_badged_measured_on_any_view(tmp_path: Path) -> None:
    """catalog show (text and JSON) and catalog export run the same check."""
    write_package(tmp_path / "pkgs" / "tiny")
    edit_definition(
        tmp_path / "pkgs" / "tiny", lambda d: d["measurements"]["figures"][2].update(value=1.0)
    )
    card = _card(tmp_path / "pkgs" / "tiny")
    assert next(f for f in card.figures if f.id == "otps-gpu-c4").badge is Badge.REFUSED
    export_site(load_catalog(tmp_path / "pkgs"), tmp_path / "site")
    page = (tmp_path / "site" / "tiny-test-1.0.0.html").read_text()
    figure_html = page[page.index('data-figure="otps-gpu-c4"') :][:600]
    assert "badge-refused" in figure_html and "badge-measured" not in figure_html


def test_measured_card_shows_achieved_concurrency(tmp_path: Path) -> None:
    card = _card(write_package(tmp_path).root)
    fig = next(f for f in card.figures if f.id == "e2el-p99-c4")
    assert fig.context == "concurrency 4 (achieved 4.00), 0.0 % errors"


def test_export_writes_pages_with_the_numbers(tmp_path: Path) -> None:
    written = export_site(load_catalog(ROOT / "examples" / "packages"), tmp_path / "site").pages
    page = (tmp_path / "site" / "kimi-k3-8xb300-1.0.0.html").read_text()
    assert "18695 ms" in page and "badge-reported" in page
    assert (tmp_path / "site" / "index.html") in written
