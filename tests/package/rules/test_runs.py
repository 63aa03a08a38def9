"""Runs: each hides a run that does not belong, ran another workload or load, or is not
independent of another."""

from __future__ import annotations

import datetime as dt
import itertools
import random
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from servekit.package.evidence import Evidence, RequestRecord, load_evidence, prompt_target
from servekit.package.load import load_package
from servekit.package.rules import check
from servekit.package.rules.runs import (
    COPY_U,
    REST_U,
    copy_statistic,
    repeats_timings,
    rest_statistic,
)
from tests.package.factories import edit_definition, synthetic_records
from tests.package.rules.helpers import Definition, Lines, figure, fired, measured, report, run_def


def _other_engine(lines: Lines) -> None:
    lines[0]["engine_name"] = "sglang"


def _long_prompts(lines: Lines) -> None:
    for r in measured(lines, 4):
        r["requested_prompt_tokens"] = r["prompt_tokens"] = 300


def _sequential(lines: Lines) -> None:
    """Concurrency 4 relabelled from requests that ran one at a time."""
    clock = max(r["t_end"] for r in lines[1:]) + 1
    for r in measured(lines, 4):
        shift = clock - r["t_send"]
        for key in ("t_start", "t_send", "t_first_event", "t_first_content", "t_end"):
            r[key] += shift
        r["t_content"] = [t + shift for t in r["t_content"]]
        clock = r["t_end"] + 0.001


def _same_start(lines: Lines) -> None:
    lines[0]["started_at"] = "2026-11-30T00:00:00+00:00"


RUNS_DISAGREE = {
    "run-a": synthetic_records("run-a", seed=7, number=1),
    "run-b": synthetic_records("run-b", seed=8, number=2, ttft_ms=150.0),
}

CASES: dict[str, dict[str, Any]] = {
    "SK104": {"runs": RUNS_DISAGREE},
    "SK115": {"mutate": lambda d: d["workloads"][0].update(measured_requests=9)},
    "SK124": {"evidence": {"run-b": _other_engine}},
    "SK125": {"evidence": {"run-a": _long_prompts}},
    "SK126": {"evidence": {"run-a": _sequential}},
    "SK128": {"mutate": lambda d: [figure(d, f["id"]).update(runs=["run-a"]) for f in d["measurements"]["figures"]]},
    "SK129": {"evidence": {"run-b": _same_start}},
    "SK137": {"mutate": lambda d: run_def(d, "run-b").update(date="2026-11-28")},
    "SK136": {"evidence": {"run-a": lambda lines: lines[0].update(hardware=None)}},
    "SK135": {"evidence": {"run-b": lambda lines: lines[0]["serve"]["argv"].extend(["--max-num-seqs", "512"])}},
}  # fmt: skip


@pytest.mark.parametrize("rule", sorted(CASES))
def test_rule_refuses(tmp_path: Path, rule: str) -> None:
    assert rule in fired(tmp_path, **CASES[rule])


def test_sk104_tolerance_widened_to_fit(tmp_path: Path) -> None:
    mutate = lambda d: d["measurements"].update(tolerance_pct=30)  # noqa: E731
    assert "SK104" in fired(tmp_path, mutate, RUNS_DISAGREE)


def test_sk128_one_run_named_twice(tmp_path: Path) -> None:
    def twice(d: Definition) -> None:
        for f in d["measurements"]["figures"]:
            f["runs"] = ["run-a", "run-a", "run-b"]

    assert "SK128" in fired(tmp_path, twice)


def test_sk104_replicates_within_tolerance_pass(tmp_path: Path) -> None:
    runs = {
        "run-a": synthetic_records("run-a", seed=7, number=1),
        "run-b": synthetic_records("run-b", seed=8, number=2, ttft_ms=120.5),
    }
    assert "SK104" not in fired(tmp_path, runs=runs)


@pytest.mark.parametrize(
    ("field", "value"),
    [("engine_version", "0.10.0"), ("api", "chat"), ("hardware", "8x B300"), ("model", "other/model"), ("seed", 8)],
)  # fmt: skip
def test_sk124_header_fields_that_do_not_belong(tmp_path: Path, field: str, value: Any) -> None:
    assert "SK124" in fired(
        tmp_path, evidence={"run-a": lambda lines: lines[0].update({field: value})}
    )


