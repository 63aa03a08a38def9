from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import numpy as np
import pytest

from servekit.bench.importers import import_vllm
from servekit.bench.summary import AGREEMENT_KEYS, parse_slos, summarize_path
from servekit.errors import BenchError, UsageError
from servekit.package.evidence import Evidence, dump_evidence

Sim = Callable[..., AbstractContextManager[str]]
Harness = Callable[..., list[Evidence]]

VLLM_KEYS = [
    f"{stat}_{metric}_ms"
    for metric in ("ttft", "tpot", "itl", "e2el")
    for stat in ("mean", "median", "p99")
]


def test_summary_json_has_vllm_keys_and_agreement(
    sim: Sim, run_harness: Harness, tmp_path: Path
) -> None:
    with sim(ttft_ms=20.0, itl_ms=4.0) as url:
        run_harness(url, runs=2, gpus=2)
    report = summarize_path(tmp_path / "out", tolerance_pct=50.0, slos=parse_slos("ttft:1000"))
    rows = report.as_json()
    assert [(r["run"], r["concurrency"]) for r in rows] == [("run-1", 2), ("run-2", 2)]
    for row in rows:
        for key in [
            "completed",
            "failed",
            "duration",
            "request_throughput",
            "output_throughput",
            "total_token_throughput",
            "output_throughput_per_gpu",
            "gpus",
            "simulator",
            "request_goodput",
            *VLLM_KEYS,
        ]:
            assert key in row, key
        assert row["output_throughput_per_gpu"] == pytest.approx(row["output_throughput"] / 2)
        assert row["request_goodput"] == pytest.approx(row["request_throughput"])
        assert row["simulator"] is True and row["runs_agree"] is True
    strict = summarize_path(tmp_path / "out", tolerance_pct=1e-9)
    assert strict.agreements[0].agree is False
    assert set(strict.agreements[0].max_difference_pct) == set(AGREEMENT_KEYS)


def test_slo_parsing() -> None:
    assert parse_slos("ttft:500,tpot:50 e2el:9000") == {"ttft": 500, "tpot": 50, "e2el": 9000}
    with pytest.raises(UsageError):
        parse_slos("itl:5")
    with pytest.raises(UsageError):
        parse_slos("ttft:fast")


def test_summary_needs_evidence(tmp_path: Path) -> None:
    with pytest.raises(BenchError, match="no evidence"):
        summarize_path(tmp_path)


def _vllm_result(with_times: bool = True) -> dict[str, object]:
    data: dict[str, object] = {
        "date": "20261130-120000",
        "backend": "openai-chat",
        "model_id": "org/model",
        "tokenizer_id": "org/model",
        "num_prompts": 3,
        "request_rate": "inf",
        "max_concurrency": 2,
        "duration": 1.5,
        "completed": 2,
        "failed": 1,
        "input_lens": [100, 120, 110],
        "output_lens": [4, 4, 0],
        "ttfts": [0.1, 0.12, 0.0],
        "itls": [[0.01, 0.02, 0.01], [0.015, 0.015, 0.02], []],
        "latencies": [0.14, 0.17, 0.0],
        "generated_texts": ["abcd", "efgh", ""],
        "errors": ["", "", "Bad Request"],
    }
    if with_times:
        data["start_times"] = [1000.0, 1000.05, 1000.2]
    return data


def test_import_vllm_recomputes_vllms_own_figures(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    data = _vllm_result()
    path.write_text(json.dumps(data))
    imported = import_vllm(path, run="vllm-1", gpus=8)
    out = tmp_path / "vllm.jsonl"
    out.write_text(dump_evidence(imported.header, imported.records))
    (row,) = summarize_path(out).as_json()
    assert row["concurrency"] == 2 and row["completed"] == 2 and row["failed"] == 1
    assert row["mean_ttft_ms"] == pytest.approx(110.0)
    assert row["median_itl_ms"] == pytest.approx(np.median([10, 20, 10, 15, 15, 20]))
    assert row["mean_tpot_ms"] == pytest.approx(np.mean([(140 - 100) / 3, (170 - 120) / 3]))
    assert row["mean_e2el_ms"] == pytest.approx(155.0)
    assert row["duration"] == pytest.approx(0.05 + 0.17)
    header = imported.header
    assert header.api == "chat" and header.usage_source == "client" and header.gpus == 8
    assert any("http_status" in m for m in header.missing_fields)
    assert not any(m.startswith("start_times") for m in header.missing_fields)
    assert imported.records[2].error == "Bad Request"


def test_import_vllm_without_start_times_says_so(tmp_path: Path) -> None:
    path = tmp_path / "old.json"
    path.write_text(json.dumps(_vllm_result(with_times=False)))
    imported = import_vllm(path, run="vllm-1", gpus=1, concurrency=5)
    assert any(m.startswith("start_times") for m in imported.header.missing_fields)
    assert {r.t_send for r in imported.records} == {0.0}
    assert imported.records[0].concurrency == 5


def test_import_vllm_refuses_a_summary_only_file(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    path.write_text(json.dumps({"completed": 3, "mean_ttft_ms": 1.0}))
    with pytest.raises(BenchError, match="--save-detailed"):
        import_vllm(path, run="v", gpus=1)
