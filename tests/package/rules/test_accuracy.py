"""Accuracy: recovery without scores, "by construction" with numerics-changing flags,
agreement scores without their control."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.package.rules.helpers import Definition, Lines, fired, report

CONTROL = {
    "name": "same-server",
    "kind": "same_server_agreement",
    "value_pct": 78.12,
    "shows_method_unsound": True,
    "description": "two identical servers disagree",
}
AGREEMENT = {"value_pct": 91.0, "informational": False, "description": "optimized vs stock"}
BY_CONSTRUCTION = {"method": "by_construction", "weights_modified": False}

CASES: dict[str, dict[str, Any]] = {
    "SK107": {"mutate": lambda d: d["accuracy"].update(recovery_pct=99.5)},
    "SK108": {"mutate": lambda d: d["accuracy"].update(method="by_construction", weights_modified=True)},
    "SK109": {"mutate": lambda d: d["accuracy"].update(controls=[CONTROL], cross_server_agreement=AGREEMENT)},
}  # fmt: skip


@pytest.mark.parametrize("rule", sorted(CASES))
def test_rule_refuses(tmp_path: Path, rule: str) -> None:
    assert rule in fired(tmp_path, **CASES[rule])


def test_sk108_by_construction_passes_on_a_stock_configuration(tmp_path: Path) -> None:
    assert "SK108" not in fired(tmp_path, lambda d: d["accuracy"].update(BY_CONSTRUCTION))


def test_sk108_fp8_kv_cache_in_the_serve_command(tmp_path: Path) -> None:
    def fp8(d: Definition) -> None:
        d["accuracy"].update(BY_CONSTRUCTION)
        d["serve"]["args"] += ["--kv-cache-dtype", "fp8"]

    assert "SK108" in fired(tmp_path, fp8)


def test_sk108_lossy_flag_recorded_by_a_run(tmp_path: Path) -> None:
    def quantized(lines: Lines) -> None:
        lines[0]["serve"]["argv"] += ["--quantization=fp8"]

    mutate = lambda d: d["accuracy"].update(BY_CONSTRUCTION)  # noqa: E731
    assert "SK108" in fired(tmp_path, mutate, evidence={"run-b": quantized})


def test_sk109_agreement_score_needs_its_same_server_control(tmp_path: Path) -> None:
    informational = {**AGREEMENT, "informational": True}
    assert "SK109" in fired(
        tmp_path / "a", lambda d: d["accuracy"].update(cross_server_agreement=informational)
    )
    both = lambda d: d["accuracy"].update(controls=[CONTROL], cross_server_agreement=informational)  # noqa: E731
    assert "SK109" not in fired(tmp_path / "b", both)


# --- an attacker's variants: numerics changed in ways a plain flag check misses ---------

_TYPICAL = '{"method": "ngram", "acceptance_method": "typical_acceptance_sampler", "note": "rejection_sampler"}'  # fmt: skip
_HIDDEN_NUMERICS: dict[str, list[str]] = {
    "underscore spelling": ["--kv_cache_dtype", "fp8"],
    "upper-case spelling": ["--KV-CACHE-DTYPE=fp8"],
    "argparse abbreviation": ["--kv-cache-dt", "fp8"],
    "flag and value as one word": ["--kv-cache-dtype fp8"],
    "half precision for a bf16 checkpoint": ["--dtype", "float16"],
    "a config file the engine reads": ["--config", "tuned.yaml"],
    "hf overrides": ["--hf-overrides", '{"torch_dtype": "float16"}'],
    "dummy weights": ["--load-format", "dummy"],
    "lossy speculation naming the exact sampler elsewhere": ["--speculative-config", _TYPICAL],
    "dotted speculative option": ["--speculative-config.method", "ngram"],
}


@pytest.mark.parametrize("args", list(_HIDDEN_NUMERICS.values()), ids=list(_HIDDEN_NUMERICS))
def test_sk108_numerics_flag_however_spelled(tmp_path: Path, args: list[str]) -> None:
    def spelled(d: Definition) -> None:
        d["accuracy"].update(BY_CONSTRUCTION)
        d["serve"]["args"] += args

    assert "SK108" in fired(tmp_path, spelled)


def test_sk108_numerics_flag_inside_sh_c_recorded_by_a_run(tmp_path: Path) -> None:
    def shell(lines: Lines) -> None:
        lines[0]["serve"]["argv"] = ["sh", "-c", "vllm serve test/tiny --kv-cache-dtype fp8"]

    mutate = lambda d: d["accuracy"].update(BY_CONSTRUCTION)  # noqa: E731
    assert "SK108" in fired(tmp_path, mutate, evidence={"run-a": shell})


def test_sk108_engine_without_a_numerics_list_cannot_be_by_construction(tmp_path: Path) -> None:
    def trtllm(d: Definition) -> None:
        d["accuracy"].update(BY_CONSTRUCTION)
        d["engine"]["name"] = "trtllm"

    assert "SK108" in fired(tmp_path, trtllm)


def test_sk108_exact_speculation_and_auto_settings_pass(tmp_path: Path) -> None:
    exact = '{"method": "ngram", "acceptance_method": "rejection_sampler"}'

    def harmless(d: Definition) -> None:
        d["accuracy"].update(BY_CONSTRUCTION)
        d["serve"]["args"] += ["--dtype", "auto", "--kv-cache-dtype=auto", "--load-format",
                               "safetensors", "--speculative-config", exact]  # fmt: skip

    assert "SK108" not in fired(tmp_path, harmless)


@pytest.mark.parametrize(
    "env",
    [
        {"VLLM_KV_CACHE_DTYPE": "fp8"},
        {"KV_DTYPE_OVERRIDE": "fp8_e4m3"},
        {"MODEL_QUANTIZATION": "awq"},
    ],
    ids=["kv-cache dtype by name", "a lossy dtype under any name", "quantization by name"],
)
def test_sk108_numerics_set_through_the_environment(tmp_path: Path, env: dict[str, str]) -> None:
    def in_env(lines: Lines) -> None:
        lines[0]["serve"]["env"] = env

    mutate = lambda d: d["accuracy"].update(BY_CONSTRUCTION)  # noqa: E731
    assert "SK108" in fired(tmp_path, mutate, evidence={"run-a": in_env})


def test_sk108_kernel_choice_in_the_environment_passes(tmp_path: Path) -> None:
    def kernels(d: Definition) -> None:
        d["accuracy"].update(BY_CONSTRUCTION)
        d["serve"]["env"] = [{"name": "VLLM_ATTENTION_BACKEND", "value": "FLASHINFER"},
                             {"name": "VLLM_MXFP4_USE_MARLIN", "value": "1"}]  # fmt: skip

    assert "SK108" not in fired(tmp_path, kernels)


def test_sk109_control_that_agrees_no_better_than_the_cross_server_score(tmp_path: Path) -> None:
    """The control is there, but 'shows_method_unsound' was edited to false."""
    sound = {**CONTROL, "shows_method_unsound": False}
    mutate = lambda d: d["accuracy"].update(controls=[sound], cross_server_agreement=AGREEMENT)  # noqa: E731
    assert "SK109" in fired(tmp_path, mutate)


def test_sk107_recovery_over_a_zero_baseline(tmp_path: Path) -> None:
    scores = {"baseline": 0.0, "optimized": 0.5, "recovery_pct": 99.5, "delta": 0.5}
    assert "SK107" in fired(tmp_path, lambda d: d["accuracy"].update(scores))


# --- what each refusal says ------------------------------------------------------------

SCORES = {"baseline": 80.0, "optimized": 79.0}


def _says(root: Path, rule: str, mutate: Any) -> list[str]:
    return [v.message for v in report(root, mutate).violations if v.rule == rule]


def test_sk107_a_recovery_that_is_not_the_ratio_of_the_scores(tmp_path: Path) -> None:
    mutate = lambda d: d["accuracy"].update(SCORES, recovery_pct=99.5)  # noqa: E731
    assert "recovery 99.5 % is not optimized/baseline = 98.75 %" in _says(tmp_path, "SK107", mutate)


def test_sk107_a_delta_that_is_not_the_difference_of_the_scores(tmp_path: Path) -> None:
    mutate = lambda d: d["accuracy"].update(SCORES, recovery_pct=98.75, delta=-2.0)  # noqa: E731
    assert _says(tmp_path, "SK107", mutate) == ["delta -2 is not optimized - baseline"]


def test_sk107_no_scores_need_a_reason(tmp_path: Path) -> None:
    mutate = lambda d: d["accuracy"].update(absent_reason=None)  # noqa: E731
    assert any("no reason given" in m for m in _says(tmp_path, "SK107", mutate))


def test_sk108_by_construction_with_runtime_stages_applied(tmp_path: Path) -> None:
    stages = {**BY_CONSTRUCTION, "runtime_stages_applied": ["fp8 kv cache"]}
    mutate = lambda d: d["accuracy"].update(stages)  # noqa: E731
    messages = _says(tmp_path, "SK108", mutate)
    assert any("stages are applied: fp8 kv cache" in m for m in messages)
