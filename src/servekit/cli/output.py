"""Shared output helpers for the CLI: one stdout console, one stderr console, JSON."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console

stdout = Console(highlight=False, soft_wrap=True)
stderr = Console(stderr=True, highlight=False, soft_wrap=True)


def print_json(data: Any) -> None:
    """Write ``data`` as indented JSON to stdout (for ``--json``)."""
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
    sys.stdout.flush()
