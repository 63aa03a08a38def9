"""Memory, cost and floor."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.package.rules.helpers import Definition, Lines, figure, fired, report

RATE = {
    "usd_per_node_hour": 7.0,
    "source": "provider price list",
    "date": "2026-11-30",
    "covers_whole_node": True,
}


def _cost(d: Definition, usd: float | None = None) -> None:
    node_tps = figure(d, "otps-gpu-c4")["value"] * 2
    true_usd = round(7.0 / (node_tps * 3600) * 1e6, 4)
    d["cost"].update(
        node_hourly_rate=RATE,
        throughput_figure="otps-gpu-c4",
        usd_per_million_output_tokens=usd or true_usd,
    )


FLOOR = {"requirement": "About 1 GiB of free memory per GPU."}

CASES: dict[str, dict[str, Any]] = {
    "SK110": {"mutate": lambda d: d.update(peak_memory={"published": True, "value_gib": 120.5, "source": "engine_preallocation"})},
    "SK111": {"mutate": lambda d: d["cost"].update(usd_per_million_output_tokens=1.25)},
    "SK132": {"mutate": lambda d: d["hardware"].update(floor=FLOOR)},
}  # fmt: skip


@pytest.mark.parametrize("rule", sorted(CASES))
def test_rule_refuses(tmp_path: Path, rule: str) -> None:
    assert rule in fired(tmp_path, **CASES[rule])


def test_sk110_preallocating_engine_whatever_the_source(tmp_path: Path) -> None:
    profile = {"published": True, "value_gib": 20.0, "source": "measured_profile"}
    assert "SK110" in fired(tmp_path, lambda d: d.update(peak_memory=profile))


def test_sk110_preallocating_flag(tmp_path: Path) -> None:
    profile = {"published": True, "value_gib": 2.0, "source": "measured_profile"}

    def transformers(d: Definition, args: list[str]) -> None:
        d["engine"]["name"] = "transformers"
        d["serve"]["args"] = args
        d["peak_memory"] = profile

    assert "SK110" not in fired(tmp_path / "a", lambda d: transformers(d, []))
    assert "SK110" in fired(tmp_path / "b", lambda d: transformers(d, ["--continuous-batching"]))


def test_sk111_cost_with_a_sourced_rate_is_recomputed(tmp_path: Path) -> None:
    assert "SK111" not in fired(tmp_path / "ok", _cost)
    assert "SK111" in fired(tmp_path / "bad", lambda d: _cost(d, 0.01))


def test_sk111_cost_from_a_simulator_throughput(tmp_path: Path) -> None:
    def simulated(d: Definition) -> None:
        _cost(d)
        d["disclosures"].append({"topic": "simulator", "title": "sim", "text": "simulator"})
        for r in d["measurements"]["runs"]:
            r["simulator"] = True

    def sim_header(lines: Lines) -> None:
        lines[0]["simulator"] = True

    assert "SK111" in fired(
        tmp_path, simulated, evidence={"run-a": sim_header, "run-b": sim_header}
    )


def test_sk132_failed_attempt_with_evidence_proves_the_floor(tmp_path: Path) -> None:
    attempt = {
        "hardware": "1x L4",
        "configuration": "tp 1",
        "outcome": "failed (OOM)",
        "reason": "weights do not fit",
        "evidence": "evidence/oom.log",
    }
    floor = {**FLOOR, "attempts": [attempt]}
    (tmp_path / "a" / "evidence").mkdir(parents=True)
    (tmp_path / "a" / "evidence" / "oom.log").write_text(
        "torch.OutOfMemoryError: CUDA out of memory\n"
    )
    assert "SK132" not in fired(tmp_path / "a", lambda d: d["hardware"].update(floor=floor))
    missing = {**FLOOR, "attempts": [{**attempt, "evidence": "evidence/oom.log"}]}
    assert "SK132" in fired(tmp_path / "b", lambda d: d["hardware"].update(floor=missing))


# --- an attacker's variants ------------------------------------------------------------

_ATTEMPT = {"hardware": "1x L4", "configuration": "tp 1", "outcome": "failed (OOM)",
            "reason": "weights do not fit"}  # fmt: skip
_FAKE_PROOFS: dict[str, dict[str, str]] = {
    "the package definition as its log": {"evidence": "package.yaml"},
    "a licence as its log": {"evidence": "licenses/MODEL_LICENSE.md"},
    "an attempt that loaded": {"evidence": "evidence/run-a.jsonl", "outcome": "loaded and served"},
    "an empty log": {"evidence": "evidence/empty.log"},
    "a symlink out of the package": {"evidence": "evidence/outside.log"},
}


@pytest.mark.parametrize("attempt", list(_FAKE_PROOFS.values()), ids=list(_FAKE_PROOFS))
def test_sk132_attempt_that_proves_nothing(tmp_path: Path, attempt: dict[str, str]) -> None:
    (tmp_path / "evidence").mkdir()
    (tmp_path / "evidence" / "empty.log").write_text("")
    (tmp_path.parent / "elsewhere.log").write_text("CUDA out of memory\n")
    (tmp_path / "evidence" / "outside.log").symlink_to(tmp_path.parent / "elsewhere.log")
    floor = {**FLOOR, "attempts": [{**_ATTEMPT, **attempt}]}
    assert "SK132" in fired(tmp_path, lambda d: d["hardware"].update(floor=floor))


_PEAK = {"published": True, "value_gib": 2.0, "source": "measured_profile"}


def _engine(name: str, args: list[str] | None = None) -> Callable[[Definition], None]:
    def mutate(d: Definition) -> None:
        d["engine"]["name"] = name
        d["serve"]["args"] = args or []
        d["peak_memory"] = _PEAK

    return mutate


def _recorded(*argv: str) -> Callable[[Lines], None]:
    def edit(lines: Lines) -> None:
        lines[0].update(engine_name=None)
        lines[0]["serve"]["argv"] = list(argv)

    return edit


@pytest.mark.parametrize(
    ("name", "args", "recorded"),
    [
        ("TensorRT_LLM", [], None),
        ("text-generation-inference", [], None),
        ("transformers", ["--continuous_batching"], None),
        ("transformers", [], ("transformers", "serve", "--continuous-batching")),
    ],
    ids=["engine name spelled otherwise", "tgi", "flag with underscore", "flag only in the run"],
)
def test_sk110_preallocation_however_named(
    tmp_path: Path, name: str, args: list[str], recorded: tuple[str, ...] | None
) -> None:
    evidence = {r: _recorded(*recorded) for r in ("run-a", "run-b")} if recorded else {}
    assert "SK110" in fired(tmp_path, _engine(name, args), evidence=evidence)


def test_sk111_cost_from_a_simulator_that_names_itself_otherwise(tmp_path: Path) -> None:
    def sim(lines: Lines) -> None:
        lines[0].update(simulator=False, engine_name="ServeKit_Sim")

    assert "SK111" in fired(tmp_path, _cost, evidence={"run-a": sim, "run-b": sim})


def test_sk132_residency_measured_on_nothing(tmp_path: Path) -> None:
    floor = {**FLOOR, "weights_per_gpu_gib": 0.5, "measured_on": "  "}
    assert "SK132" in fired(tmp_path, lambda d: d["hardware"].update(floor=floor))


# --- what each refusal says ------------------------------------------------------------


def _says(root: Path, rule: str, mutate: Any, **kwargs: Any) -> list[str]:
    return [v.message for v in report(root, mutate, **kwargs).violations if v.rule == rule]


def test_sk110_peak_memory_published_without_a_value(tmp_path: Path) -> None:
    mutate = lambda d: d.update(peak_memory={"published": True, "source": "measured_profile"})  # noqa: E731
    assert "peak memory is published without a value" in _says(tmp_path, "SK110", mutate)


def test_sk111_cost_from_a_run_on_other_hardware(tmp_path: Path) -> None:
    def other_gpu(lines: Lines) -> None:
        lines[0]["hardware"] = "8x B200"

    messages = _says(tmp_path, "SK111", _cost, evidence={"run-a": other_gpu})
    assert any("run run-a was not measured on the priced" in m for m in messages)
