"""A user's mistake never ends in a traceback: exit 1 is for bugs only.

Hypothesis mutates a real package file and draws argument lists from the Typer app
itself, and feeds both to the CLI's entry point, ``servekit.cli.main.main``. Any exit
code 1 (an unexpected exception) fails the test with the traceback it printed.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli.helpers import commands, options, run_cli
from tests.functional.helpers import EXAMPLES

# Commands that serve forever or reach the network: drawn arguments could start them.
LONG_RUNNING = {
    ("serve",),
    ("sim", "serve"),
    ("store", "serve"),
    ("model", "pin"),
    ("bench", "replay"),
}

MUTATIONS = [
    "date: 2026-13-45",
    "\x00",
    "\x1b[31m",
    "\u202e",
    "!!python/object:os.system x",
    "? [a, b]\n: 1",
    "? {a: 1}\n: 2",
    "[" * 200,
    "key: [unclosed",
    "\t- tab",
    "id: !!binary aGVsbG8=",
    "version: 1e400",
    "version: .nan",
    "created: 2026-02-30",
    "  - &a x",
    "- *a",
    "---\n---",
    "schema_version: -1",
    ": empty key",
    "\ufeff",
]


@pytest.fixture(scope="module", autouse=True)
def in_a_scratch_directory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Drawn arguments may name "." or a relative path with --force: they land here."""
    scratch = tmp_path_factory.mktemp("cwd")
    previous = Path.cwd()
    os.chdir(scratch)
    try:
        yield
    finally:
        os.chdir(previous)


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("fuzz") / "pkg"
    shutil.copytree(EXAMPLES / "tiny-sim", target)
    return target


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_a_mutated_package_file_never_exits_1(package_copy: Path, data: st.DataObject) -> None:
    original = (EXAMPLES / "tiny-sim" / "package.yaml").read_text(encoding="utf-8")
    lines = original.splitlines()
    index = data.draw(st.integers(0, len(lines) - 1), label="line")
    mutation = data.draw(
        st.one_of(st.sampled_from(MUTATIONS), st.text(max_size=20)), label="mutation"
    )
    how = data.draw(st.sampled_from(["replace", "insert", "append"]), label="how")
    if how == "replace":
        lines[index] = mutation
    elif how == "insert":
        lines.insert(index, mutation)
    else:
        lines[index] += mutation
    (package_copy / "package.yaml").write_text("\n".join(lines), encoding="utf-8")
    code, _, err = run_cli(["package", "check", str(package_copy)])
    assert code != 1, err


VALUES = st.one_of(
    st.sampled_from(
        [
            "",
            "0",
            "-1",
            "1",
            "nan",
            "inf",
            "1e400",
            "99999999999999999999",
            "http://",
            "x:y",
            "http://127.0.0.1:99999",
            "http://[::1",
            "1:0",
            "5:2",
            "\x00",
            "a,b",
            "1,,2",
            "-",
            "scratch.json",
            "out",
            ".",
            str(EXAMPLES / "tiny-sim"),
            str(EXAMPLES / "tiny-sim" / "package.yaml"),
            "H200",
            "\u202e",
            "ttft:abc",
        ]
    ),
    st.text(max_size=8),
)


@settings(max_examples=120, deadline=None)
@given(data=st.data())
def test_drawn_argument_lists_never_exit_1(data: st.DataObject) -> None:
    path = data.draw(
        st.sampled_from([c for c in commands() if c not in LONG_RUNNING]), label="command"
    )
    names = [o for o in options(path) if o not in {"--help", "-h"}]
    argv = list(path)
    for _ in range(data.draw(st.integers(0, 6), label="count")):
        token = data.draw(st.one_of(st.sampled_from(names or ["x"]), VALUES), label="token")
        argv.append(token)
    code, _, err = run_cli(argv)
    assert code != 1, f"{argv}: {err}"
