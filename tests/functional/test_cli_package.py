from __future__ import annotations

import json
from pathlib import Path

from tests.functional.helpers import ROOT, servekit
from tests.package.factories import edit_definition, write_package

K3 = ROOT / "examples" / "packages" / "kimi-k3-8xb300"


def test_k3_check_lists_every_figure_as_reported() -> None:
    result = servekit("package", "check", str(K3), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] is True
    assert report["figures"], "the K3 example publishes figures"
    assert {f["provenance"] for f in report["figures"]} == {"reported"}
    assert all(f["recomputed"] is None and f["source"] for f in report["figures"])


def test_k3_check_text_says_measured_and_reported() -> None:
    result = servekit("package", "check", str(K3))
    assert result.returncode == 0, result.stderr
    assert "0 measured" in result.stdout and "2 reported" in result.stdout


def test_help_explains_itself() -> None:
    result = servekit("--help")
    assert result.returncode == 0
    assert "package" in result.stdout and "verify" in result.stdout


def test_missing_directory_is_a_clear_error_without_traceback() -> None:
    result = servekit("package", "check", "no/such/dir")
    assert result.returncode == 3
    assert "not a package directory" in result.stderr
    assert "Traceback" not in result.stderr


def test_schema_error_names_line_and_hides_traceback(tmp_path: Path) -> None:
    write_package(tmp_path)
    text = (tmp_path / "package.yaml").read_text().replace("  shard_count: 1", "  shard_count: x")
    (tmp_path / "package.yaml").write_text(text)
    result = servekit("package", "check", str(tmp_path))
    assert result.returncode == 3
    assert "package.yaml:" in result.stderr and "model.shard_count" in result.stderr
    assert "Traceback" not in result.stderr
    verbose = servekit("--verbose", "package", "check", str(tmp_path))
    assert "Traceback" in verbose.stderr


def test_claim_violation_exits_4_with_rule_id(tmp_path: Path) -> None:
    write_package(tmp_path)
    edit_definition(tmp_path, lambda d: d["measurements"]["figures"][0].update(value=1.0))
    result = servekit("package", "check", str(tmp_path), "--json")
    assert result.returncode == 4
    report = json.loads(result.stdout)
    assert [v["rule"] for v in report["violations"]] == ["SK101"]
    assert report["violations"][0]["fix"]
