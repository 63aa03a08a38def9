"""``servekit verify kit``: check a kit's files, receipt signature and subjects offline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from servekit.cli.feed import hold_against_feed
from servekit.cli.output import print_json, stdout
from servekit.errors import VerificationError
from servekit.receipts.keys import load_trust_store
from servekit.verify.kit import KitVerification, verify_kit


def failure_dict(exc: VerificationError) -> dict[str, Any]:
    """A verification failure as JSON: the class, its exit code, file, expected, actual."""
    return {
        "verified": False,
        "error": type(exc).__name__,
        "exit_code": exc.exit_code,
        "message": exc.message.splitlines()[0],
        "file": exc.file,
        "expected": exc.expected,
        "actual": exc.actual,
        "hint": exc.hint,
    }


def render(result: KitVerification) -> None:
    stdout.print(f"[green]✓ verified[/] {escape(result.source)}")
    stdout.print(
        f"  package:    {result.package_id} {result.version} by {escape(result.publisher)}"
    )
    stdout.print(f"  signed by:  {result.key_id}")
    stdout.print(f"  kit digest: sha256:{result.kit_digest} ({result.files} files)")
    stdout.print(f"  model:      {escape(result.model)}")
    stdout.print(f"  evidence:   {len(result.evidence)} file(s) bound to the receipt")
    for f in result.figures:
        origin = f.provenance.value + (" (simulator)" if f.simulator else "")
        stdout.print(f"  {escape(f.label)}: {f.value:.{f.decimals}f} {f.unit} [{origin}]")
    if result.simulator:
        stdout.print("[yellow]  simulator figures measured servekit's simulator, not an engine[/]")


def kit_command(
    kit: Path = typer.Argument(..., help="KIT.tar.gz, or an unpacked kit directory."),
    trust: Path = typer.Option(
        ..., "--trust", help="Trusted publisher key (.pub) or trust store (file or directory)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    feed: Path | None = typer.Option(
        None, "--feed", help="A signed revocation feed (feed.json) to hold the kit against."
    ),
    feed_state: Path | None = typer.Option(
        None, "--feed-state", help="State file of the last feed serial seen (default: cache dir)."
    ),
) -> None:
    """Verify a kit offline: safe archive, MANIFEST, receipt signature, subjects.

    Exit 0 when verified. Otherwise: 10 a file changed, 11 a file is missing, 12 an
    extra file, 13 a bad or untrusted signature (or an empty trust store), 14 a receipt
    subject does not match the kit or the model pin, 15 an unsafe or malformed archive,
    16 a file cannot be read. With --json the failure is also printed as JSON.
    With --feed: 50-54 when the feed is malformed, wrongly signed, expired, rolled back,
    or revokes the kit (docs/feed.md); a retracted figure is a warning.
    """
    try:
        result = verify_kit(kit, load_trust_store(trust))
        hold_against_feed(feed, load_trust_store(trust), feed_state, kit=kit)
    except VerificationError as exc:
        if as_json:
            print_json(failure_dict(exc))
        raise
    if as_json:
        print_json(result.as_dict())
    else:
        render(result)