def test_sk125_counted_prompt_tokens_far_from_the_calibrated_target(tmp_path: Path) -> None:
    def inflate(lines: Lines) -> None:
        lines[0].update(tokenizer="words; server /tokenize", workload=None)
        lines[1]["prompt_tokens"] = 600  # in the declared range once it is widened

    widen = lambda d: d["workloads"][0].update(prompt_tokens={"min": 500, "max": 600})  # noqa: E731
    result = report(tmp_path, widen, evidence={"run-a": inflate})
    messages = [v.message for v in result.violations if v.rule == "SK125"]
    assert any("counted 600 prompt tokens for a calibrated 512" in m for m in messages), messages


def test_sk125_header_workload_must_be_the_declared_one(tmp_path: Path) -> None:
    def other(lines: Lines) -> None:
        lines[0]["workload"]["output_tokens"] = 16

    assert "SK125" in fired(tmp_path, evidence={"run-a": other})


def test_sk126_tolerance_widened_to_fit(tmp_path: Path) -> None:
    mutate = lambda d: d["measurements"].update(concurrency_tolerance_pct=40)  # noqa: E731
    assert "SK126" in fired(tmp_path, mutate)


def test_sk126_achieved_concurrency_is_shown(tmp_path: Path) -> None:
    result = report(tmp_path)
    fig = next(f for f in result.figures if f.id == "e2el-p99-c4")
    assert fig.achieved_concurrency is not None
    assert all(3.6 <= v <= 4.0 for v in fig.achieved_concurrency.values())


def test_sk126_fewer_requests_than_the_concurrency(tmp_path: Path) -> None:
    def runs(n: int) -> dict[str, list[Any]]:
        return {
            "run-a": synthetic_records("run-a", seed=7, number=1, measured=n),
            "run-b": synthetic_records("run-b", seed=8, number=2, measured=n),
        }

    def declare(n: int) -> Any:
        return lambda d: d["workloads"][0].update(measured_requests=n)

    assert fired(tmp_path / "a", declare(4), runs(4)) == set()
    assert "SK126" in fired(tmp_path / "b", declare(3), runs(3))


def test_sk127_copied_file_under_another_name(tmp_path: Path) -> None:
    report(tmp_path)
    shutil.copy(tmp_path / "evidence" / "run-a.jsonl", tmp_path / "evidence" / "run-c.jsonl")

    def add_copy(d: Definition) -> None:
        d["measurements"]["runs"].append(
            {**run_def(d, "run-a"), "id": "run-c", "file": "evidence/run-c.jsonl"}
        )
        for f in d["measurements"]["figures"]:
            f["runs"] = [*f["runs"], "run-c"]

    edit_definition(tmp_path, add_copy)
    assert "SK127" in {v.rule for v in check(load_package(tmp_path)).violations}


def test_sk128_a_retracted_run_may_be_left_out(tmp_path: Path) -> None:
    def retract_b(d: Definition) -> None:
        run_def(d, "run-b")["status"] = {
            "state": "retracted",
            "reason": "engine restarted mid-run",
            "date": "2026-11-30",
        }
        for f in d["measurements"]["figures"]:
            f["runs"] = ["run-a"]

    assert fired(tmp_path, retract_b) == set()


def test_sk129_loopback_on_two_hosts_is_two_servers(tmp_path: Path) -> None:
    def other_host(lines: Lines) -> None:
        lines[0].update(started_at="2026-11-30T00:00:00+00:00", host="other-host")

    def other_host_loopback(lines: Lines) -> None:
        other_host(lines)
        lines[0]["endpoint"] = lines[0]["endpoint"].replace("127.0.0.1", "gpu-node.internal")

    assert "SK129" not in fired(tmp_path / "a", evidence={"run-b": other_host})
    both = {
        "run-a": lambda ls: ls[0].update(endpoint="http://gpu-node.internal:8000/v1"),
        "run-b": other_host_loopback,
    }
    assert "SK129" in fired(tmp_path / "b", evidence=both)


def test_sk129_shifted_copy_repeats_timings(tmp_path: Path) -> None:
    """Run b is run a's records under new ids, in another time window."""
    copied = [
        r.model_copy(update={"run": "run-b", "id": r.id.replace("r1-", "r2-")})
        for r in synthetic_records("run-a", seed=7, number=1)
    ]
    runs = {"run-a": synthetic_records("run-a", seed=7, number=1), "run-b": copied}
    assert "SK129" in fired(tmp_path, runs=runs)


# --- an attacker's variants ------------------------------------------------------------


