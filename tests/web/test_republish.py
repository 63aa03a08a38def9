"""Re-running or retracting a measurement, then re-publishing, changes the live card."""

from __future__ import annotations

from pathlib import Path

import httpx

from servekit.catalog.publish import ENTRY_FILE, PublishedCatalog, load_published, publish
from tests.package.factories import edit_definition, synthetic_records, write_package
from tests.web.server import serving

CARD = "/packages/tiny-test/1.0.0"


def _figure_ids(html: str) -> set[str]:
    return {part.split('"', 1)[0] for part in html.split('<tr data-figure="')[1:]}


def _value(html: str, figure: str) -> str:
    row = html.split(f'<tr data-figure="{figure}">', 1)[1]
    return row.split('<td data-label="Value">')[1].split("</td>")[0]


def test_retract_and_rerun_change_the_card(tmp_path: Path) -> None:
    package, home = tmp_path / "pkg", tmp_path / "home"
    write_package(package)
    publish([package], home)
    with serving(home, PublishedCatalog(home)) as url:
        before = httpx.get(url + CARD).text
        assert {"ttft-p50-c1", "e2el-p99-c4", "otps-gpu-c4"} <= _figure_ids(before)
        ttft_before = _value(before, "ttft-p50-c1")

        # 1. retract a figure: it leaves the card and the version history says why
        retracted = {"state": "retracted", "reason": "wrong node", "date": "2026-11-30"}
        edit_definition(package, lambda d: d["measurements"]["figures"][1].update(status=retracted))
        publish([package], home)
        after_retract = httpx.get(url + CARD).text
        assert "e2el-p99-c4" not in _figure_ids(after_retract)
        assert "retracted on 2026-11-30: wrong node" in after_retract

        # 2. re-run with a slower engine: new evidence, new figures, a new number on the card
        slow = {
            run: synthetic_records(run, seed=seed, ttft_ms=240.0)
            for run, seed in (("run-a", 7), ("run-b", 8))
        }
        write_package(package, runs=slow)
        publish([package], home)
        after_rerun = httpx.get(url + CARD).text
        ttft_after = _value(after_rerun, "ttft-p50-c1")
        assert ttft_before != ttft_after
        assert float(ttft_after.split()[0]) > float(ttft_before.split()[0]) + 100
        assert "recomputed from raw records (2 runs)" in after_rerun


def test_an_entry_stored_by_another_version_is_checked_again(tmp_path: Path) -> None:
    write_package(tmp_path / "pkg")
    publish([tmp_path / "pkg"], tmp_path / "home")
    stored = next((tmp_path / "home").rglob(ENTRY_FILE))
    stored.write_text('{"package": {"schema_version": 99}, "card": {}}')
    catalog = load_published(tmp_path / "home")
    assert [e.card.id for e in catalog.entries] == ["tiny-test"]
    assert catalog.entries[0].card.checks_pass
