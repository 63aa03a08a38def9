"""The run manifest: bench run names its files; summaries read only those, and say so."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from servekit.bench.manifest import MANIFEST_FILE, select_evidence
from servekit.bench.summary import summarize_path
from servekit.errors import BenchError, EvidenceError
from servekit.package.evidence import Evidence
from tests.bench.conftest import harness

Sim = Callable[..., AbstractContextManager[str]]
Harness = Callable[..., list[Evidence]]


def test_bench_run_writes_a_manifest_of_its_files(sim: Sim, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with sim() as url:
        harness(url, out, runs=2)
    manifest = json.loads((out / MANIFEST_FILE).read_text())
    assert manifest["status"] == "complete" and manifest["runs"] == 2
    assert manifest["workload"]["requests"] == 6 and manifest["endpoint"] == url
    files = manifest["files"]
    assert [f["file"] for f in files] == ["run-1.jsonl", "run-2.jsonl"]
    assert all(f["status"] == "complete" and f["records"] == 7 for f in files)
    assert not list(out.glob("*.partial"))  # journals are gone once their run is whole


def test_stale_files_are_ignored_and_named(sim: Sim, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with sim() as url:
        harness(url, out, runs=3)
        harness(url, out, runs=1, force=True)  # run-2 and run-3 are now an older run's
    report = summarize_path(out)
    assert {g.run for g in report.groups} == {"run-1"}
    assert any("run-2.jsonl, run-3.jsonl" in note and "older run" in note for note in report.notes)
    # an explicit file is summarized whatever the manifest says
    assert {g.run for g in summarize_path([out / "run-3.jsonl"]).groups} == {"run-3"}


def test_a_changed_file_is_refused_with_both_digests(sim: Sim, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with sim() as url:
        harness(url, out)
    run = out / "run-1.jsonl"
    run.write_text(run.read_text().replace('"r1-c2-m0000"', '"r1-c2-m9999"'))
    with pytest.raises(EvidenceError, match=r"changed since manifest.json was written: sha256"):
        select_evidence([out])


def test_a_directory_without_a_manifest_says_what_it_reads(sim: Sim, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with sim() as url:
        harness(url, out, runs=2)
    (out / MANIFEST_FILE).unlink()
    selection = select_evidence([out])
    assert [p.name for p in selection.files] == ["run-1.jsonl", "run-2.jsonl"]
    (note,) = selection.notes
    assert f"has no {MANIFEST_FILE}" in note and "run-1.jsonl, run-2.jsonl" in note
    with pytest.raises(BenchError, match="no evidence at"):
        select_evidence([tmp_path / "missing"])
