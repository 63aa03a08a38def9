"""``servekit demo``: the main job until the web app lands: check and print the examples."""

from __future__ import annotations

from pathlib import Path

import typer

from servekit.cli.output import stdout
from servekit.cli.package import render_report
from servekit.config import load_settings
from servekit.errors import UsageError
from servekit.package import check, load_package


def demo(
    examples: Path | None = typer.Option(
        None, help="Directory of example packages (default: SERVEKIT_EXAMPLES_DIR)."
    ),
) -> None:
    """Check every example package and print its figures with their provenance."""
    root = examples or load_settings().examples_dir
    dirs = sorted(p.parent for p in root.glob("*/package.yaml"))
    if not dirs:
        raise UsageError(f"no packages under {root}", hint="run from the repository root")
    failed = 0
    for directory in dirs:
        stdout.rule(str(directory))
        report = check(load_package(directory))
        render_report(report)
        failed += 0 if report.ok else 1
    if failed:
        raise typer.Exit(code=4)
