"""Tuning (SK140): figures rest on confirmation runs, never on a search's selection runs,
and a tuned speedup is carried by its confirmation runs' test."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.package.factories import synthetic_records
from tests.package.rules.helpers import Definition, Lines, figure, fired, report, run_def
from tests.package.rules.test_speedups import RUNS, with_speedup

MORE = {  # a third and fourth run a side: the test needs 4
    **RUNS,
    "run-c": synthetic_records("run-c", seed=11, number=5),
    "run-d": synthetic_records("run-d", seed=12, number=6),
    "base-c": synthetic_records("base-c", seed=13, number=7, ttft_ms=160.0),
    "base-d": synthetic_records("base-d", seed=14, number=8, ttft_ms=160.0),
}


def _mark(role: str, candidate: str) -> Callable[[Lines], None]:
    def edit(lines: Lines) -> None:
        lines[0]["tune"] = {"role": role, "session": "s1", "candidate": candidate}

    return edit


def _confirmed(runs: dict[str, Any]) -> dict[str, Callable[[Lines], None]]:
    return {r: _mark("confirmation", "stock" if r.startswith("base") else "c003") for r in runs}


def _four_a_side(d: Definition) -> None:
    with_speedup(d)
    for rid in ("run-c", "run-d", "base-c", "base-d"):
        stock = rid.startswith("base")
        d["measurements"]["runs"].append({**run_def(d, "run-a"), "id": rid, "file": f"evidence/{rid}.jsonl",
                                          **({"config": "stock"} if stock else {})})  # fmt: skip
    for f in d["measurements"]["figures"]:
        extra = ["base-c", "base-d"] if f["id"].endswith("-stock") else ["run-c", "run-d"]
        f["runs"] = [*f["runs"], *extra]


def test_a_confirmed_tuned_speedup_passes(tmp_path: Path) -> None:
    assert fired(tmp_path, _four_a_side, MORE, evidence=_confirmed(MORE)) == set()


def test_sk140_figure_on_a_selection_run(tmp_path: Path) -> None:
    got = report(
        tmp_path, runs=RUNS, mutate=with_speedup, evidence={"run-a": _mark("selection", "c003")}
    )
    [v, *_] = [v for v in got.violations if v.rule == "SK140"]
    assert "rests on run run-a, a selection run of servekit tune" in v.message
    assert "ttft-p50-c1" in v.figures


def test_sk140_speedup_on_too_few_confirmation_runs(tmp_path: Path) -> None:
    got = report(tmp_path, runs=RUNS, mutate=with_speedup, evidence=_confirmed(RUNS))
    assert any(v.rule == "SK140" and "at least 4 a side" in v.message for v in got.violations)


def test_sk140_speedup_mixing_confirmation_and_unmarked_runs(tmp_path: Path) -> None:
    marks = _confirmed(MORE)
    del marks["base-d"]
    got = report(tmp_path, _four_a_side, MORE, evidence=marks)
    assert any(v.rule == "SK140" and "mixes runs" in v.message for v in got.violations)


def test_sk140_speedup_stated_above_its_confirmation(tmp_path: Path) -> None:
    def inflate(d: Definition) -> None:
        _four_a_side(d)
        stock = figure(d, "ttft-p50-c1-stock")
        stock["runs"] = ["base-a", "base-b", "base-c", "base-d"]
        d["measurements"]["speedups"][0]["value_pct"] += 50  # SK106 refuses it too

    got = report(tmp_path, inflate, MORE, evidence=_confirmed(MORE))
    assert any(v.rule == "SK140" and "more than the" in v.message for v in got.violations)


def test_sk140_speedup_whose_confirmation_is_not_significant(tmp_path: Path) -> None:
    def same(d: Definition) -> None:
        _four_a_side(d)
        for f in d["measurements"]["figures"]:  # the stock figure on tuned runs: no difference
            if f["id"].endswith("-stock"):
                f["runs"] = ["run-a", "run-b", "run-c", "run-d"]

    got = report(tmp_path, same, MORE, evidence=_confirmed(MORE))
    assert any(
        v.rule == "SK140" and "not carried by its confirmation runs" in v.message
        for v in got.violations
    )


def _numerics(value: str) -> Callable[[Lines], None]:
    def edit(lines: Lines) -> None:
        lines[0]["tune"] = {"role": "confirmation", "session": "s1", "candidate": "c003"}
        lines[0]["serve"]["argv"] += ["--kv-cache-dtype", value]

    return edit


def test_sk141_tuned_run_changing_numerics_without_an_accuracy_check(tmp_path: Path) -> None:
    marks = {**_confirmed(MORE), "run-a": _numerics("fp8")}
    got = report(tmp_path, _four_a_side, MORE, evidence=marks)
    [v] = [v for v in got.violations if v.rule == "SK141"]
    assert "--kv-cache-dtype fp8" in v.message and "ttft-p50-c1" in v.figures
    # the run's serve command differs from the one shipped, which SK135 refuses on its own;
    # "auto" changes no numerics, so SK141 has nothing to say
    auto = {**_confirmed(MORE), "run-a": _numerics("auto")}
    assert fired(tmp_path / "auto", _four_a_side, MORE, evidence=auto) == {"SK135"}


def test_sk141_reads_only_what_the_tuned_run_changes_beyond_the_sessions_stock(
    tmp_path: Path,
) -> None:
    """A session whose stock ran with random weights (--load-format dummy) too: the tuned
    runs' dummy weights are not the tuned configuration's doing; an fp8 KV cache is."""

    def dummy(role: str, candidate: str, *more: str) -> Callable[[Lines], None]:
        def edit(lines: Lines) -> None:
            lines[0]["tune"] = {"role": role, "session": "s1", "candidate": candidate}
            lines[0]["serve"]["argv"] += ["--load-format", "dummy", *more]

        return edit

    marks = {r: dummy("confirmation", "stock" if r.startswith("base") else "c003") for r in MORE}
    got = report(tmp_path, _four_a_side, MORE, evidence=marks)
    assert not [v for v in got.violations if v.rule == "SK141"]
    marks["run-a"] = dummy("confirmation", "c003", "--kv-cache-dtype", "fp8")
    got = report(tmp_path / "fp8", _four_a_side, MORE, evidence=marks)
    [v] = [v for v in got.violations if v.rule == "SK141"]
    assert "--kv-cache-dtype fp8" in v.message and "dummy" not in v.message
