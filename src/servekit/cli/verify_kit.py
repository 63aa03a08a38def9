"""``servekit verify kit``: check a kit's files, receipt signature and subjects offline."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from servekit.cli.choices import EXPECT_HELP, TRUST_HELP
from servekit.cli.output import error_json, plain, print_json, stdout
from servekit.errors import VerificationError

if TYPE_CHECKING:  # the verifier loads when a kit is verified, not for --help
    from servekit.verify.kit import KitVerification

__all__ = ["EXPECT_HELP", "TRUST_HELP", "kit_command"]


def failure_dict(exc: VerificationError) -> dict[str, Any]:
    """A verification failure as JSON: the class, its exit code, file, expected, actual."""
    return {"verified": False, **error_json(exc)}


def identity_line(package_id: str, version: str, publisher: str) -> str:
    """The first line of every verification: which package and version this kit is."""
    return f"This kit is {plain(package_id)} version {plain(version)}, published by {plain(publisher)}."


def render_identity(result: KitVerification) -> None:
    stdout.print(identity_line(result.package_id, result.version, result.publisher))


def render(result: KitVerification) -> None:
    render_identity(result)
    stdout.print(f"[green]✓ verified[/] {plain(result.source)}")
    stdout.print(f"  signed by:  {result.key_id}")
    if result.signed_at is not None:
        stdout.print(f"  signed at:  {result.signed_at:%Y-%m-%dT%H:%M:%SZ}")
    stdout.print(f"  kit digest: sha256:{result.kit_digest} ({result.files} files)")
    stdout.print(f"  model:      {plain(result.model)}")
    stdout.print(f"  evidence:   {len(result.evidence)} file(s) bound to the receipt")
    stdout.print("  figures, recomputed from the kit's evidence by the claim rules:")
    for f in result.figures:
        origin = f.provenance.value + (" (simulator)" if f.simulator else "")
        value = f"{f.value:.{f.decimals}f} {f.unit}"
        stdout.print(f"  {plain(f.label)}: {plain(value)} {plain(f'[{origin}]')}")
    if result.simulator:
        stdout.print("[yellow]  simulator figures measured servekit's simulator, not an engine[/]")


def kit_command(
    kit: Path = typer.Argument(..., help="KIT.tar.gz, or an unpacked kit directory."),
    trust: Path = typer.Option(..., "--trust", help=TRUST_HELP),
    expect: str | None = typer.Option(None, "--expect", metavar="ID@VERSION", help=EXPECT_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    feed: Path | None = typer.Option(
        None, "--feed", help="A signed revocation feed (feed.json) to hold the kit against."
    ),
    feed_state: Path | None = typer.Option(
        None, "--feed-state", help="State file of the last feed serial seen (default: cache dir)."
    ),
) -> None:
    """Verify a kit offline: canonical archive, MANIFEST, receipt signature, grant, claims.

    Prints the package id and version first. Exit 0 when verified. Otherwise: 10 a file
    changed, 11 a file is missing, 12 an extra file, 13 a bad or untrusted signature (or an
    empty trust store), 14 a receipt subject does not match the kit or the model pin, 15 an
    unsafe archive member, 16 a file cannot be read, 17-28 a specific refusal of the
    archive, the receipt, the key's grant, --expect or the recomputed claims (docs/errors.md).
    With --json the failure is also printed as JSON.
    With --feed: 50-54 when the feed is malformed, wrongly signed, expired, rolled back,
    or revokes the kit (docs/feed.md); a retracted figure is a warning.
    """
    from servekit.cli.feed import hold_against_feed
    from servekit.receipts.keys import load_trust_store
    from servekit.verify.expect import Expectation
    from servekit.verify.kit import verify_kit

    wanted = Expectation.parse(expect) if expect is not None else None
    try:
        trusted = load_trust_store(trust, bare_key=True)
        result = verify_kit(kit, trusted, expect=wanted)
        hold_against_feed(feed, trusted, feed_state, kit=result.package)
    except VerificationError as exc:
        if as_json:
            print_json(failure_dict(exc))
        raise
    if as_json:
        print_json(result.as_dict())
    else:
        render(result)
