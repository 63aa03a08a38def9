"""Build package directories for tests: a valid measured package, then break it on purpose.

Evidence is synthetic and deterministic: each request's TTFT and per-token interval
come from fixed values plus a small seeded spread, so every figure has one exact
recomputation. ``write_package`` lays out package.yaml, evidence/, licenses/, build/.
"""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from servekit.package.evidence import (
    RequestRecord,
    RunHeader,
    ServeConfig,
    WorkloadSpec,
    dump_evidence,
)
from servekit.package.load import LoadedPackage, load_package
from servekit.package.models import Metric, Scope, Statistic
from servekit.package.rules.pin import listing_digest
from servekit.package.stats import figure_value, summarize
from tests.yamlio import dump_yaml

ENGINE = "0.11.0"
HARDWARE = "2x H200"
GPUS = 2
SERVE_ARGV = ("vllm", "serve", "test/tiny", "--tensor-parallel-size", "2")
PIN_PATH = "model/pin.json"
PIN_FILES = [
    {"path": "model.safetensors", "size": 996, "sha256": hashlib.sha256(b"weights").hexdigest()},
    {"path": "config.json", "size": 4, "sha256": hashlib.sha256(b"conf").hexdigest()},
]


def synthetic_records(
    run: str,
    concurrencies: tuple[int, ...] = (1, 4),
    measured: int = 8,
    warmup: int = 1,
    ttft_ms: float = 120.0,
    tpot_ms: float = 15.0,
    output_tokens: int = 32,
    prompt_tokens: int = 512,
    seed: int = 7,
    failures: int = 0,
    number: int | None = None,
) -> list[RequestRecord]:
    """A closed loop as ``bench run`` drives one: ``concurrency`` workers, each sending its
    next request as its last one ends; each concurrency's warmups first, then its measured
    requests. Ids follow ``bench run``'s ``r{run}-c{conc}-{w|m}{index}``."""
    rng = random.Random(seed)
    number = number if number is not None else seed
    records: list[RequestRecord] = []
    clock, seq = 0.0, 0
    for conc in concurrencies:
        for kind, count in (("w", warmup), ("m", measured)):
            free = [clock] * conc
            for i in range(count):
                worker = min(range(conc), key=free.__getitem__)
                send = free[worker] + 0.0002
                failed = kind == "m" and i >= measured - failures
                records.append(
                    _record(run, number, conc, kind, i, seq, send, rng, failed, output_tokens,
                            prompt_tokens, ttft_ms, tpot_ms)
                )  # fmt: skip
                free[worker] = records[-1].t_end or send
                seq += 1
            clock = max(free) + 0.001
    return records


def _record(
    run: str, number: int, conc: int, kind: str, i: int, seq: int, send: float,
    rng: random.Random, failed: bool, output_tokens: int, prompt_tokens: int,
    ttft_ms: float, tpot_ms: float,
) -> RequestRecord:  # fmt: skip
    ttft = (ttft_ms + rng.uniform(-2, 2)) / 1000
    gap = (tpot_ms + rng.uniform(-0.5, 0.5)) / 1000
    events = tuple(send + ttft + k * gap for k in range(output_tokens))
    return RequestRecord(
        id=f"r{number}-c{conc}-{kind}{i:04d}",
        run=run,
        concurrency=conc,
        warmup=kind == "w",
        seq=seq,
        content_parts=("text",),
        t_start=send - 0.0001,
        t_send=send,
        t_first_event=send + ttft,
        t_first_content=None if failed else send + ttft,
        t_content=() if failed else events,
        t_end=events[-1] + 0.001,
        prompt_tokens=prompt_tokens,
        completion_tokens=None if failed else output_tokens,
        requested_output_tokens=output_tokens,
        requested_prompt_tokens=prompt_tokens,
        http_status=500 if failed else 200,
        error="synthetic failure" if failed else None,
    )


