"""Shared output helpers for the CLI: one stdout console, one stderr console, JSON."""

from __future__ import annotations

import json
import sys
import textwrap
from typing import Any

from rich.console import Console
from rich.markup import escape

from servekit.errors import Error, VerificationError, printable, shown
from servekit.seams import strict_json

PIPED_WIDTH = 240  # columns when not writing to a terminal (CI logs, `| tee`, files)


def _console(*, stderr: bool) -> Console:
    """A console as wide as the terminal, or ``PIPED_WIDTH`` when not a terminal.

    Rich falls back to 80 columns without a terminal and squeezes tables into them,
    cutting every number to "3…"; a log or a file has no width to respect, and its
    lines are never broken. On a terminal, long lines wrap at word boundaries rather
    than wherever the terminal cuts them.
    """
    console = Console(stderr=stderr, highlight=False, soft_wrap=True)
    if console.is_terminal:
        console.soft_wrap = False
    else:
        console.width = max(console.width, PIPED_WIDTH)
    return console


stdout = _console(stderr=False)
stderr = _console(stderr=True)

STACK_BELOW = 120
"""Terminals narrower than this get one block per row instead of a wide table, so no
cell is ever cut to "…" or squeezed to a character or two (tests/cli/test_layout.py)."""


def stacked() -> bool:
    """Whether stdout is too narrow for the wide tables."""
    return stdout.width < STACK_BELOW


_emitted = {"json": False}


def print_json(data: Any) -> None:
    """Write ``data`` as indented strict JSON to stdout (for ``--json``).

    Non-finite floats become ``null`` (JSON has no NaN). The error renderer in
    :mod:`servekit.cli.main` prints no second document when a command already printed one.
    """
    text = json.dumps(strict_json(data), indent=2, sort_keys=False, default=str, allow_nan=False)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    _emitted["json"] = True


def start() -> None:
    """Forget an earlier invocation's output (``main`` may run more than once in a process)."""
    _emitted["json"] = False


def json_emitted() -> bool:
    """Whether this process already wrote its JSON document to stdout."""
    return _emitted["json"]


def error_json(exc: Error) -> dict[str, Any]:
    """A servekit error as the JSON every command prints on failure with ``--json``:
    the class, its exit code, message and hint (and file/expected/actual when verifying).
    """
    data: dict[str, Any] = {
        "ok": False,
        "error": type(exc).__name__,
        "exit_code": exc.exit_code,
        "message": exc.message,
        "hint": exc.hint,
    }
    if isinstance(exc, VerificationError):
        data["message"] = exc.message.splitlines()[0]
        data |= {"file": exc.file, "expected": exc.expected, "actual": exc.actual}
    return data


def fail(exc: Error, result: dict[str, Any] | None, *, as_json: bool) -> Error:
    """``exc``, after printing ``result`` merged with the error object when ``as_json``.

    For commands that have a result even when they fail (a check report with refused
    claims): ``raise fail(ClaimRuleError(...), report, as_json=as_json)``.
    """
    if as_json:
        print_json({**(result or {}), **error_json(exc)})
    return exc


def print_wrapped(text: str, *, indent: str = "  ") -> None:
    """Print plain ``text`` (escaped here) wrapped at word boundaries to the terminal's
    width, later lines indented: a long sentence stays readable at 80 columns."""
    lines = textwrap.wrap(
        printable(text),
        width=stdout.width,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )
    for line in lines:
        stdout.print(escape(line))


def plain(text: str) -> str:
    """``text`` safe to print: control characters escaped, rich markup escaped.

    Kit member names, paths and figure labels come from data a mirror may control; a
    name carrying ``ESC[`` sequences or ``[reported]`` must reach the terminal as text.
    """
    return escape(printable(text))


def _wrapped(line: str, width: int) -> list[str]:
    """One line of an error, wrapped at word boundaries to ``width``; continuation lines
    are indented two more than the line's own indentation."""
    indent = line[: len(line) - len(line.lstrip(" "))]
    return textwrap.wrap(
        line,
        width=width,
        initial_indent="",
        subsequent_indent=indent + "  ",
        break_long_words=False,
        break_on_hyphens=False,
        drop_whitespace=True,
    ) or [line]


def print_error(exc: Error) -> None:
    """``error: MESSAGE`` and ``hint: HINT`` on stderr, each line wrapped to the terminal.

    The message's own lines and indentation are kept; text from outside was escaped
    when the message was built (:func:`servekit.errors.layout`), and a message that was
    not laid out is escaped whole, so it stays on one line.
    """
    for label, style, text in (("error", "bold red", exc.message), ("hint", "yellow", exc.hint)):
        if not text:
            continue
        lines = f"{label}: {shown(text)}".split("\n")
        out = [piece for line in lines for piece in _wrapped(line, stderr.width)]
        head = out[0][len(label) + 1 :]
        stderr.print(f"[{style}]{label}:[/]{escape(head)}", soft_wrap=True)
        for line in out[1:]:
            stderr.print(escape(line), soft_wrap=True)
