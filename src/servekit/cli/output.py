"""Shared output helpers for the CLI: one stdout console, one stderr console, JSON."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape

from servekit.errors import printable

PIPED_WIDTH = 240  # columns when not writing to a terminal (CI logs, `| tee`, files)


def _console(*, stderr: bool) -> Console:
    """A console as wide as the terminal, or ``PIPED_WIDTH`` when not a terminal.

    Rich falls back to 80 columns without a terminal and squeezes tables into them,
    cutting every number to "3…"; a log or a file has no width to respect.
    """
    console = Console(stderr=stderr, highlight=False, soft_wrap=True)
    if not console.is_terminal:
        console.width = max(console.width, PIPED_WIDTH)
    return console


stdout = _console(stderr=False)
stderr = _console(stderr=True)


def print_json(data: Any) -> None:
    """Write ``data`` as indented JSON to stdout (for ``--json``)."""
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
    sys.stdout.flush()


def plain(text: str) -> str:
    """``text`` safe to print: control characters escaped, rich markup escaped.

    Kit member names, paths and figure labels come from data a mirror may control; a
    name carrying ``ESC[`` sequences or ``[reported]`` must reach the terminal as text.
    """
    return escape(printable(text))
