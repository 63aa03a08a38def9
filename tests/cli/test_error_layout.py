"""Errors print as written: servekit's own lines and indentation reach an 80-column
terminal intact, and only text from outside (package fields, file names) is escaped.

Every case runs in one child process on a pseudo-terminal with ``COLUMNS=80`` (what a
person at a terminal sees, wrapping included) and is compared with its golden file in
``tests/cli/golden/``. ``SERVEKIT_REGOLD=1`` rewrites the golden files.
"""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.core import TyperGroup

from servekit.cli.main import app
from tests.assets.make_kit_fixtures import KEYS
from tests.cli.helpers import run_cli
from tests.functional.helpers import EXAMPLES, ROOT

GOLDEN = Path(__file__).parent / "golden"
ASSETS = ROOT / "tests" / "assets"
HOSTILE_KEY = "evil\nerror: all verified\x1b[32m\u202egnp"

CASES: dict[str, list[str]] = {
    "schema": ["package", "check", "schema"],
    "claims": ["package", "check", "claims"],
    "kit_changed": ["verify", "kit", "kit_tampered_compose.tar.gz", "--trust", "publisher.pub"],
    "kit_untrusted": ["verify", "kit", "kit_untrusted_key.tar.gz", "--trust", "publisher.pub"],
    "weights": ["verify", "weights", "model", "--pin", "model-pin.json"],
    "hostile": ["package", "check", "hostile"],
}

DRIVER = """
import sys
from servekit.cli.main import main
for argv in {cases!r}:
    code = main(argv)
    sys.stdout.flush(); sys.stderr.flush()
    print(f"=== exit {{code}}", file=sys.stderr, flush=True)
"""


def _package(tmp: Path, name: str, edit: list[tuple[str, str]]) -> None:
    shutil.copytree(EXAMPLES / "tiny-sim", tmp / name)
    path = tmp / name / "package.yaml"
    text = path.read_text(encoding="utf-8")
    for old, new in edit:
        assert old in text, old
        text = text.replace(old, new, 1)
    path.write_text(text, encoding="utf-8")


def _workspace(tmp: Path) -> None:
    """The files each case reads, under short relative names (the golden text names them)."""
    _package(
        tmp,
        "schema",
        [("status: draft", "status: sold\ncolour: red"), ("port: 8000", "port: eighty")],
    )
    _package(tmp, "claims", [("value: 120.3", "value: 99.0"), ("value: 588.1", "value: 900.0")])
    key = '"' + HOSTILE_KEY.replace("\n", "\\n").replace("\x1b", "\\e").replace("\u202e", "\\u202E")
    _package(tmp, "hostile", [("status: draft", f'status: draft\n{key}": 1\nsecond_unknown: 2')])
    for kit in ("kit_tampered_compose.tar.gz", "kit_untrusted_key.tar.gz"):
        shutil.copy(ASSETS / kit, tmp / kit)
    shutil.copy(KEYS / "publisher.pub", tmp / "publisher.pub")
    shutil.copy(EXAMPLES / "tiny-sim" / "model-pin.json", tmp / "model-pin.json")
    model = tmp / "model"
    shutil.copytree(EXAMPLES / "tiny-sim" / "synthetic-model", model)
    (model / "config.json").unlink()
    (model / "model.safetensors").write_bytes(b"\0" * 296)
    (model / "tokenizer.json").write_text("{}", encoding="utf-8")


def _on_a_terminal(argvs: list[list[str]], cwd: Path) -> str:
    """Run every argv through ``main`` in one child whose stderr is an 80-column
    pseudo-terminal (stdout, the commands' reports, is dropped); CRLF made LF."""
    leader, follower = pty.openpty()
    env = {
        **os.environ,
        "COLUMNS": "80",
        "LINES": "50",
        "TERM": "dumb",
        "PYTHONPATH": str(ROOT / "src"),
    }
    env.pop("NO_COLOR", None)
    child = subprocess.Popen(
        [sys.executable, "-c", DRIVER.format(cases=argvs)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=follower, cwd=cwd, env=env,
    )  # fmt: skip
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    child.wait(timeout=120)
    os.close(leader)
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


@pytest.fixture(scope="module")
def shown(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("errors")
    _workspace(tmp)
    pieces = _on_a_terminal(list(CASES.values()), tmp).split("=== exit ")
    out = {}
    text = pieces[0]
    for name, piece in zip(CASES, pieces[1:], strict=True):
        code, _, rest = piece.partition("\n")
        out[name] = f"exit {code}\n{text.strip(chr(10))}\n"
        text = rest
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_error_matches_its_golden_file(shown: dict[str, str], name: str) -> None:
    golden = GOLDEN / f"error_{name}.txt"
    if os.environ.get("SERVEKIT_REGOLD"):
        golden.write_text(shown[name], encoding="utf-8")
    assert shown[name] == golden.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", list(CASES))
def test_no_line_is_wider_than_the_terminal_unless_one_word(
    shown: dict[str, str], name: str
) -> None:
    for line in shown[name].splitlines():
        assert len(line) <= 80 or " " not in line.strip(), line


def test_hostile_text_is_escaped_and_the_layout_kept(shown: dict[str, str]) -> None:
    text = shown["hostile"]
    live = {c for c in text if c != "\n" and unicodedata.category(c) in {"Cc", "Cf"}}
    assert not live, sorted(map(ascii, live))
    assert "evil\\nerror: all verified\\x1b[32m\\u202egnp" in text
    lines = text.splitlines()
    assert not any(line.startswith("error: all verified") for line in lines)
    problems = [line for line in lines if line.startswith("  hostile/package.yaml:")]
    assert len(problems) == 2, text  # one line each, indented as written


def _groups(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path]
    for name, sub in getattr(command, "commands", {}).items():
        if isinstance(sub, TyperGroup):
            found += _groups(sub, (*path, name))
    return found


@pytest.mark.parametrize("path", _groups(typer.main.get_command(app)), ids=" ".join)
def test_a_bare_group_prints_its_help_formatted(path: tuple[str, ...]) -> None:
    code, out, err = run_cli(list(path))
    assert (code, err) == (0, "")  # docs/cli.md: a bare group prints its help and exits 0
    assert out.startswith(f"Usage: {' '.join(('servekit', *path))} [OPTIONS] COMMAND")
    assert "\n\nOptions:\n" in out and "\nCommands:\n" in out and "\\n" not in out


def test_outside_text_in_every_laid_out_error_stays_on_its_line() -> None:
    """Each multi-line error escapes what it was given, line by line, when it is built."""
    from servekit.errors import (
        ClaimRuleError,
        ClaimViolation,
        FileChangedError,
        PackageSchemaError,
        SchemaProblem,
        layout,
        shown,
    )

    hostile = "x\nerror: fake\x1b[2J\u202e"
    errors = [
        ClaimRuleError([ClaimViolation("SK101", hostile, f"'{hostile}' states 1", hostile)]),
        PackageSchemaError(path=hostile, problems=[SchemaProblem(hostile, hostile, 3)]),
        FileChangedError(hostile, file=hostile, expected=hostile, actual=hostile),
    ]
    for exc in errors:
        lines = shown(exc.message).split("\n")
        assert not any(line.startswith("error: fake") for line in lines), lines
        assert all(line.isprintable() for line in lines), lines
    nested = layout("head", layout("  a", "  b\nc"))
    assert nested.split("\n") == ["head", "  a", "  b\\nc"]
    assert shown("one\ntwo") == "one\\ntwo"  # a message nobody laid out stays on one line