def _span(records: list[RequestRecord]) -> float:
    return max((r.t_end or r.t_send for r in records), default=60.0)


def _workload(records: list[RequestRecord]) -> WorkloadSpec:
    """What ``bench run`` was asked to send, read back from the records it wrote."""
    concs = tuple(sorted({r.concurrency for r in records})) or (1, 4)
    first = [r for r in records if r.concurrency == concs[0]]
    return WorkloadSpec(
        prompt_min=512, prompt_max=512, output_tokens=32, concurrencies=concs,
        requests=sum(not r.warmup for r in first) or 8, warmup=sum(r.warmup for r in first),
    )  # fmt: skip


def header(
    run: str,
    gpus: int = GPUS,
    simulator: bool = False,
    index: int = 0,
    records: list[RequestRecord] | None = None,
) -> RunHeader:
    start = dt.datetime(2026, 11, 30, tzinfo=dt.UTC) + dt.timedelta(minutes=10 * index)
    return RunHeader(
        run=run,
        run_uid=f"uid-{run}",
        endpoint="http://127.0.0.1:8000/v1",
        model="test/tiny",
        api="completions",
        engine_version=ENGINE,
        engine_name="vllm",
        served_models=("test/tiny",),
        hardware=HARDWARE,
        workload=_workload(records or []),
        serve=ServeConfig(argv=SERVE_ARGV, source="--serve-command"),
        requests_sent=len(records) if records is not None else None,
        servekit_version="test",
        simulator=simulator,
        seed=7,
        host="test-host",
        gpus=gpus,
        started_at=start.isoformat(),
        ended_at=(start + dt.timedelta(seconds=_span(records or []))).isoformat(),
    )


def recompute(
    records: list[RequestRecord], metric: Metric, stat: Statistic, conc: int, scope: Scope | None
) -> float:
    return figure_value(summarize(records, conc), metric, stat, scope, GPUS)


def _figure(
    fid: str, metric: Metric, stat: Statistic, conc: int, value: float, **extra: Any
) -> dict[str, Any]:
    return {
        "id": fid,
        "label": fid,
        "metric": metric.value,
        "statistic": stat.value,
        "concurrency": conc,
        "value": value,
        "decimals": 1,
        "provenance": "measured",
        "measured_on": {"engine": ENGINE, "hardware": HARDWARE, "workload": "w"},
        "runs": ["run-a", "run-b"],
        **extra,
    }


