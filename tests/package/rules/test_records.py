"""Records: each hides one impossible or missing line in the JSON Lines evidence."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from servekit.package.load import load_package
from servekit.package.rules import check
from tests.package.factories import synthetic_records
from tests.package.rules.helpers import Lines, figure, fired, measured, report


def _nan_ttft(text: str) -> str:
    lines = text.splitlines()
    obj = json.loads(lines[3])
    obj["t_end"] = 1e400  # json.dumps writes Infinity
    lines[3] = json.dumps(obj)
    return "\n".join(lines) + "\n"


def _swap_first_token(lines: Lines) -> None:
    r = measured(lines, 4)[0]
    r["t_first_content"] = r["t_send"] - 0.01  # token before the request was sent
    r["t_content"][0] = r["t_first_content"]


def _inflate_tokens(lines: Lines) -> None:
    for r in measured(lines, 4):
        r["t_content"] = r["t_content"] + [r["t_end"] - 0.0005] * 40  # 72 events, 32 tokens


def _duplicate(lines: Lines) -> None:
    dup = dict(measured(lines, 4)[1], id=measured(lines, 4)[0]["id"])
    lines[lines.index(measured(lines, 4)[1])] = dup


def _drop_failure(lines: Lines) -> None:
    lines.remove(measured(lines, 4)[-1])


def _late_warmup(lines: Lines) -> None:
    """The slowest measured request relabelled as a warmup, to leave the figures."""
    slow = measured(lines, 4)[-1]
    warm = next(r for r in lines[1:] if r["concurrency"] == 4 and r["warmup"])
    warm["warmup"], slow["warmup"] = False, True
    warm["id"], slow["id"] = slow["id"], warm["id"]


FAILED = {
    "run-a": synthetic_records("run-a", seed=7, number=1, failures=1),
    "run-b": synthetic_records("run-b", seed=8, number=2),
}

CASES: dict[str, dict[str, Any]] = {
    "SK116": {"runs": FAILED, "evidence": {"run-a": lambda lines: lines[0].update(requests_sent=len(lines) - 1)}},
    "SK118": {"text": {"run-a": _nan_ttft}},
    "SK119": {"evidence": {"run-a": _swap_first_token}},
    "SK120": {"evidence": {"run-a": _inflate_tokens}},
    "SK121": {"evidence": {"run-b": _duplicate}},
    "SK122": {"runs": FAILED, "evidence": {"run-a": _drop_failure}},
    "SK123": {"evidence": {"run-a": _late_warmup}},
}  # fmt: skip


@pytest.mark.parametrize("rule", sorted(CASES))
def test_rule_refuses(tmp_path: Path, rule: str) -> None:
    assert rule in fired(tmp_path, **CASES[rule])


def test_sk119_rescaled_times_no_longer_span_the_run(tmp_path: Path) -> None:
    """Every time halved (latencies halved, replicates still agree with each other)."""

    def halve(lines: Lines) -> None:
        for r in lines[1:]:
            for key in ("t_start", "t_send", "t_first_event", "t_first_content", "t_end"):
                r[key] = r[key] / 2 if r.get(key) is not None else None
            r["t_content"] = [t / 2 for t in r["t_content"]]

    assert "SK119" in fired(tmp_path, evidence={"run-a": halve, "run-b": halve})


def test_sk118_nan_figure_value_is_refused_and_json_stays_valid(tmp_path: Path) -> None:
    result = report(tmp_path, lambda d: figure(d, "ttft-p50-c1").update(value=float("nan")))
    assert "SK118" in {v.rule for v in result.violations}
    text = json.dumps(result.as_dict(), allow_nan=False)  # raises on NaN/Infinity
    fig = next(f for f in json.loads(text)["figures"] if f["id"] == "ttft-p50-c1")
    assert fig["value"] is None and fig["verdict"] == "refused" and "SK118" in fig["refused_by"]


def test_sk118_infinity_in_records_keeps_json_valid(tmp_path: Path) -> None:
    result = report(tmp_path, text={"run-a": _nan_ttft})
    json.dumps(result.as_dict(), allow_nan=False)


def test_sk116_disclosed_output_length_mismatch_passes(tmp_path: Path) -> None:
    def short(lines: Lines) -> None:
        measured(lines, 4)[0]["completion_tokens"] = 31
        measured(lines, 4)[0]["t_content"].pop()

    assert "SK116" in fired(tmp_path / "a", evidence={"run-a": short})
    disclose = {"topic": "output_length", "title": "EOS", "text": "the engine ignores ignore_eos"}
    assert "SK116" not in fired(
        tmp_path / "b", lambda d: d["disclosures"].append(disclose), evidence={"run-a": short}
    )


def test_sk116_reports_the_error_rate_beside_the_figure(tmp_path: Path) -> None:
    result = report(tmp_path, runs=FAILED)
    fig = next(f for f in result.figures if f.id == "e2el-p99-c4")
    assert fig.error_rate == pytest.approx(1 / 8) and fig.verdict == "refused"


def test_sk122_v1_gap_in_request_indices(tmp_path: Path) -> None:
    def v1_drop(lines: Lines) -> None:
        lines[0]["format"] = "servekit.bench/v1"
        for key in (
            "requests_sent",
            "run_uid",
            "workload",
            "serve",
            "hardware",
            "engine_name",
            "served_models",
        ):
            lines[0].pop(key)
        lines.remove(measured(lines, 4)[2])
        clone = dict(measured(lines, 1)[0], id="r1-c4-m0099", concurrency=4)
        lines.append(clone)

    assert "SK122" in fired(tmp_path, evidence={"run-a": v1_drop})


def test_sk123_no_warmup_needs_a_disclosure(tmp_path: Path) -> None:
    def declare(d: dict[str, Any]) -> None:
        d["workloads"][0]["warmup_requests"] = 0
        d["disclosures"].append({"topic": "warmup", "title": "no warmup", "text": "cold"})

    runs = {
        "run-a": synthetic_records("run-a", seed=7, number=1, warmup=0),
        "run-b": synthetic_records("run-b", seed=8, number=2, warmup=0),
    }
    assert "SK123" in fired(
        tmp_path / "a", lambda d: d["workloads"][0].update(warmup_requests=0), runs
    )
    assert "SK123" not in fired(tmp_path / "b", declare, runs)


def test_v1_evidence_lists_what_cannot_be_verified(tmp_path: Path) -> None:
    def v1(lines: Lines) -> None:
        lines[0]["format"] = "servekit.bench/v1"

    result = report(tmp_path, evidence={"run-a": v1})
    assert result.cannot_verify is not None and "run-a" in result.cannot_verify
    assert check(load_package(tmp_path)).cannot_verify == result.cannot_verify


# --- an attacker's variants ------------------------------------------------------------


def _drop_last_failure(lines: Lines) -> None:
    """The failed request removed, and the count in the header lowered to match."""
    lines.remove(measured(lines, 4)[-1])
    lines[0]["requests_sent"] = len(lines) - 1


def _drop_failure_renamed(lines: Lines) -> None:
    """... and every id renamed, so servekit's id pattern no longer says what is missing."""
    _drop_last_failure(lines)
    for r in lines[1:]:
        r["id"] = "req-" + r["id"]