def _copy_of_a(scale: float = 1.0, shift: float = 0.0, noise: float = 0.0) -> list[RequestRecord]:
    """Run a's records as run b: every time scaled and shifted, plus microsecond noise."""
    rng = random.Random(3)

    def moved(t: float | None) -> float | None:
        return None if t is None else t * scale + shift + rng.uniform(0, noise)

    out = []
    for r in synthetic_records("run-a", seed=7, number=1):
        content = tuple(t * scale + shift + rng.uniform(0, noise) for t in r.t_content)
        out.append(r.model_copy(update={
            "run": "run-b", "id": r.id.replace("r1-", "r2-"), "t_start": moved(r.t_start),
            "t_send": moved(r.t_send), "t_end": moved(r.t_end), "t_content": content,
            "t_first_content": content[0], "t_first_event": content[0],
        }))  # fmt: skip
    return out


@pytest.mark.parametrize(
    "copy",
    [{"scale": 1.003}, {"noise": 2e-6}, {"scale": 0.998, "shift": 0.05, "noise": 1e-6}],
    ids=["rescaled", "microsecond noise", "rescaled, shifted and noisy"],
)
def test_sk129_copy_that_no_longer_repeats_timings_exactly(
    tmp_path: Path, copy: dict[str, float]
) -> None:
    runs = {"run-a": synthetic_records("run-a", seed=7, number=1), "run-b": _copy_of_a(**copy)}
    assert "SK129" in fired(tmp_path, runs=runs)


def _overlapping(**header: str) -> Callable[[Lines], None]:
    def edit(lines: Lines) -> None:
        lines[0].update(started_at="2026-11-30T00:00:00.5+00:00", **header)
        lines[0]["ended_at"] = "2026-11-30T00:00:" + lines[0]["ended_at"][17:]

    return edit


@pytest.mark.parametrize(
    "header",
    [
        {"endpoint": "http://localhost:8000/v1/"},
        {"endpoint": "HTTP://127.0.0.1:8000"},
        {"host": "Test-Host "},
        {"ended_at": "soon"},
    ],
    ids=["loopback alias", "scheme case, no /v1", "host spelled otherwise", "no end time"],
)
def test_sk129_overlap_on_a_server_spelled_otherwise(
    tmp_path: Path, header: dict[str, str]
) -> None:
    assert "SK129" in fired(tmp_path, evidence={"run-b": _overlapping(**header)})


def test_sk129_run_without_a_wall_clock_start(tmp_path: Path) -> None:
    assert "SK129" in fired(
        tmp_path, evidence={"run-b": lambda ls: ls[0].update(started_at="yesterday")}
    )


def _third_run(ttft_ms: float = 300.0) -> dict[str, list[RequestRecord]]:
    return {
        "run-a": synthetic_records("run-a", seed=7, number=1),
        "run-b": synthetic_records("run-b", seed=8, number=2),
        "run-c": synthetic_records("run-c", seed=11, number=3, ttft_ms=ttft_ms),
    }


def test_sk128_run_left_out_by_a_config_label(tmp_path: Path) -> None:
    def relabel(d: Definition) -> None:
        d["measurements"]["runs"].append(
            {
                **run_def(d, "run-a"),
                "id": "run-c",
                "file": "evidence/run-c.jsonl",
                "config": "trial",
            }
        )

    assert "SK128" in fired(tmp_path, relabel, _third_run())


def test_sk128_run_id_defined_twice_hides_a_file(tmp_path: Path) -> None:
    def twice(d: Definition) -> None:
        d["measurements"]["runs"].append({**run_def(d, "run-a"), "file": "evidence/run-c.jsonl"})

    assert "SK128" in fired(tmp_path, twice, _third_run())


def test_sk124_v1_label_does_not_hide_another_served_model(tmp_path: Path) -> None:
    def downgrade(lines: Lines) -> None:
        lines[0].update(
            format="servekit.bench/v1", model="other/model", served_models=["other/model"]
        )

    assert "SK124" in fired(tmp_path, evidence={"run-b": downgrade})


@pytest.mark.parametrize(
    ("field", "rule"), [("run_uid", "SK127"), ("workload", "SK125")], ids=["run_uid", "workload"]
)
def test_v2_header_field_removed_rather_than_wrong(tmp_path: Path, field: str, rule: str) -> None:
    """`bench run` always writes these in v2; only an imported file may lack them."""
    assert rule in fired(tmp_path, evidence={"run-b": lambda ls: ls[0].pop(field)})


