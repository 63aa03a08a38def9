"""Figures carry their workload, and fit an 80-column terminal without cut cells."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from servekit.cli import output
from tests.cli.helpers import run_cli
from tests.functional.helpers import EXAMPLES


@pytest.fixture
def narrow() -> Iterator[None]:
    wide = output.stdout.width
    output.stdout.width = 80
    try:
        yield
    finally:
        output.stdout.width = wide


def test_package_check_stacks_at_80_columns(narrow: None) -> None:
    code, out, err = run_cli(["package", "check", str(EXAMPLES / "tiny-sim")])
    assert code == 0, err
    assert all(len(line) <= 80 for line in out.splitlines() if "memory floor" not in line)
    assert "…" not in out
    assert "ttft p50 @ c=4" in out and "ttft p50 @ c=1" in out
    assert "workload: completions, prompt 200-400 tok, output 32 tok" in out
    assert "runs: run-1 " in out and "run-2 " in out and "spread" in out


def test_every_figure_in_json_names_its_workload() -> None:
    code, out, _ = run_cli(["package", "check", str(EXAMPLES / "tiny-sim"), "--json"])
    assert code == 0
    for figure in json.loads(out)["figures"]:
        assert figure["metric"] and figure["statistic"] and figure["concurrency"] >= 1
        assert set(figure["workload"]) >= {"api", "prompt_tokens", "output_tokens", "requests"}
        assert len(figure["per_run"]) == 2 and figure["spread_pct"] is not None


def test_package_text_cannot_drive_the_terminal(tmp_path: Path, narrow: None) -> None:
    package = Path(shutil.copytree(EXAMPLES / "tiny-sim", tmp_path / "pkg"))
    yaml_file = package / "package.yaml"
    text = yaml_file.read_text(encoding="utf-8")
    yaml_file.write_text(
        text.replace("label: TTFT p50\n", 'label: "TTFT \\u202e05p \\x1b[31m[bold]x"\n', 1),
        encoding="utf-8",
    )
    code, out, err = run_cli(["package", "check", str(package)])
    assert code in (0, 4), err
    assert "\u202e" not in out and "\x1b" not in out, out
    assert "\\u202e" in out and "\\x1b" in out


def test_bench_summary_stacks_at_80_columns(narrow: None) -> None:
    code, out, err = run_cli(["bench", "summary", str(EXAMPLES / "tiny-sim" / "evidence")])
    assert code == 0, err
    assert all(len(line) <= 80 for line in out.splitlines()), out
    assert "run-2 @ c=4" in out and "TTFT p50/p99" in out and "…" not in out
