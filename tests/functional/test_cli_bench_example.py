"""The tiny-sim example: figures recomputed from files `servekit bench run` wrote."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.functional.helpers import ROOT, servekit

EXAMPLE = ROOT / "examples" / "packages" / "tiny-sim"


def test_example_evidence_was_written_by_the_harness_against_the_simulator() -> None:
    for name in ("run-1.jsonl", "run-2.jsonl"):
        header = json.loads((EXAMPLE / "evidence" / name).read_text().splitlines()[0])
        assert header["format"] == "servekit.bench/v2" and header["simulator"] is True
        assert header["engine_version"].startswith("servekit-sim")
        assert header["engine_name"] == "servekit-sim" and header["hardware"] == "1x SIM-1 (no GPU)"
        assert header["served_models"] == ["servekit-examples/tiny-synthetic"]
        assert header["serve"]["argv"][:3] == ["servekit", "sim", "serve"]
        assert any(note.startswith("client event loop") for note in header["notes"])


def test_example_passes_check_with_every_figure_measured() -> None:
    result = servekit("package", "check", str(EXAMPLE), "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] is True and report["cannot_verify"] == {}
    assert {f["provenance"] for f in report["figures"]} == {"measured"}
    assert all(
        f["simulator"] and set(f["per_run"]) == {"run-1", "run-2"} for f in report["figures"]
    )


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "tiny-sim"
    shutil.copytree(EXAMPLE, target)
    return target


def test_a_changed_figure_is_refused_by_sk101(tmp_path: Path) -> None:
    package = _copy(tmp_path)
    manifest = package / "package.yaml"
    text = manifest.read_text()
    assert "      value: 120.3\n" in text
    manifest.write_text(text.replace("      value: 120.3\n", "      value: 118.0\n", 1))
    result = servekit("package", "check", str(package), "--json")
    assert result.returncode == 4
    rules = {v["rule"] for v in json.loads(result.stdout)["violations"]}
    assert rules == {"SK101"}


def test_without_the_simulator_disclosure_sk117_refuses(tmp_path: Path) -> None:
    package = _copy(tmp_path)
    manifest = package / "package.yaml"
    manifest.write_text(
        manifest.read_text().replace("  - topic: simulator\n", "  - topic: other\n")
    )
    result = servekit("package", "check", str(package), "--json")
    assert result.returncode == 4
    assert "SK117" in {v["rule"] for v in json.loads(result.stdout)["violations"]}