@pytest.mark.parametrize(
    "argv",
    [
        ["vllm", "serve", "other/model"],
        ["vllm", "serve", "--model=other/model"],
        ["sh", "-c", "vllm serve other/model"],
    ],
    ids=["positional", "--model=", "sh -c"],
)
def test_sk124_served_name_matches_but_the_serve_command_loads_another_model(
    tmp_path: Path, argv: list[str]
) -> None:
    def other(lines: Lines) -> None:
        lines[0]["serve"]["argv"] = argv

    assert "SK124" in fired(tmp_path, evidence={"run-b": other})


def test_sk124_model_loaded_from_a_local_download_passes(tmp_path: Path) -> None:
    def local(lines: Lines) -> None:
        lines[0]["serve"]["argv"] = [
            "vllm",
            "serve",
            "/models/test-tiny",
            "--tensor-parallel-size",
            "2",
        ]

    assert "SK124" not in fired(tmp_path, evidence={"run-b": local})


# --- what each refusal says ------------------------------------------------------------


def _says(root: Path, rule: str, **kwargs: Any) -> list[str]:
    return [v.message for v in report(root, **kwargs).violations if v.rule == rule]


def test_sk115_a_run_of_an_undefined_workload(tmp_path: Path) -> None:
    def undefined(d: Definition) -> None:
        run_def(d, "run-b")["workload"] = "long"

    assert any(
        "workload 'long' is not defined" in m for m in _says(tmp_path, "SK115", mutate=undefined)
    )


def test_sk115_a_run_on_fewer_gpus_than_the_target(tmp_path: Path) -> None:
    def one_gpu(lines: Lines) -> None:
        lines[0]["gpus"] = 1

    messages = _says(tmp_path, "SK115", evidence={"run-a": one_gpu})
    assert any("was run on 1 GPUs, the target has" in m for m in messages)


def test_sk115_concurrencies_the_workload_does_not_declare(tmp_path: Path) -> None:
    def only_c1(d: Definition) -> None:
        d["workloads"][0]["concurrencies"] = [1]
        d["measurements"]["figures"] = [
            f for f in d["measurements"]["figures"] if f["concurrency"] == 1
        ]

    messages = _says(tmp_path, "SK115", mutate=only_c1)
    assert any("holds concurrencies [4] that workload" in m for m in messages)


def test_sk125_a_request_for_another_output_length(tmp_path: Path) -> None:
    def longer(lines: Lines) -> None:
        measured(lines, 4)[0]["requested_output_tokens"] = 64

    messages = _says(tmp_path, "SK125", evidence={"run-a": longer})
    assert any("requested 64 output tokens" in m for m in messages)


def _serve(argv: list[str], env: dict[str, str] | None = None) -> Callable[[Lines], None]:
    def edit(lines: Lines) -> None:
        lines[0]["serve"] = {"argv": argv, "env": env or {}, "source": "--serve-command"}

    return edit


_TP = ["--tensor-parallel-size", "2"]


@pytest.mark.parametrize(
    ("argv", "env", "named"),
    [
        (["vllm", "serve", "test/tiny", "--tensor-parallel-size", "4"], {}, "flag --tensor-parallel-size '4' (ships '2')"),
        (["vllm", "serve", "test/tiny"], {}, "flag --tensor-parallel-size missing"),
        (["vllm", "serve", "test/tiny", *_TP, "--enable-chunked-prefill"], {}, "flag --enable-chunked-prefill (set) (not shipped)"),
        (["vllm", "serve", "test/tiny", *_TP, "--max_num_seqs=512"], {}, "flag --max-num-seqs '512'"),
        (["vllm", "serve", "test/tiny", *_TP], {"VLLM_ATTENTION_BACKEND": "FLASHINFER"}, "environment VLLM_ATTENTION_BACKEND"),
        (["env", "VLLM_USE_V1=0", "vllm", "serve", "test/tiny", *_TP], {}, "environment VLLM_USE_V1=0"),
        (["vllm", "serve", "other/tiny", *_TP], {}, "model 'other/tiny'"),
        (["vllm", "serve", "test/tiny", *_TP, "--revision", "b" * 40], {}, "flag --revision"),
        (["sglang", "serve", "test/tiny", *_TP], {}, "program 'sglang serve'"),
    ],
)  # fmt: skip
def test_sk135_a_run_of_another_serve_command(
    tmp_path: Path, argv: list[str], env: dict[str, str], named: str
) -> None:
    result = report(tmp_path, evidence={"run-b": _serve(argv, env)})
    messages = [v.message for v in result.violations if v.rule == "SK135"]
    assert any(named in m for m in messages), messages
    assert {f.verdict for f in result.figures} == {"refused"}


