"""Cards read every number from the package definition and label its provenance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from servekit.catalog import Badge, Card, Catalog, build_card, export_site, load_catalog
from servekit.catalog.listing import Query, list_cards
from servekit.catalog.pages import load_entry, package_page
from servekit.catalog.site import StaticLinks, render_index, render_package
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


EXAMPLES = ROOT / "examples" / "packages"


def _pages(directory: Path) -> tuple[str, str, str]:
    """The card as the index shows it, and the package page as exported and as served."""
    catalog = Catalog([load_entry(directory)])
    entry = catalog.entries[0]
    listing = list_cards(catalog.cards, Query(), all_facets=catalog.facets)
    index = render_index(listing, StaticLinks(), live=False)
    card = index[index.index('<article class="card"') : index.index("</article>")]
    page = package_page(catalog, entry)
    return (
        card,
        render_package(page, StaticLinks(), live=False),
        render_package(page, StaticLinks(), live=True),
    )


def test_a_placeholder_commit_is_shown_whole_and_warned_about() -> None:
    card = _card(K3)
    assert card.model_commit == "0" * 40 and card.engine_commit == "f68f4fdd"
    assert any("placeholder" in w and "0" * 40 in w for w in card.warnings)
    for html in _pages(K3):
        assert "0" * 40 in html and "is a placeholder, not a real commit" in html
        assert "f68f4fdd</code> (abbreviated in the package" in html  # said, not hidden
    llama = _card(EXAMPLES / "llama-850m-h200")
    assert llama.warnings == () and llama.model_commit in llama.model  # never cut


def test_a_draft_says_so_and_is_never_offered_for_sale() -> None:
    tiny = EXAMPLES / "tiny-sim"
    card = _card(tiny)
    assert card.draft and card.status == "draft"
    index_card, exported, served = _pages(tiny)
    assert "badge-draft" in index_card and "draft: not for sale" in index_card
    assert "shown for review only, and not for sale" in exported
    assert 'id="buy"' not in served
    assert 'id="buy"' in _pages(EXAMPLES / "llama-850m-h200")[2]  # a published one is


def test_file_counts_are_those_of_the_pin_file() -> None:
    llama = EXAMPLES / "llama-850m-h200"
    pinned = json.loads((llama / "model" / "pin.json").read_text())["files"]
    card = _card(llama)
    assert len(pinned) == 8 and card.weights_files.startswith("8 files (2 weight shards)")
    for html in _pages(llama):
        assert "8 files (2 weight shards)" in html
        assert "in 2 files" not in html  # the shard count is not the file count


@pytest.mark.parametrize("name", ["tiny-sim", "llama-850m-h200", "smollm2-135m-vllm-h200"])
def test_weights_not_on_the_hub_are_never_said_to_be_pulled_from_it(name: str) -> None:
    directory = EXAMPLES / name
    card = _card(directory)
    assert "not pulled from the Hugging Face Hub" in card.weights
    for html in (card.weights, *_pages(directory)):
        assert "pulled by your node" not in html and "pulls them from" not in html
        assert f"huggingface.co/{card.model_repo}" not in html


def test_a_weights_source_disclosure_is_what_takes_the_hub_off(tmp_path: Path) -> None:
    write_package(tmp_path)
    assert "pulled by your node from huggingface.co/" in _card(tmp_path).weights
    disclosure = {"topic": "weights_source", "title": "Private weights", "text": "Ask us."}
    edit_definition(tmp_path, lambda d: d["disclosures"].append(disclosure))
    weights = _card(tmp_path).weights
    assert "huggingface.co" not in weights and 'see the disclosure "Private weights"' in weights
