"""The CLI's entry point in-process, and every command path read from the Typer app."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from typing import Any

import typer

from servekit.cli.main import app, main


def _commands(group: typer.Typer, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for info in group.registered_commands:
        name = info.name or (info.callback.__name__ if info.callback else "")
        yield (*prefix, name)
    for sub in group.registered_groups:
        if sub.typer_instance is not None and sub.name:
            yield from _commands(sub.typer_instance, (*prefix, sub.name))


def commands() -> list[tuple[str, ...]]:
    """Every command path of the app (so a new command cannot be left out of a test)."""
    return sorted(_commands(app))


def options(path: tuple[str, ...]) -> list[str]:
    """The option names of the command at ``path``, read from the click command Typer built."""
    command: Any = typer.main.get_command(app)
    for part in path:
        command = command.commands[part]
    return [opt for param in command.params for opt in getattr(param, "opts", [])]


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """``servekit ARGV`` through ``servekit.cli.main.main``: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()