@pytest.mark.parametrize(
    ("argv", "env"),
    [
        (["vllm", "serve", "test/tiny", "--tensor-parallel-size=2"], {}),
        (["/opt/venv/bin/vllm", "serve", "test/tiny", "--tensor_parallel_size", "2"], {}),
        (
            ["vllm", "serve", "/tmp/weights/tiny", "--port", "18000", "--host", "127.0.0.1", *_TP],
            {},
        ),
        (["vllm", "serve", "test/tiny", "--revision", "a" * 40, *_TP], {"HF_HOME": "/cache"}),
        (["vllm", "serve", "--model", "test/tiny", *_TP], {"CUDA_VISIBLE_DEVICES": "0,1"}),
    ],
)
def test_sk135_the_shipped_command_spelled_otherwise_passes(
    tmp_path: Path, argv: list[str], env: dict[str, str]
) -> None:
    assert fired(tmp_path, evidence={"run-b": _serve(argv, env)}) == set()


def test_sk135_a_speedup_resting_on_a_configuration_not_shipped(tmp_path: Path) -> None:
    from tests.package.rules.test_speedups import RUNS, with_speedup

    tuned = _serve(["vllm", "serve", "test/tiny", *_TP, "--max-num-seqs", "512"])
    result = report(tmp_path, with_speedup, RUNS, evidence={"run-a": tuned, "run-b": tuned})
    fields = {v.field for v in result.violations if v.rule == "SK135"}
    assert "measurements.speedups[0]" in fields, result.violations
    verdicts = {f.id: f.verdict for f in result.figures}
    assert verdicts["ttft-p50-c1"] == "refused" and verdicts["ttft-p50-c1-stock"] == "measured"


def _blank(field: str) -> Callable[[Lines], None]:
    def edit(lines: Lines) -> None:
        if field == "content_parts":
            lines[3]["content_parts"] = None
        else:
            lines[0][field] = None

    return edit


@pytest.mark.parametrize(
    "field",
    ["engine_version", "engine_name", "served_models", "serve", "hardware", "content_parts"],
)
def test_sk136_a_blank_the_harness_records_refuses_measured(tmp_path: Path, field: str) -> None:
    def declared_serve(d: Definition) -> None:  # a declaration never stands in for a record
        run_def(d, "run-a")["serve"] = {"argv": ["vllm", "serve", "test/tiny", *_TP]}

    result = report(tmp_path, declared_serve, evidence={"run-a": _blank(field)})
    messages = [v.message for v in result.violations if v.rule == "SK136"]
    assert any(field in m for m in messages), result.violations
    assert {f.verdict for f in result.figures} == {"refused"}
    assert field not in str(result.cannot_verify)


def _transformers(d: Definition) -> None:
    d["engine"]["name"] = "transformers"
    d["serve"]["entrypoint"] = ["transformers", "serve"]


def _no_version(lines: Lines) -> None:
    lines[0].update(engine_version=None, engine_name=None)
    lines[0]["serve"]["argv"][0] = "transformers"


def test_sk136_an_engine_without_version_is_listed_not_refused(tmp_path: Path) -> None:
    result = report(tmp_path, _transformers, evidence={"run-a": _no_version, "run-b": _no_version})
    assert result.ok, result.violations
    listed = result.cannot_verify or {}
    assert set(listed) == {"run-a", "run-b"}
    assert all(len(v) == 2 and "engine version" in v[0] for v in listed.values()), listed


def test_sk136_an_imported_file_lists_what_its_harness_left_out(tmp_path: Path) -> None:
    def imported(lines: Lines) -> None:
        lines[0].update(hardware=None, imported_from="vllm bench serve: run.json")

    result = report(tmp_path, evidence={"run-a": imported})
    assert "SK136" not in {v.rule for v in result.violations}
    assert any("hardware" in t for t in (result.cannot_verify or {})["run-a"])


