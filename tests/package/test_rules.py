"""Each claim rule fires on a package that breaks it, and only the intended rule id is asserted."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from servekit.errors import ClaimRuleError
from servekit.package.models import Metric, Scope, Statistic
from servekit.package.rules import RULES, check, enforce
from tests.package.factories import (
    base_definition,
    default_runs,
    recompute,
    synthetic_records,
    write_package,
)

Definition = dict[str, Any]


def _rules_fired(
    tmp_path: Path, mutate: Callable[[Definition], None], runs: Any = None
) -> set[str]:
    runs = runs or default_runs()
    definition = copy.deepcopy(base_definition(runs["run-a"]))
    mutate(definition)
    report = check(write_package(tmp_path, definition, runs))
    return {v.rule for v in report.violations}


def _figure(d: Definition, fid: str) -> dict[str, Any]:
    return next(f for f in d["measurements"]["figures"] if f["id"] == fid)


def test_valid_package_passes_every_rule(tmp_path: Path) -> None:
    report = check(write_package(tmp_path))
    assert report.ok, report.violations
    assert {f.provenance.value for f in report.figures} == {"measured"}
    assert all(f.recomputed is not None for f in report.figures)
    enforce(report)  # does not raise


def test_enforce_raises_with_the_rule_id(tmp_path: Path) -> None:
    runs = default_runs()
    d = base_definition(runs["run-a"])
    _figure(d, "ttft-p50-c1")["value"] = 1.0
    with pytest.raises(ClaimRuleError) as info:
        enforce(check(write_package(tmp_path, d, runs)))
    assert [v.rule for v in info.value.violations] == ["SK101"]
    assert info.value.violations[0].field == "measurements.figures[0].value"
    assert info.value.exit_code == 4


def _set(path: str, value: Any) -> Callable[[Definition], None]:
    def mutate(d: Definition) -> None:
        *parents, last = path.split(".")
        target: Any = d
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        target[last] = value

    return mutate


CASES: dict[str, Callable[[Definition], None]] = {
    "SK101": lambda d: _figure(d, "e2el-p99-c4").update(
        value=_figure(d, "e2el-p99-c4")["value"] + 5
    ),
    "SK102": lambda d: _figure(d, "ttft-p50-c1").update(runs=[]),
    "SK103": lambda d: _figure(d, "ttft-p50-c1").update(provenance="reported", runs=[]),
    "SK105": lambda d: _figure(d, "otps-gpu-c4").pop("scope"),
    "SK106": lambda d: d["measurements"].update(
        speedups=[
            {
                "id": "s",
                "figure": "ttft-p50-c1",
                "baseline": "ttft-p50-c1",
                "value_pct": 10,
                "baseline_is_stock": False,
            }
        ]
    ),
    "SK107": lambda d: d["accuracy"].update(recovery_pct=99.5),
    "SK108": lambda d: d["accuracy"].update(method="by_construction", weights_modified=True),
    "SK109": lambda d: d["accuracy"].update(
        controls=[
            {
                "name": "same-server",
                "kind": "same_server_agreement",
                "value_pct": 78.12,
                "shows_method_unsound": True,
                "description": "two identical servers disagree",
            }
        ],
        cross_server_agreement={
            "value_pct": 91.0,
            "informational": False,
            "description": "optimized vs stock",
        },
    ),
    "SK110": _set(
        "peak_memory", {"published": True, "value_gib": 120.5, "source": "engine_preallocation"}
    ),
    "SK111": lambda d: d["cost"].update(usd_per_million_output_tokens=1.25),
    "SK112": lambda d: d["model"]["modalities"].append(
        {"modality": "vision", "component": "ViT tower", "parameters": 400}
    ),
    "SK113": _set("disclosures", []),
    "SK114": lambda d: _figure(d, "ttft-p50-c1")["measured_on"].update(engine="0.10.0"),
    "SK115": lambda d: d["workloads"][0].update(measured_requests=9),
    "SK117": lambda d: [r.update(simulator=True) for r in d["measurements"]["runs"]],
}


@pytest.mark.parametrize("rule", sorted(CASES))
def test_rule_fires(tmp_path: Path, rule: str) -> None:
    fired = _rules_fired(tmp_path, CASES[rule])
    assert rule in fired, f"{rule} did not fire; fired: {fired}"


def test_sk104_runs_that_disagree(tmp_path: Path) -> None:
    runs = {
        "run-a": synthetic_records("run-a", seed=7),
        "run-b": synthetic_records("run-b", seed=8, ttft_ms=150.0),
    }
    assert "SK104" in _rules_fired(tmp_path, lambda d: None, runs)


def test_sk104_replicates_within_tolerance_pass(tmp_path: Path) -> None:
    runs = {
        "run-a": synthetic_records("run-a", seed=7),
        "run-b": synthetic_records("run-b", seed=8, ttft_ms=120.5),
    }
    assert "SK104" not in _rules_fired(tmp_path, lambda d: None, runs)


def test_sk105_node_aggregate_must_be_per_gpu_times_count(tmp_path: Path) -> None:
    def add_node(d: Definition) -> None:
        per_gpu = _figure(d, "otps-gpu-c4")
        node = {**per_gpu, "id": "otps-node-c4", "scope": "node", "value": per_gpu["value"] * 3}
        d["measurements"]["figures"].append(node)

    assert "SK105" in _rules_fired(tmp_path, add_node)


def test_sk105_correct_node_aggregate_passes(tmp_path: Path) -> None:
    runs = default_runs()
    node_value = recompute(runs["run-a"], Metric.OUTPUT_THROUGHPUT, Statistic.VALUE, 4, Scope.NODE)

    def add_node(d: Definition) -> None:
        per_gpu = _figure(d, "otps-gpu-c4")
        node = {
            **per_gpu,
            "id": "otps-node-c4",
            "scope": "node",
            "value": round(node_value, 1),
        }
        d["measurements"]["figures"].append(node)

    assert _rules_fired(tmp_path, add_node, runs) == set()


def test_sk106_speedup_below_contract(tmp_path: Path) -> None:
    def speedup(d: Definition) -> None:
        fig = _figure(d, "ttft-p50-c1")
        base = {**fig, "id": "ttft-p50-c1-stock", "value": round(fig["value"] * 1.01, 1)}
        d["measurements"]["figures"].append(base)
        gain = (base["value"] / fig["value"] - 1) * 100
        d["measurements"]["speedups"] = [
            {"id": "s", "figure": fig["id"], "baseline": base["id"], "value_pct": round(gain, 2),
             "baseline_is_stock": True}
        ]  # fmt: skip

    runs = default_runs()
    fired = _rules_fired(tmp_path, speedup, runs)
    assert "SK106" in fired


def test_sk111_cost_with_a_sourced_rate_is_recomputed(tmp_path: Path) -> None:
    def cost(d: Definition, usd: float) -> None:
        fig = _figure(d, "otps-gpu-c4")
        node_tps = fig["value"] * 2
        d["cost"].update(
            node_hourly_rate={
                "usd_per_node_hour": 7.0,
                "source": "provider price list",
                "date": "2026-11-30",
                "covers_whole_node": True,
            },
            throughput_figure="otps-gpu-c4",
            usd_per_million_output_tokens=usd if usd else round(7.0 / (node_tps * 3600) * 1e6, 4),
        )

    assert "SK111" not in _rules_fired(tmp_path / "ok", lambda d: cost(d, 0))
    assert "SK111" in _rules_fired(tmp_path / "bad", lambda d: cost(d, 0.01))


def test_sk116_failed_requests_refuse_the_figure(tmp_path: Path) -> None:
    runs = {
        "run-a": synthetic_records("run-a", seed=7, failures=1),
        "run-b": synthetic_records("run-b", seed=8),
    }
    assert "SK116" in _rules_fired(tmp_path, lambda d: None, runs)


def test_retracted_figures_are_not_checked_or_shown(tmp_path: Path) -> None:
    def retract(d: Definition) -> None:
        _figure(d, "ttft-p50-c1").update(
            value=1.0, status={"state": "retracted", "reason": "wrong run", "date": "2026-11-30"}
        )

    assert _rules_fired(tmp_path, retract) == set()


def test_every_rule_has_a_test() -> None:
    tested = set(CASES) | {"SK104", "SK116"}
    assert tested == set(RULES), f"untested rules: {set(RULES) - tested}"