def base_definition(records: list[RequestRecord]) -> dict[str, Any]:
    """A valid measured package whose figures equal their recomputation from ``records``."""

    def value(metric: Metric, stat: Statistic, conc: int, scope: Scope | None = None) -> float:
        return round(recompute(records, metric, stat, conc, scope), 1)

    figures = [
        _figure("ttft-p50-c1", Metric.TTFT, Statistic.P50, 1, value(Metric.TTFT, Statistic.P50, 1)),
        _figure("e2el-p99-c4", Metric.E2EL, Statistic.P99, 4, value(Metric.E2EL, Statistic.P99, 4)),
        _figure(
            "otps-gpu-c4",
            Metric.OUTPUT_THROUGHPUT,
            Statistic.VALUE,
            4,
            value(Metric.OUTPUT_THROUGHPUT, Statistic.VALUE, 4, Scope.PER_GPU),
            scope="per_gpu",
        ),
    ]
    return {
        "id": "tiny-test",
        "name": "Tiny test package",
        "version": "1.0.0",
        "status": "published",
        "summary": "A package for tests.",
        "publisher": "servekit tests",
        "published": "2026-11-30",
        "model": {
            "repo": "test/tiny",
            "commit": "a" * 40,
            "tree_digest": listing_digest(PIN_FILES),
            "total_bytes": 1000,
            "files": PIN_PATH,
            "shard_count": 1,
            "parameters": {"total": 1000},
            "modalities": [{"modality": "text"}],
            "context_length": 2048,
            "license": {
                "name": "Apache-2.0",
                "file": "licenses/MODEL_LICENSE.md",
                "modifications": "none",
            },
        },
        "engine": {
            "name": "vllm",
            "version": ENGINE,
            "source_repo": "vllm-project/vllm",
            "source_commit": "c" * 40,
            "build": "wheel",
        },
        "serve": {"entrypoint": ["vllm", "serve"], "args": ["--tensor-parallel-size", "2"]},
        "hardware": {
            "target": {
                "gpu": "H200",
                "count": GPUS,
                "memory_per_gpu_gb": 141,
                "interconnect": "NVLink",
            }
        },
        "workloads": [
            {
                "id": "w",
                "description": "synthetic",
                "dataset": "synthetic prompts",
                "prompt_tokens": {"min": 512, "max": 512},
                "output_tokens": 32,
                "concurrencies": [1, 4],
                "warmup_requests": 1,
                "measured_requests": 8,
                "seed": 7,
                "context_length": 2048,
            }
        ],
        "measurements": {
            "tolerance_pct": 2.0,
            "runs": [
                {
                    "id": "run-a",
                    "file": "evidence/run-a.jsonl",
                    "workload": "w",
                    "date": "2026-11-30",
                },
                {
                    "id": "run-b",
                    "file": "evidence/run-b.jsonl",
                    "workload": "w",
                    "date": "2026-11-30",
                },
            ],
            "figures": figures,
        },
        "accuracy": {
            "method": "not_applicable",
            "claim": "none",
            "methodology": "random weights",
            "weights_modified": False,
            "absent_reason": "random weights have no accuracy to measure",
            "gate": "not_run",
        },
        "disclosures": [
            {"topic": "context", "title": "Long context", "text": "Only 544 tokens were measured."}
        ],
        "peak_memory": {"published": False},
        "cost": {"as_of": "2026-11-30", "note": "no rate"},
        "license": {
            "id": "test",
            "name": "Test",
            "version": "1",
            "date": "2026-11-30",
            "file": "licenses/PACKAGE_LICENSE.md",
        },
        "pricing": {"usd": 0, "tier": "standard"},
    }


def write_package(
    root: Path,
    definition: dict[str, Any] | None = None,
    runs: dict[str, list[RequestRecord]] | None = None,
    gpus: int = GPUS,
) -> LoadedPackage:
    """Write a package directory and load it. Defaults give a valid measured package."""
    runs = runs if runs is not None else default_runs()
    definition = copy.deepcopy(definition or base_definition(runs["run-a"]))
    (root / "evidence").mkdir(parents=True, exist_ok=True)
    (root / "licenses").mkdir(exist_ok=True)
    for index, (name, records) in enumerate(runs.items()):
        simulator = any(
            r.get("simulator") for r in definition["measurements"]["runs"] if r["id"] == name
        )
        text = dump_evidence(header(name, gpus, simulator, index, records), records)
        (root / "evidence" / f"{name}.jsonl").write_text(text)
    (root / "licenses" / "MODEL_LICENSE.md").write_text("model licence\n")
    (root / PIN_PATH).parent.mkdir(exist_ok=True)
    (root / PIN_PATH).write_text(json.dumps({"files": PIN_FILES}))
    (root / "licenses" / "PACKAGE_LICENSE.md").write_text("package licence\n")
    (root / "package.yaml").write_text(dump_yaml(definition))
    return load_package(root)


def default_runs() -> dict[str, list[RequestRecord]]:
    return {
        "run-a": synthetic_records("run-a", seed=7, number=1),
        "run-b": synthetic_records("run-b", seed=8, number=2),
    }


def edit_definition(root: Path, mutate: Callable[[dict[str, Any]], object]) -> None:
    """Load ``root/package.yaml``, apply ``mutate`` to the mapping, write it back."""
    path = root / "package.yaml"
    data = yaml.safe_load(path.read_text())
    mutate(data)
    path.write_text(dump_yaml(data))
