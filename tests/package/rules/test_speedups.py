"""Speedups: a valid speedup over a recorded stock baseline, then one false claim each."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from servekit.package.models import Metric, Statistic
from tests.package.factories import recompute, synthetic_records
from tests.package.rules.helpers import Definition, Lines, figure, fired, report, run_def

RUNS = {
    "run-a": synthetic_records("run-a", seed=7, number=1),
    "run-b": synthetic_records("run-b", seed=8, number=2),
    "base-a": synthetic_records("base-a", seed=9, number=3, ttft_ms=160.0),
    "base-b": synthetic_records("base-b", seed=10, number=4, ttft_ms=160.0),
}


def with_speedup(d: Definition, **speedup: Any) -> None:
    """Add stock baseline runs and figure, and a true speedup of TTFT p50 at concurrency 1."""
    for rid in ("base-a", "base-b"):
        d["measurements"]["runs"].append(
            {**run_def(d, "run-a"), "id": rid, "file": f"evidence/{rid}.jsonl", "config": "stock"}
        )
    fig = figure(d, "ttft-p50-c1")
    base_value = round(recompute(RUNS["base-a"], Metric.TTFT, Statistic.P50, 1, None), 1)
    d["measurements"]["figures"].append(
        {**fig, "id": "ttft-p50-c1-stock", "value": base_value, "runs": ["base-a", "base-b"]}
    )
    gain = round((base_value / fig["value"] - 1) * 100, 2)
    d["measurements"]["speedups"] = [
        {"id": "ttft", "figure": fig["id"], "baseline": "ttft-p50-c1-stock", "value_pct": gain, "baseline_is_stock": True, **speedup}
    ]  # fmt: skip


def _tuned(lines: Lines) -> None:
    lines[0]["serve"]["argv"] += ["--enable-chunked-prefill", "--max-num-seqs", "512"]


def _other_seed(lines: Lines) -> None:
    for r in lines[1:]:
        r["requested_prompt_tokens"] = 511


def _v1_without_serve(lines: Lines) -> None:
    lines[0]["format"] = "servekit.bench/v1"
    for key in (
        "serve",
        "requests_sent",
        "run_uid",
        "workload",
        "hardware",
        "engine_name",
        "served_models",
    ):
        lines[0].pop(key)


CASES: dict[str, dict[str, Any]] = {
    "SK106": {"mutate": lambda d: with_speedup(d, baseline_is_stock=False)},
    "SK130": {"mutate": with_speedup, "evidence": {"base-a": _other_seed}},
    "SK131": {"mutate": with_speedup, "evidence": {"base-a": _tuned}},
}  # fmt: skip


@pytest.mark.parametrize("rule", sorted(CASES))
def test_rule_refuses(tmp_path: Path, rule: str) -> None:
    assert rule in fired(tmp_path, runs=RUNS, **CASES[rule])


def test_true_speedup_over_recorded_stock_baseline_passes(tmp_path: Path) -> None:
    assert fired(tmp_path, with_speedup, RUNS) == set()


def test_sk106_speedup_below_contract(tmp_path: Path) -> None:
    def small(d: Definition) -> None:
        with_speedup(d)
        d["measurements"]["improvement_contract_pct"] = 1000

    assert "SK106" in fired(tmp_path, small, RUNS)


def test_sk106_contract_lowered_to_fit(tmp_path: Path) -> None:
    def lowered(d: Definition) -> None:
        with_speedup(d)
        d["measurements"]["improvement_contract_pct"] = 0.5

    assert "SK106" in fired(tmp_path, lowered, RUNS)


def test_sk106_reported_figure_over_a_measured_baseline(tmp_path: Path) -> None:
    def reported(d: Definition) -> None:
        with_speedup(d)
        source = {"name": "x", "reference": "y", "date": "2026-11-01",
                  "workload": {"output_tokens": 32, "concurrency": 1}}  # fmt: skip
        figure(d, "ttft-p50-c1").update(provenance="reported", runs=[], source=source)

    assert "SK106" in fired(tmp_path, reported, RUNS)


def test_sk106_zero_figure_is_refused_not_a_crash(tmp_path: Path) -> None:
    def zero(d: Definition) -> None:
        with_speedup(d)
        figure(d, "ttft-p50-c1")["value"] = 0

    assert "SK106" in fired(tmp_path, zero, RUNS)


def test_sk131_v1_baseline_needs_its_serve_configuration(tmp_path: Path) -> None:
    evidence: dict[str, Callable[[Lines], object]] = {"base-a": _v1_without_serve}
    assert "SK131" in fired(tmp_path / "a", with_speedup, RUNS, evidence=evidence)

    def declared(d: Definition) -> None:
        with_speedup(d)
        run_def(d, "base-a")["serve"] = {
            "argv": ["vllm", "serve", "test/tiny", "--tensor-parallel-size", "2"]
        }

    assert "SK131" not in fired(tmp_path / "b", declared, RUNS, evidence=evidence)


def test_sk131_tuning_environment_is_not_stock(tmp_path: Path) -> None:
    def env(lines: Lines) -> None:
        lines[0]["serve"]["env"] = {"VLLM_ATTENTION_BACKEND": "FLASHINFER"}

    assert "SK131" in fired(tmp_path, with_speedup, RUNS, evidence={"base-a": env})


# --- an attacker's variants: a baseline tuned (or starved) in ways the flag list misses --


def _argv(*extra: str, base: tuple[str, ...] | None = None) -> Callable[[Lines], object]:
    def edit(lines: Lines) -> None:
        argv = list(base) if base is not None else lines[0]["serve"]["argv"]
        lines[0]["serve"]["argv"] = [*argv, *extra]

    return edit


_ENV_IN_ARGV = ("env", "VLLM_ATTENTION_BACKEND=FLASHINFER", "vllm", "serve", "test/tiny",
                "--tensor-parallel-size", "2")  # fmt: skip
_TP1 = ("vllm", "serve", "test/tiny", "--tensor-parallel-size", "1")
_TUNED_BASELINES: dict[str, Callable[[Lines], object]] = {
    "environment set inside the argument vector": _argv(base=_ENV_IN_ARGV),
    "tuning flag spelled with underscores": _argv("--max_num_seqs", "512"),
    "starved of KV cache by a load flag": _argv("--gpu-memory-utilization", "0.3"),
    "on fewer GPUs than the optimized run": _argv(base=_TP1),
    "tuning inside sh -c": _argv(base=("sh", "-c", "vllm serve test/tiny --max-num-seqs 512")),
}


@pytest.mark.parametrize("edit", list(_TUNED_BASELINES.values()), ids=list(_TUNED_BASELINES))
def test_sk131_baseline_that_is_not_stock(tmp_path: Path, edit: Callable[[Lines], object]) -> None:
    assert "SK131" in fired(tmp_path, with_speedup, RUNS, evidence={"base-a": edit, "base-b": edit})


def test_sk131_naming_flags_may_differ_from_the_optimized_run(tmp_path: Path) -> None:
    own_port = _argv("--port", "8001", "--served-model-name", "stock")
    evidence = {"base-a": own_port, "base-b": own_port}
    assert "SK131" not in fired(tmp_path, with_speedup, RUNS, evidence=evidence)


# --- what each refusal says ------------------------------------------------------------


def _says(root: Path, rule: str, mutate: Any, **kwargs: Any) -> list[str]:
    return [v.message for v in report(root, mutate, RUNS, **kwargs).violations if v.rule == rule]


def test_sk106_a_speedup_over_a_figure_that_does_not_exist(tmp_path: Path) -> None:
    mutate = lambda d: with_speedup(d, baseline="ttft-p50-c1-old")  # noqa: E731
    messages = _says(tmp_path, "SK106", mutate)
    assert messages == ["speedup 'ttft' names a figure or baseline that does not exist"]


def test_sk106_a_speedup_over_another_metric(tmp_path: Path) -> None:
    mutate = lambda d: with_speedup(d, baseline="e2el-p99-c4")  # noqa: E731
    assert any("compares figures from different" in m for m in _says(tmp_path, "SK106", mutate))


def test_sk106_a_stated_percentage_the_figures_do_not_give(tmp_path: Path) -> None:
    mutate = lambda d: with_speedup(d, value_pct=99.0)  # noqa: E731
    assert any("states 99 % but the figures give" in m for m in _says(tmp_path, "SK106", mutate))