@pytest.mark.parametrize(("model", "refused"), [("other/model", True), ("/tmp/weights", False)])
def test_sk124_a_v1_header_is_read_for_its_model(tmp_path: Path, model: str, refused: bool) -> None:
    from tests.package.rules.test_honest import _as_v1

    def v1(lines: Lines) -> None:
        _as_v1(lines)
        lines[0]["model"] = model

    def declared(d: Definition) -> None:
        run_def(d, "run-a")["serve"] = {"argv": ["vllm", "serve", "test/tiny", *_TP]}

    assert ("SK124" in fired(tmp_path, declared, evidence={"run-a": v1})) is refused


def _start_at(when: str) -> Callable[[Lines], None]:
    """The run's header moved to ``when``, its window kept."""

    def edit(lines: Lines) -> None:
        old = dt.datetime.fromisoformat(lines[0]["started_at"])
        new = dt.datetime.fromisoformat(when)
        lines[0]["started_at"] = new.isoformat()
        ended = dt.datetime.fromisoformat(lines[0]["ended_at"]) + (new - old)
        lines[0]["ended_at"] = ended.isoformat()

    return edit


@pytest.mark.parametrize(
    ("field", "date", "named"),
    [
        ("published", "2026-11-28", "publication date"),
        ("proof_verified", "2026-11-28", "proof date"),
    ],
)
def test_sk137_evidence_from_after_the_package_dates(
    tmp_path: Path, field: str, date: str, named: str
) -> None:
    result = report(tmp_path, lambda d: d.update({field: date}))
    messages = [v.message for v in result.violations if v.rule == "SK137"]
    assert any(named in m for m in messages), result.violations


def test_sk137_a_run_that_started_the_day_after_its_date(tmp_path: Path) -> None:
    late = _start_at("2026-12-01T12:06:00+00:00")  # the 30th has ended everywhere, skew too
    assert "SK137" in fired(
        tmp_path, lambda d: d.update(published="2026-12-02"), evidence={"run-b": late}
    )


def test_sk137_late_evening_west_of_utc_passes(tmp_path: Path) -> None:
    """23:30 on the 30th in California is the 1st in UTC: still the 30th where it ran."""
    evening = _start_at("2026-11-30T23:30:00-08:00")
    assert (
        fired(tmp_path, lambda d: d.update(published="2026-12-01"), evidence={"run-b": evening})
        == set()
    )


# --- copies with noise, against every honest replicate pair in the repository -------------

_ROOT = Path(__file__).parents[3]
_EVIDENCE = sorted(
    [*_ROOT.glob("examples/packages/*/evidence/*.jsonl"),
     *_ROOT.glob("examples/packages/*/trials/*.jsonl"),
     *_ROOT.glob("tests/assets/replicates/*.jsonl"),
     *_ROOT.glob("tests/assets/kit_package/evidence/*.jsonl")]
)  # fmt: skip


def _honest_pairs() -> list[tuple[Evidence, Evidence]]:
    """Every pair of files measured on one grid in one place (a package, or the simulator
    replicates): replicates, stock against tuned, machine against machine."""
    loaded = {p: load_evidence(p) for p in _EVIDENCE}
    return [
        (loaded[a], loaded[b])
        for a, b in itertools.combinations(_EVIDENCE, 2)
        if a.parent == b.parent and loaded[a].header.workload == loaded[b].header.workload
    ]


def test_sk129_no_honest_replicate_pair_in_the_repository_is_taken_for_a_copy() -> None:
    pairs = _honest_pairs()
    assert len(pairs) >= 86
    assert [(a.path, b.path) for a, b in pairs if repeats_timings(a, b)] == []
    lowest = min(u for a, b in pairs if (u := copy_statistic(a, b)) is not None)
    assert lowest > 2 * COPY_U, lowest  # the margin docs/rules.md states


def _copied(ev: Evidence, scale: float, shift: float, noise: float) -> Evidence:
    rng = random.Random(5)

    def moved(t: float) -> float:
        return t * scale + shift + rng.gauss(0, noise)

    records = []
    for r in ev.requests:
        content = tuple(sorted(moved(t) for t in r.t_content))
        records.append(r.model_copy(update={
            "t_send": moved(r.t_send), "t_end": None if r.t_end is None else moved(r.t_end),
            "t_content": content, "t_first_content": content[0] if content else None,
        }))  # fmt: skip
    return ev.model_copy(update={"requests": tuple(records)})


