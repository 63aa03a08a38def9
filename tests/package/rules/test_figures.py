"""Figures: recomputation, records behind a measured figure, sources, scope, attribution,
the workload a reported figure's source states."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.package.factories import default_runs
from tests.package.rules.helpers import Definition, figure, fired, node_value, report

REPORTED = {
    "provenance": "reported",
    "runs": [],
    "source": {"name": "Publisher page", "reference": "https://example.org", "date": "2026-11-01"},
}

CASES: dict[str, dict[str, Any]] = {
    "SK101": {"mutate": lambda d: figure(d, "e2el-p99-c4").update(value=figure(d, "e2el-p99-c4")["value"] + 5)},
    "SK102": {"mutate": lambda d: figure(d, "ttft-p50-c1").update(runs=[])},
    "SK103": {"mutate": lambda d: figure(d, "ttft-p50-c1").update(provenance="reported", runs=[])},
    "SK105": {"mutate": lambda d: figure(d, "otps-gpu-c4").pop("scope")},
    "SK114": {"mutate": lambda d: figure(d, "ttft-p50-c1")["measured_on"].update(engine="0.10.0")},
    "SK134": {"mutate": lambda d: figure(d, "ttft-p50-c1").update(**REPORTED)},
}  # fmt: skip


@pytest.mark.parametrize("rule", sorted(CASES))
def test_rule_refuses(tmp_path: Path, rule: str) -> None:
    assert rule in fired(tmp_path, **CASES[rule])


def test_sk105_node_aggregate_must_be_per_gpu_times_count(tmp_path: Path) -> None:
    def add_node(d: Definition) -> None:
        per_gpu = figure(d, "otps-gpu-c4")
        node = {**per_gpu, "id": "otps-node-c4", "scope": "node", "value": per_gpu["value"] * 3}
        d["measurements"]["figures"].append(node)

    assert "SK105" in fired(tmp_path, add_node)


def test_sk105_correct_node_aggregate_passes(tmp_path: Path) -> None:
    runs = default_runs()
    node = round(node_value(runs, 4), 1)

    def add_node(d: Definition) -> None:
        per_gpu = figure(d, "otps-gpu-c4")
        d["measurements"]["figures"].append(
            {**per_gpu, "id": "otps-node-c4", "scope": "node", "value": node}
        )

    assert fired(tmp_path, add_node, runs) == set()


def test_sk105_pairs_node_and_per_gpu_of_the_same_runs_only(tmp_path: Path) -> None:
    """The bug: a stock baseline's per-GPU figure at the same concurrency was paired with
    the tuned node figure, refusing an honest package."""
    runs = default_runs()
    node = round(node_value(runs, 4), 1)

    def add(d: Definition) -> None:
        per_gpu = figure(d, "otps-gpu-c4")
        d["measurements"]["figures"] += [
            {**per_gpu, "id": "otps-node-c4", "scope": "node", "value": node},
            {**per_gpu, "id": "otps-gpu-c4-stock", "value": round(per_gpu["value"] * 0.8, 1),
             "provenance": "reported", "runs": [],
             "source": {"name": "stock", "reference": "x", "date": "2026-11-01",
                        "workload": {"output_tokens": 32, "concurrency": 4}}},
        ]  # fmt: skip

    assert "SK105" not in fired(tmp_path, add, runs)


def test_sk134_reported_figure_with_its_source_workload_passes(tmp_path: Path) -> None:
    source = {
        **REPORTED["source"],
        "workload": {"output_tokens": 32, "concurrency": 1, "requests": 8, "warmup": 1},
    }  # type: ignore[dict-item]
    assert "SK134" not in fired(
        tmp_path, lambda d: figure(d, "ttft-p50-c1").update(**{**REPORTED, "source": source})
    )


def test_sk134_sources_that_disagree_need_a_disclosure(tmp_path: Path) -> None:
    def two_sources(d: Definition) -> None:
        for fid, out in (("ttft-p50-c1", 32), ("otps-gpu-c4", 64)):
            conc = figure(d, fid)["concurrency"]
            workload = {"output_tokens": out, "concurrency": conc}
            figure(d, fid).update(
                **{**REPORTED, "source": {**REPORTED["source"], "workload": workload}}
            )  # type: ignore[dict-item]
        figure(d, "otps-gpu-c4")["concurrency"] = 1
        figure(d, "otps-gpu-c4")["source"]["workload"]["concurrency"] = 1

    assert "SK134" in fired(tmp_path / "a", two_sources)

    def disclosed(d: Definition) -> None:
        two_sources(d)
        d["disclosures"].append(
            {"topic": "reported_workload", "title": "t", "text": "sources differ"}
        )

    assert "SK134" not in fired(tmp_path / "b", disclosed)


def test_sk134_source_concurrency_must_match_the_label(tmp_path: Path) -> None:
    source = {**REPORTED["source"], "workload": {"output_tokens": 32, "concurrency": 8}}  # type: ignore[dict-item]
    assert "SK134" in fired(
        tmp_path, lambda d: figure(d, "ttft-p50-c1").update(**{**REPORTED, "source": source})
    )


# --- an attacker's variants ------------------------------------------------------------


def _reported(fid: str, scope: str, value: float, name: str, **workload: int) -> dict[str, Any]:
    source = {**REPORTED["source"], "name": name,
              "workload": {"output_tokens": 32, "concurrency": 4, **workload}}  # type: ignore[dict-item]  # fmt: skip
    return {"id": fid, "label": fid, "metric": "output_throughput", "statistic": "value",
            "scope": scope, "concurrency": 4, "value": value, "provenance": "reported",
            "measured_on": {"engine": "0.11.0", "hardware": "2x H200", "workload": "w"},
            "runs": [], "source": source}  # fmt: skip


def test_sk105_reported_pair_under_source_names_spelled_apart(tmp_path: Path) -> None:
    pair = [_reported("rg", "per_gpu", 100, "Publisher page"),
            _reported("rn", "node", 300, "Publisher page ")]  # fmt: skip
    assert "SK105" in fired(tmp_path, lambda d: d["measurements"]["figures"].extend(pair))


def test_sk105_measured_pair_with_runs_in_another_order(tmp_path: Path) -> None:
    def node(d: Definition) -> None:
        d["measurements"]["figures"].append(
            {**figure(d, "otps-gpu-c4"), "id": "otps-node-c4", "scope": "node",
             "value": round(figure(d, "otps-gpu-c4")["value"] * 3, 1), "runs": ["run-b", "run-a"]}
        )  # fmt: skip

    assert "SK105" in fired(tmp_path, node)


@pytest.mark.parametrize(
    "workload",
    [{"output_tokens": 1024}, {"requests": 100}, {"warmup": 0}],
    ids=["output tokens", "requests", "warmup"],
)
def test_sk134_source_ran_another_workload_than_the_label(
    tmp_path: Path, workload: dict[str, int]
) -> None:
    fig = _reported("rep", "node", 300, "Publisher page", **workload)
    assert "SK134" in fired(tmp_path, lambda d: d["measurements"]["figures"].append(fig))


# --- what each refusal says ------------------------------------------------------------


def _says(root: Path, rule: str, mutate: Any) -> list[str]:
    return [v.message for v in report(root, mutate).violations if v.rule == rule]


def test_sk102_a_run_the_package_does_not_define_is_named(tmp_path: Path) -> None:
    mutate = lambda d: figure(d, "ttft-p50-c1").update(runs=["run-a", "run-z"])  # noqa: E731
    assert any("run-z" in m for m in _says(tmp_path, "SK102", mutate))


def test_sk103_a_reported_figure_cannot_name_runs(tmp_path: Path) -> None:
    mutate = lambda d: figure(d, "ttft-p50-c1").update(**{**REPORTED, "runs": ["run-a"]})  # noqa: E731
    assert "SK103" in fired(tmp_path, mutate)


def test_sk105_a_latency_cannot_have_a_scope(tmp_path: Path) -> None:
    mutate = lambda d: figure(d, "ttft-p50-c1").update(scope="node")  # noqa: E731
    (message,) = _says(tmp_path, "SK105", mutate)
    assert "is a latency and cannot have a scope" in message


def test_sk114_the_workload_shown_must_be_defined(tmp_path: Path) -> None:
    mutate = lambda d: figure(d, "ttft-p50-c1")["measured_on"].update(workload="long")  # noqa: E731
    assert any("workload 'long' is not defined" in m for m in _says(tmp_path, "SK114", mutate))


def test_sk114_the_concurrency_must_be_on_the_workloads_grid(tmp_path: Path) -> None:
    mutate = lambda d: figure(d, "ttft-p50-c1").update(concurrency=8)  # noqa: E731
    messages = _says(tmp_path, "SK114", mutate)
    assert any("concurrency 8 is not in workload" in m for m in messages)


def test_sk114_a_figure_shown_on_another_workload_than_its_runs(tmp_path: Path) -> None:
    def second_workload(d: Definition) -> None:
        first = d["workloads"][0]
        d["workloads"].append({**first, "id": "chat-2"})
        figure(d, "ttft-p50-c1")["measured_on"]["workload"] = "chat-2"

    messages = _says(tmp_path, "SK114", second_workload)
    assert any("measured workload" in m and "not 'chat-2'" in m for m in messages)