def _drop_failure_no_count(lines: Lines) -> None:
    del lines[0]["requests_sent"]
    lines.remove(measured(lines, 4)[-1])
    for r in lines[1:]:
        r["id"] = "req-" + r["id"]


def _drop_middle_seq(lines: Lines) -> None:
    victim = measured(lines, 1)[3]
    lines.remove(victim)
    lines.append(dict(victim, id="extra", warmup=False, seq=len(lines) + 5))


@pytest.mark.parametrize(
    "edit",
    [_drop_last_failure, _drop_failure_renamed, _drop_failure_no_count, _drop_middle_seq],
    ids=["count lowered", "ids renamed", "count removed", "send position missing"],
)
def test_sk122_dropped_request_with_its_traces_covered(tmp_path: Path, edit: Any) -> None:
    assert "SK122" in fired(tmp_path, runs=FAILED, evidence={"run-a": edit})


def _same_request_twice(lines: Lines) -> None:
    first, second = measured(lines, 4)[0], measured(lines, 4)[1]
    lines[lines.index(second)] = dict(first, id=first["id"].upper(), seq=second["seq"])


def _id_with_space(lines: Lines) -> None:
    first, second = measured(lines, 4)[0], measured(lines, 4)[1]
    lines[lines.index(second)] = dict(second, id=first["id"] + " ")


