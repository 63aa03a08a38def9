"""The CLI's entry point in-process, and every command path read from the Typer app."""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Iterator
from typing import Any

import typer
import typer.main
from typer.core import TyperGroup

from servekit.cli.main import app, main


def _commands(group: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name, command in group.commands.items():
        if isinstance(command, TyperGroup):
            yield from _commands(command, (*prefix, name))
        else:
            yield (*prefix, name)


def commands() -> list[tuple[str, ...]]:
    """Every command path of the app (so a new command cannot be left out of a test)."""
    return sorted(_commands(typer.main.get_command(app)))


def options(path: tuple[str, ...]) -> list[str]:
    """The option names of the command at ``path``, read from the click command Typer built."""
    command: Any = typer.main.get_command(app)
    for part in path:
        command = command.commands[part]
    return [opt for param in command.params for opt in getattr(param, "opts", [])]


def run_cli(argv: list[str], stdin: str = "") -> tuple[int, str, str]:
    """``servekit ARGV`` through ``servekit.cli.main.main``: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    saved, sys.stdin = sys.stdin, io.StringIO(stdin)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    finally:
        sys.stdin = saved
    return code, out.getvalue(), err.getvalue()