@pytest.mark.parametrize(
    "name",
    ["examples/packages/smollm2-135m-vllm-h200/evidence/stock-m1-c1-run-1.jsonl",
     "examples/packages/llama-850m-h200/evidence/h200-run-1.jsonl",
     "tests/assets/replicates/sim-run-1.jsonl"],
)  # fmt: skip
@pytest.mark.parametrize(
    ("scale", "shift", "noise"),
    [(1.0, 0.0, 2e-5), (1.0, 0.0, 5e-5), (1.02, 0.3, 2e-5), (0.97, -0.01, 5e-5)],
    ids=["20 us noise", "50 us noise", "stretched, shifted, 20 us", "shrunk, shifted, 50 us"],
)
def test_sk129_a_copy_of_a_real_run_with_noise_shift_or_scale(
    name: str, scale: float, shift: float, noise: float
) -> None:
    ev = load_evidence(_ROOT / name)
    assert repeats_timings(_copied(ev, scale, shift, noise), ev) is not None


def _stalled(ev: Evidence, concurrency: int, at: float, stall_s: float) -> Evidence:
    """``ev`` as if its host had paused for ``stall_s`` at fraction ``at`` of the stretch
    where its ``concurrency`` requests ran: tokens due in the pause go out when it ends."""
    mine = [r for r in ev.requests if r.concurrency == concurrency and r.ok and not r.warmup]
    start = min(r.t_send for r in mine)
    pause = start + at * (max(r.t_content[-1] for r in mine) - start)
    resume = pause + stall_s

    def moved(r: RequestRecord) -> RequestRecord:
        content = tuple(t if t < pause else max(t, resume + 1e-5 * i)
                        for i, t in enumerate(r.t_content))  # fmt: skip
        return r.model_copy(update={"t_content": content, "t_first_content": content[0]})

    return ev.model_copy(
        update={"requests": tuple(moved(r) if r in mine else r for r in ev.requests)}
    )


@pytest.mark.parametrize("stall_s", [0.1, 0.3])
def test_sk129_replicates_that_met_one_host_stall_at_the_same_token_are_not_copies(
    stall_s: float,
) -> None:
    """One pause shared by chance (or by a deterministic pause at the same point of the
    same workload) makes the whole-run U of two honest replicates 0.34 and 0.05; the rest
    of the runs, any quarter left out, is as independent as honest pairs are."""
    a = load_evidence(_ROOT / "tests/assets/replicates/sim-run-1.jsonl")
    b = load_evidence(_ROOT / "tests/assets/replicates/sim-run-2.jsonl")
    sa, sb = _stalled(a, 1, 0.5, stall_s), _stalled(b, 1, 0.5, stall_s)
    u, rest = copy_statistic(sa, sb), rest_statistic(sa, sb)
    assert u is not None and u < 2 * COPY_U  # the shared pause alone
    assert rest is not None and rest > REST_U + 0.25
    assert repeats_timings(sa, sb) is None
    # the stall is kept: a copy of the stalled run is still a copy
    assert repeats_timings(_copied(sa, 1.0, 0.0, 5e-5), sa) is not None


@pytest.mark.parametrize("noise", [3e-4, 5e-4])
def test_sk129_a_noisy_copy_of_a_run_with_one_long_stall_is_still_a_copy(noise: float) -> None:
    """llama-850m's h200-run-2 had one pause of 113 ms; left out, the rest of the run has
    little fine structure, which 300-500 us of noise per stamp hides (its rest reads 0.28
    and 0.52): the whole-run U (0.014, 0.039) decides, as for any copy."""
    ev = load_evidence(_ROOT / "examples/packages/llama-850m-h200/evidence/h200-run-2.jsonl")
    copy = _copied(ev, 1.0, 0.0, noise)
    rest = rest_statistic(copy, ev)
    assert rest is not None and rest < REST_U
    assert repeats_timings(copy, ev) is not None


def test_sk129_a_copy_too_short_to_leave_a_quarter_out_is_read_whole() -> None:
    """4 requests of 16 tokens: 60 gaps, too few once a quarter is left out (50 needed);
    the whole-run U refuses the copy."""
    ev = load_evidence(_ROOT / "examples/packages/smollm2-135m-vllm-h200/evidence/stock-m1-c1-run-1.jsonl")  # fmt: skip
    done = sorted((r for r in ev.requests if r.ok and not r.warmup), key=lambda r: r.t_send)
    kept = [r.model_copy(update={"t_content": r.t_content[:16]})
            for r in ev.requests if r.warmup or not r.ok or r in done[:4]]  # fmt: skip
    small = ev.model_copy(update={"requests": tuple(kept)})
    copy = _copied(small, 1.0, 0.0, 2e-5)
    assert rest_statistic(copy, small) is None
    assert repeats_timings(copy, small) is not None