@pytest.mark.parametrize(
    "edit", [_same_request_twice, _id_with_space], ids=["same times", "id + space"]
)
def test_sk121_one_request_counted_twice_under_another_id(tmp_path: Path, edit: Any) -> None:
    assert "SK121" in fired(tmp_path, evidence={"run-b": edit})


@pytest.mark.parametrize(
    "ended_at", ["2026-11-30T00:11:00", "never"], ids=["no time zone", "not a time"]
)
def test_sk119_header_window_that_cannot_be_read(tmp_path: Path, ended_at: str) -> None:
    """A zone-less end beside a zoned start once crashed the check; neither reads as a window."""
    assert "SK119" in fired(
        tmp_path, evidence={"run-b": lambda ls: ls[0].update(ended_at=ended_at)}
    )


def test_sk118_nan_as_a_string(tmp_path: Path) -> None:
    assert "SK118" in fired(
        tmp_path, evidence={"run-a": lambda ls: measured(ls, 4)[0].update(t_end="NaN")}
    )


# --- what each refusal says ------------------------------------------------------------


def _messages(root: Path, rule: str, **kwargs: Any) -> list[str]:
    return [v.message for v in report(root, **kwargs).violations if v.rule == rule]


def _edit_first(conc: int, **fields: Any) -> Any:
    return {"run-a": lambda lines: measured(lines, conc)[0].update(fields)}


def test_sk119_a_start_after_the_send_is_named(tmp_path: Path) -> None:
    def late_start(lines: Lines) -> None:
        r = measured(lines, 1)[0]
        r["t_start"] = r["t_send"] + 0.001

    (message,) = _messages(tmp_path, "SK119", evidence={"run-a": late_start})
    assert "1 record(s) with impossible timing" in message and "is after t_send" in message


def test_sk119_the_first_token_must_be_the_first_content_stamp(tmp_path: Path) -> None:
    def moved(lines: Lines) -> None:
        r = measured(lines, 1)[0]
        r["t_first_event"] = r["t_first_content"] = r["t_send"] + 0.001  # before t_content[0]

    (message,) = _messages(tmp_path, "SK119", evidence={"run-a": moved})
    assert "is not the first content stamp" in message


def test_sk119_a_failure_that_never_ended_is_in_order(tmp_path: Path) -> None:
    def never_ended(lines: Lines) -> None:
        measured(lines, 4)[-1]["t_end"] = None  # a connect error: no response at all

    assert "SK119" not in fired(tmp_path, runs=FAILED, evidence={"run-a": never_ended})


def test_sk119_imported_evidence_may_carry_no_wall_clock(tmp_path: Path) -> None:
    def no_clock(imported: bool) -> Any:
        def edit(lines: Lines) -> None:
            lines[0]["started_at"] = "unknown"
            if imported:
                lines[0]["imported_from"] = "vllm bench serve: result.json"

        return edit

    assert "SK119" in fired(tmp_path / "a", evidence={"run-a": no_clock(False)})
    assert "SK119" not in fired(tmp_path / "b", evidence={"run-a": no_clock(True)})


def test_sk120_a_success_without_token_counts_is_refused(tmp_path: Path) -> None:
    (message,) = _messages(tmp_path, "SK120", evidence=_edit_first(4, requested_output_tokens=None))
    assert "no requested or received output-token count" in message


