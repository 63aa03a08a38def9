"""The H200 example: figures from a real engine, recomputed from the harness's raw records."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from servekit.package import check, load_package
from servekit.weights.pinfile import read_pin
from tests.functional.helpers import ROOT, servekit
from tests.package.factories import edit_definition

EXAMPLE = ROOT / "examples" / "packages" / "llama-850m-h200"


def test_evidence_is_from_the_harness_against_a_real_engine() -> None:
    loaded = load_package(EXAMPLE)
    for run in loaded.package.measurements.runs:
        header = json.loads(loaded.path(run.file).read_text().splitlines()[0])
        assert header["format"] == "servekit.bench/v1"
        assert header["simulator"] is False and not run.simulator
        assert header["gpus"] == 1 and header["usage_source"] == "server"


def test_check_recomputes_every_figure_from_four_runs() -> None:
    result = servekit("package", "check", str(EXAMPLE), "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert len(report["figures"]) == 12
    for figure in report["figures"]:
        assert figure["provenance"] == "measured" and not figure["simulator"]
        assert len(figure["per_run"]) == 4


def test_the_declared_tolerance_is_what_lets_the_replicates_agree(tmp_path: Path) -> None:
    target = tmp_path / "pkg"
    shutil.copytree(EXAMPLE, target)
    edit_definition(target, lambda d: d["measurements"].update(tolerance_pct=2.0))
    fired = {(v.rule, v.field) for v in check(load_package(target)).violations}
    assert ("SK104", "measurements.figures[11].runs") in fired  # c32 throughput: 4.9 %
    assert ("SK104", "measurements.figures[1].runs") not in fired  # c1 TPOT: 1.7 %


def test_the_model_pin_matches_the_package() -> None:
    package = load_package(EXAMPLE).package
    pin = read_pin(EXAMPLE / "model" / "pin.json")
    assert pin.tree_digest == package.model.tree_digest
    assert pin.commit == package.model.commit
    assert pin.total_bytes == package.model.total_bytes


def test_card_shows_it_as_measured() -> None:
    result = servekit("catalog", "show", str(EXAMPLE), "--json")
    assert result.returncode == 0, result.stderr
    card = json.loads(result.stdout)
    assert {f["badge"] for f in card["figures"]} == {"measured"}
    assert card["hardware"].startswith("1x H200")
