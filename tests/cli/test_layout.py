"""Figures carry their workload, and fit an 80-column terminal without cut cells."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from servekit.cli import output
from tests.cli.helpers import commands, options, run_cli
from tests.functional.helpers import EXAMPLES, ROOT

BORDERS = "┏┌"  # the first line of a rich table: one segment per column
COLUMN = re.compile(r"[┳┬]")


@pytest.fixture
def narrow() -> Iterator[None]:
    """stdout and stderr as on an 80-column terminal: that width, lines wrapped."""
    saved = [(c, c.width, c.soft_wrap) for c in (output.stdout, output.stderr)]
    for console, _, _ in saved:
        console.width, console.soft_wrap = 80, False
    try:
        yield
    finally:
        for console, width, soft_wrap in saved:
            console.width, console.soft_wrap = width, soft_wrap


def assert_fits(text: str) -> None:
    """Every table line fits 80 columns, no cell is cut to "…" and no column is squeezed
    to a character or two (rich's two padding spaces plus at least three)."""
    assert "…" not in text, text
    for line in text.splitlines():
        if line[:1] in "┏┃┡│└┌├╇┗":
            assert len(line) <= 80, line
        if line[:1] in BORDERS:
            widths = [len(segment) for segment in COLUMN.split(line[1:-1])]
            assert min(widths) >= 5, line


def test_package_check_stacks_at_80_columns(narrow: None) -> None:
    code, out, err = run_cli(["package", "check", str(EXAMPLES / "tiny-sim")])
    assert code == 0, err
    assert all(len(line) <= 80 for line in out.splitlines()), out
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


def test_fit_at_80_columns(narrow: None) -> None:
    model = str(EXAMPLES / "llama-850m-h200" / "model")
    code, out, err = run_cli(["fit", model, "--gpu", "H200"])
    assert code == 0, err
    assert_fits(out)
    assert all(len(line) <= 80 for line in out.splitlines()), out
    assert "KV cache" in out and "engine reserve (estimated)" in out


def test_fit_package_at_80_columns(narrow: None) -> None:
    package = EXAMPLES / "llama-850m-h200"
    code, out, err = run_cli(["fit", "--package", str(package), str(package / "model")])
    assert code == 0, err
    assert_fits(out)
    assert all(len(line) <= 80 for line in out.splitlines()), out
    assert "measured floor: 1.59 GiB" in out


def test_bench_compare_stacks_at_80_columns(
    narrow: None, kit: Path, replays: dict[str, Path]
) -> None:
    code, out, err = run_cli(["bench", "compare", str(kit), str(replays["same"]),
                              "--tolerance", "50"])  # fmt: skip
    assert code == 0, err
    assert_fits(out)
    assert all(len(line) <= 80 for line in out.splitlines()), out
    assert "published" in out and "yours" in out and "@ c=" in out and "tolerance ±50" in out


def test_bench_compare_keeps_its_table_when_wide(kit: Path, replays: dict[str, Path]) -> None:
    code, out, err = run_cli(["bench", "compare", str(kit), str(replays["same"]),
                              "--tolerance", "50"])  # fmt: skip
    assert code == 0, err
    assert "┃ figure" in out and "diff %" in out and "…" not in out


def test_verify_weights_at_80_columns(narrow: None, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "config.json").write_text('{"layers": 2}')
    pin = tmp_path / "pin.json"
    assert run_cli(["model", "digest", str(tree), "-o", str(pin)])[0] == 0
    code, out, err = run_cli(["verify", "weights", str(tree), "--pin", str(pin)])
    assert code == 0, err
    assert_fits(out)
    assert "1 files, 13 bytes match" in out


def test_every_table_printer_is_rendered_here() -> None:
    """A new command that draws a rich Table must get a case in this file."""
    cli = ROOT / "src" / "servekit" / "cli"
    drawing = sorted(p.stem for p in cli.glob("*.py") if "Table(" in p.read_text())
    assert drawing == ["bench", "fit", "package", "replay"]


GENERIC = re.compile(r"<(str|int|float|path)>|\b(TEXT|INTEGER|FLOAT|BOOLEAN)\b")


@pytest.mark.parametrize("path", commands(), ids=" ".join)
def test_help_at_80_columns(path: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    """Every option name whole, every line within 80 columns, every value named for
    what it is (PATH, URL, N, ...), never a bare type."""
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = run_cli([*path, "--help"])
    assert code == 0, err
    assert all(len(line) <= 80 for line in out.splitlines()), out
    for name in [o for o in options(path) if o.startswith("-")]:
        assert re.search(rf"(^|[ ,]){re.escape(name)}([ ,]|$)", out, re.M), (name, out)
    rows = [line for line in out.splitlines() if line.startswith(("Usage", "  -"))]
    generic = [line for line in rows if GENERIC.search(line)]
    assert not generic, generic