# --- prompt lengths recomputed from the seed ------------------------------------------------


def _wide(d: Definition) -> None:
    d["workloads"][0]["prompt_tokens"] = {"min": 200, "max": 400}


def _drawn(lines: Lines) -> None:
    """Each record's prompt length as `bench run` draws it from the 200-400 range."""
    lines[0]["workload"].update(prompt_min=200, prompt_max=400)
    for r in lines[1:]:
        m = re.match(r"^r\d+-(c\d+-[wm]\d+)$", r["id"])
        assert m is not None
        r["requested_prompt_tokens"] = r["prompt_tokens"] = prompt_target(7, m[1], 200, 400)


def _renumbered(lines: Lines) -> None:
    """Measured request 2 at concurrency 4 dropped, the later ones renumbered."""
    _drawn(lines)
    gone = next(r for r in measured(lines, 4) if r["id"].endswith("-m0002"))
    lines.remove(gone)
    for r in measured(lines, 4):
        index = int(r["id"][-4:])
        if index > 2:
            r["id"] = f"{r['id'][:-4]}{index - 1:04d}"


def _relabelled(lines: Lines) -> None:
    """The concurrency 1 and 4 records swap labels (ids and concurrency)."""
    _drawn(lines)
    for r in lines[1:]:
        conc = 5 - r["concurrency"]
        r["concurrency"] = conc
        r["id"] = re.sub(r"-c\d+-", f"-c{conc}-", r["id"])


@pytest.mark.parametrize("edit", [_renumbered, _relabelled], ids=["renumbered", "relabelled"])
def test_sk138_records_carrying_another_requests_prompt_length(tmp_path: Path, edit: Any) -> None:
    result = report(tmp_path, _wide, evidence={"run-b": _drawn, "run-a": edit})
    messages = [v.message for v in result.violations if v.rule == "SK138"]
    assert messages and "carry another request's prompt length" in messages[0], result.violations


def test_sk138_lengths_drawn_as_bench_run_draws_them_pass(tmp_path: Path) -> None:
    assert fired(tmp_path, _wide, evidence={"run-a": _drawn, "run-b": _drawn}) == set()


def test_sk138_a_v1_file_is_recomputed_from_the_package_range(tmp_path: Path) -> None:
    from tests.package.rules.test_honest import _as_v1

    def v1(lines: Lines) -> None:
        _renumbered(lines)
        _as_v1(lines)

    def declared(d: Definition) -> None:
        _wide(d)
        run_def(d, "run-a")["serve"] = {"argv": ["vllm", "serve", "test/tiny", *_TP]}

    result = report(tmp_path, declared, evidence={"run-a": v1, "run-b": _drawn})
    assert "SK138" in {v.rule for v in result.violations}


@pytest.mark.parametrize("tokens", [2, 8])
def test_sk129_runs_too_short_or_too_few_to_compare_are_not_copies(tokens: int) -> None:
    """Under four tokens a request has no fine structure; under 50 fluctuations, a run."""
    from tests.package.factories import header

    def evidence(run: str, seed: int, failures: int = 0) -> Evidence:
        records = synthetic_records(run, concurrencies=(1,), measured=2, output_tokens=tokens,
                                    seed=seed, failures=failures)  # fmt: skip
        return Evidence(path=run, header=header(run, records=records), requests=tuple(records))

    a, b = evidence("run-a", 7), evidence("run-b", 8)
    assert copy_statistic(a, b) is None and repeats_timings(a, b) is None
    assert repeats_timings(evidence("run-a", 7, failures=2), b) is None  # nothing succeeded


def test_sk135_a_run_recorded_with_serve_config_package_yaml_passes(tmp_path: Path) -> None:
    """`bench run --serve-config package.yaml` records the package's own command (without
    the served name the kit adds)."""
    from servekit.bench.serveconf import from_file

    def named(d: Definition) -> None:
        d["serve"]["served_model_name"] = "tiny"

    def recorded(lines: Lines) -> None:
        lines[0]["serve"] = from_file(tmp_path / "package.yaml").model_dump(mode="json")

    report(tmp_path, named)  # writes package.yaml for --serve-config to read
    assert "SK135" not in fired(tmp_path, named, evidence={"run-b": recorded})