def test_sk121_distinct_ids_with_identical_times_are_one_request(tmp_path: Path) -> None:
    def copy_times(lines: Lines) -> None:
        first, second = measured(lines, 4)[0], measured(lines, 4)[1]
        for key in ("t_send", "t_end", "t_content"):
            second[key] = first[key]

    messages = _messages(tmp_path, "SK121", evidence={"run-a": copy_times})
    assert any("1 record(s) repeating another's send, end and token times" in m for m in messages)


def test_sk122_a_workload_that_disagrees_with_requests_sent(tmp_path: Path) -> None:
    def more_asked(lines: Lines) -> None:
        lines[0]["workload"]["requests"] += 1

    (message,) = _messages(tmp_path, "SK122", evidence={"run-a": more_asked})
    assert "the header's workload asks for" in message and "requests_sent says" in message


def test_sk123_a_warmup_sent_in_a_later_position_is_refused(tmp_path: Path) -> None:
    def swap_seq(lines: Lines) -> None:
        warm = next(r for r in lines[1:] if r["concurrency"] == 4 and r["warmup"])
        first = measured(lines, 4)[0]
        warm["seq"], first["seq"] = first["seq"], warm["seq"]

    messages = _messages(tmp_path, "SK123", evidence={"run-a": swap_seq})
    assert any("a warmup's send position follows a measured request's" in m for m in messages)


def test_sk121_records_of_another_run_are_named(tmp_path: Path) -> None:
    messages = _messages(tmp_path, "SK121", evidence=_edit_first(4, run="run-b"))
    assert any("records of run(s) run-b in run run-a" in m for m in messages)


def test_sk122_an_id_that_contradicts_its_record(tmp_path: Path) -> None:
    def relabel(lines: Lines) -> None:
        r = measured(lines, 4)[0]
        r["id"] = r["id"].replace("-c4-", "-c1-")

    messages = _messages(tmp_path, "SK122", evidence={"run-a": relabel})
    assert any("is labelled concurrency 4, warmup False" in m for m in messages)


def test_sk122_without_a_workload_the_send_positions_still_count(tmp_path: Path) -> None:
    def no_workload_no_seq(lines: Lines) -> None:
        del lines[0]["workload"]
        measured(lines, 4)[0]["seq"] = None

    (message,) = _messages(tmp_path, "SK122", evidence={"run-a": no_workload_no_seq})
    assert "1 record(s) have no send position (seq)" in message


def _scaled(factor: float) -> Any:
    def edit(lines: Lines) -> None:
        for r in lines[1:]:
            for key in ("t_start", "t_send", "t_first_event", "t_first_content", "t_end"):
                r[key] = r[key] * factor if r.get(key) is not None else None
            r["t_content"] = [t * factor for t in r["t_content"]]

    return edit


def _ended_later(seconds: float) -> Any:
    def edit(lines: Lines) -> None:
        ended = dt.datetime.fromisoformat(lines[0]["ended_at"]) + dt.timedelta(seconds=seconds)
        lines[0]["ended_at"] = ended.isoformat()

    return edit


@pytest.mark.parametrize(
    "edit",
    [_scaled(0.99), _scaled(1.01), _ended_later(0.030), _ended_later(-0.002)],
    ids=["shrunk 1 %", "stretched 1 %", "header 30 ms late", "records past the header"],
)
def test_sk119_a_window_off_by_more_than_the_harness_precision(tmp_path: Path, edit: Any) -> None:
    """Under the old bound (1 s or 5 %) every one of these passed."""
    (message,) = _messages(tmp_path, "SK119", evidence={"run-a": edit})
    assert "the records span" in message


def test_sk119_a_header_stamped_a_millisecond_after_the_last_record_passes(tmp_path: Path) -> None:
    assert fired(tmp_path, evidence={"run-a": _ended_later(0.0011)}) == set()


def test_sk119_an_imported_file_keeps_the_bound_for_another_harness_clock(tmp_path: Path) -> None:
    def imported(lines: Lines) -> None:
        _ended_later(0.030)(lines)
        lines[0]["imported_from"] = "vllm bench serve: result.json"

    assert "SK119" not in fired(tmp_path, evidence={"run-a": imported})
