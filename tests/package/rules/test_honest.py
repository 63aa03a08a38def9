"""Honest packages the attacker's tests sit beside: variations of the examples that must
pass every rule (a checker that refuses these is as wrong as one that accepts a lie)."""

from __future__ import annotations

from pathlib import Path

from servekit.package.models import Metric, Scope, Statistic
from tests.package.factories import default_runs, recompute, synthetic_records
from tests.package.rules.helpers import Definition, Lines, figure, fired, node_value, run_def

RUNS = default_runs()

GRID = (1, 4, 8)
GRID_RUNS = {
    "run-a": synthetic_records(
        "run-a", concurrencies=GRID, measured=16, warmup=2, seed=7, number=1
    ),
    "run-b": synthetic_records(
        "run-b", concurrencies=GRID, measured=16, warmup=2, seed=8, number=2
    ),
}


def test_another_concurrency_grid_passes(tmp_path: Path) -> None:
    def grid(d: Definition) -> None:
        d["workloads"][0].update(concurrencies=list(GRID), measured_requests=16, warmup_requests=2)
        recs = GRID_RUNS["run-a"]
        for fid, metric, stat, conc, scope in (
            ("e2el-p99-c4", Metric.E2EL, Statistic.P99, 8, None),
            ("otps-gpu-c4", Metric.OUTPUT_THROUGHPUT, Statistic.VALUE, 8, Scope.PER_GPU),
        ):
            value = round(recompute(recs, metric, stat, conc, scope), 1)
            figure(d, fid).update(concurrency=conc, value=value)

    assert fired(tmp_path, grid, GRID_RUNS) == set()


def test_free_package_with_a_node_figure_beside_per_gpu_passes(tmp_path: Path) -> None:
    def free(d: Definition) -> None:
        d["pricing"] = {"usd": 0, "tier": "standard"}
        per_gpu = figure(d, "otps-gpu-c4")
        d["measurements"]["figures"].append(
            {**per_gpu, "id": "otps-node-c4", "scope": "node", "value": node_value(RUNS, 4)}
        )

    assert fired(tmp_path, free, RUNS) == set()


def test_reported_figures_only_pass_without_a_pin_file(tmp_path: Path) -> None:
    def reported(d: Definition) -> None:
        d["model"].pop("files")
        d["measurements"]["runs"] = []
        source = {"name": "Publisher page", "reference": "https://example.org",
                  "date": "2026-11-01"}  # fmt: skip
        for f in d["measurements"]["figures"]:
            workload = {
                "output_tokens": 32,
                "concurrency": f["concurrency"],
                "requests": 8,
                "warmup": 1,
                "modalities": ["text"],
            }
            f.update(provenance="reported", runs=[], source={**source, "workload": workload})

    assert fired(tmp_path, reported) == set()


_V2_ONLY = ("serve", "requests_sent", "run_uid", "workload", "hardware", "engine_name",
            "served_models")  # fmt: skip


def _as_v1(lines: Lines) -> None:
    """What servekit bench run wrote before evidence v2: no v2 header fields, no seq or parts."""
    lines[0]["format"] = "servekit.bench/v1"
    for key in _V2_ONLY:
        lines[0].pop(key)
    for r in lines[1:]:
        r.pop("seq")
        r.pop("content_parts")


def test_v1_evidence_with_its_serve_configuration_and_disclosures_passes(tmp_path: Path) -> None:
    def disclosed(d: Definition) -> None:
        for rid in ("run-a", "run-b"):
            run_def(d, rid)["serve"] = {
                "argv": ["vllm", "serve", "test/tiny", "--tensor-parallel-size", "2"]
            }
        d["disclosures"].append(
            {"topic": "evidence", "title": "Evidence format v1",
             "text": "The runs predate evidence v2; what v1 cannot show is listed."}
        )  # fmt: skip

    result = fired(tmp_path, disclosed, evidence={"run-a": _as_v1, "run-b": _as_v1})
    assert result == set()


def test_honest_replicates_days_apart_on_the_same_server_pass(tmp_path: Path) -> None:
    def later(lines: Lines) -> None:
        for key in ("started_at", "ended_at"):
            lines[0][key] = lines[0][key].replace("2026-11-30", "2026-12-02")

    def dated(d: Definition) -> None:  # the run's date and the publication follow it (SK137)
        run_def(d, "run-b")["date"] = d["published"] = "2026-12-02"

    assert fired(tmp_path, dated, evidence={"run-b": later}) == set()
