"""`servekit --help` starts without the command groups or heavy libraries.

Timing depends on the machine (bench/cli_startup.py prints it beside `python -c pass`);
what can be checked everywhere is what gets imported.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, get_args

import pytest
import typer.main

from servekit.cli.main import COMMANDS, app, load_command
from tests.functional.helpers import ROOT

HEAVY = ("numpy", "httpx", "pydantic", "yaml", "servekit.package", "servekit.bench", "servekit.fit")

PROBE = """
import contextlib, io, sys
from servekit.cli.main import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    status = main({argv!r})
print(status, file=sys.stderr)
heavy = {heavy!r}
print(" ".join(sorted(m for m in sys.modules if m.startswith(heavy) or m.startswith("servekit.cli."))))
"""


def _imported(
    argv: list[str], heavy: tuple[str, ...] = HEAVY, *, status: int | None = None
) -> set[str]:
    """The heavy and CLI modules loaded by ``servekit ARGV`` (which must exit ``status``)."""
    code = PROBE.format(argv=argv, heavy=heavy)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert status is None or done.stderr.split()[-1] == str(status), done.stderr
    return set(done.stdout.split())


@pytest.mark.parametrize("argv", [["--help"], ["--version"], []], ids=str)
def test_the_root_loads_no_group_and_no_heavy_library(argv: list[str]) -> None:
    assert _imported(argv) == {"servekit.cli.main", "servekit.cli.coerce"}


def test_a_group_loads_only_itself() -> None:
    loaded = {m for m in _imported(["keys", "--help"]) if m.startswith("servekit.cli.")}
    assert "servekit.cli.keys" in loaded
    assert not loaded & {"servekit.cli.bench", "servekit.cli.package", "servekit.cli.fit"}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_summary_is_the_commands_own_help(name: str) -> None:
    command: Any = load_command(name)
    assert " ".join(command.help.split()).startswith(COMMANDS[name][1])


def test_every_registered_command_is_listed() -> None:
    root: Any = typer.main.get_command(app)
    assert list(root.list_commands(None)) == list(COMMANDS)


def test_package_check_fails_on_its_arguments_without_the_library() -> None:
    loaded = _imported(["package", "check"])
    assert not {m for m in loaded if m.startswith(("numpy", "httpx", "servekit.package"))}


# typer 0.29 coerces every parameter of a group through a pydantic TypeAdapter, so pydantic
# itself loads with any group; servekit's models (servekit.package, servekit.bench) must not
GROUP_HEAVY = tuple(m for m in HEAVY if m != "pydantic")
BENCH_RUN = ["bench", "run", "--endpoint", "http://127.0.0.1:9", "--model", "m",
             "--input-tokens", "8:8", "--output-tokens", "2", "--requests", "4", "--out", "x"]  # fmt: skip


@pytest.mark.parametrize(
    "argv",
    [
        ["bench", "run"],  # --endpoint and the other required options missing
        [*BENCH_RUN, "--concurrency", "0"],
        [*BENCH_RUN, "--concurrency", "8"],  # more than --requests can ever put in flight
        [*BENCH_RUN, "--input-tokens", "9:8"],
        [*BENCH_RUN, "--timeout", "0"],
        [*BENCH_RUN, "--api", "grpc"],
        [*BENCH_RUN[:2], "--endpoint", "ftp://host", *BENCH_RUN[4:]],
        ["bench", "summary"],
        ["bench", "replay", "kit.tar.gz"],
        ["bench", "compare", "kit.tar.gz"],
        ["bench", "import", "vllm", "result.json"],
    ],
    ids=lambda argv: " ".join(argv[2:])[:40] or " ".join(argv),
)
def test_an_argument_error_in_the_bench_group_loads_no_heavy_module(argv: list[str]) -> None:
    loaded = _imported(argv)
    assert not {m for m in loaded if m.startswith(GROUP_HEAVY) or m == "servekit.cli.package"}


def test_the_option_choices_are_the_enums() -> None:
    from servekit.bench.loop import LoopKind
    from servekit.bench.sim import Fault
    from servekit.cli.choices import ApiName, FaultName, KvDtypeName, LoopName, RoleName
    from servekit.fit.models import KvDtype
    from servekit.package.models import Api
    from servekit.store.models import Role

    assert get_args(ApiName) == tuple(Api) and get_args(LoopName) == tuple(LoopKind)
    assert get_args(KvDtypeName) == tuple(KvDtype) and get_args(FaultName) == tuple(Fault)
    assert get_args(RoleName) == tuple(Role)


MANY = """
import contextlib, io, sys
from servekit.cli.main import main
for argv in {argvs!r}:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(argv)
print(" ".join(sorted(m for m in sys.modules if m.startswith({heavy!r}))))
"""


def _group_argvs(name: str) -> list[list[str]]:
    """The group's --help and bare call, and each command's --help, an unknown option
    and, where it has required arguments, the command without them."""
    argvs = [[name, "--help"]]
    stack: list[tuple[list[str], Any]] = [([name], load_command(name))]
    while stack:
        path, command = stack.pop()
        subcommands = getattr(command, "commands", None)
        if subcommands is not None:
            argvs.append(path)
            stack += [([*path, sub], c) for sub, c in subcommands.items()]
            continue
        argvs += [[*path, "--help"], [*path, "--no-such-option"]]
        if any(p.required for p in command.params):
            argvs.append(path)
    return argvs


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_and_argument_errors_load_no_library_not_even_pydantic(name: str) -> None:
    """Every --help and argument error of the group, in one process: none of them loads
    pydantic (typer's converters are bypassed for plain values: servekit.cli.coerce),
    numpy, httpx, PyYAML or servekit's own models."""
    code = MANY.format(argvs=_group_argvs(name), heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == []


# What `verify weights` on a pin file must start without (issue 24: under 0.25 s): the
# web app, the store, the Hub client, numpy, and servekit's kit, feed and package models
VERIFY_HEAVY = (
    "numpy",
    "huggingface_hub",
    "fastapi",
    "starlette",
    "sqlalchemy",
    "httpx",
    "yaml",
    "cryptography",
    "servekit.package.models",
    "servekit.package.rules",
    "servekit.receipts",
    "servekit.feed",
    "servekit.verify.kit",
    "servekit.cli.verify_kit",
    "servekit.cli.feed",
    "servekit.cli.replay",
)


def _pinned_tree(tmp_path: Path) -> tuple[Path, Path]:
    from servekit.cli.main import main

    tree = tmp_path / "model"
    tree.mkdir()
    (tree / "config.json").write_text("{}")
    assert main(["-q", "model", "digest", str(tree), "-o", str(tmp_path / "PIN.json")]) == 0
    return tree, tmp_path / "PIN.json"


VERIFY_WEIGHTS_MODULES = {
    "servekit.cli.main",
    "servekit.cli.coerce",
    "servekit.cli.verify",
    "servekit.cli.verify_weights",
    "servekit.cli.output",
}


def test_verify_weights_help_loads_no_heavy_module() -> None:
    loaded = _imported(["verify", "weights", "--help"], VERIFY_HEAVY, status=0)
    assert loaded == VERIFY_WEIGHTS_MODULES


def test_a_one_file_verify_loads_no_heavy_module(tmp_path: Path) -> None:
    tree, pin = _pinned_tree(tmp_path)
    loaded = _imported(["verify", "weights", str(tree), "--pin", str(pin)], VERIFY_HEAVY, status=0)
    assert loaded == VERIFY_WEIGHTS_MODULES


def test_the_verify_group_still_lists_and_runs_every_subcommand() -> None:
    from servekit.cli.verify import SUBCOMMANDS

    verify: Any = load_command("verify")
    assert verify.list_commands(None) == list(SUBCOMMANDS)
    for name in SUBCOMMANDS:
        assert verify.get_command(None, name).name == name
    assert verify.get_command(None, "nothing") is None
