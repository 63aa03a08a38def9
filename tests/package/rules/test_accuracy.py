"""Accuracy: recovery without scores, "by construction" with numerics-changing flags,
agreement scores without their control."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.package.rules.helpers import Definition, Lines, fired

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
