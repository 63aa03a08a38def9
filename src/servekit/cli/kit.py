"""``servekit kit``: build a signed, deterministic kit from a package."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import typer

from servekit.cli.choices import EXPECT_HELP, TRUST_HELP

# The library is imported inside each command: `kit --help` and an argument error load
# none of it (docs/performance.md, tests/cli/test_startup.py).

app = typer.Typer(
    help="Build a kit: deploy files written flag for flag from the package, evidence, "
    "licences and a signed receipt; unpack one only after verifying it.",
    no_args_is_help=True,
)


@app.command("build")
def build_command(
    package_dir: Path = typer.Argument(..., help="Package directory (holds package.yaml)."),
    key: Path = typer.Option(..., "--key", help="Private signing key (servekit.key, mode 0600)."),
    out: Path = typer.Option(
        ..., "--out", "-o", metavar="KIT.tar.gz", help="Where to write the kit (a new file)."
    ),
    signed_at: dt.datetime | None = typer.Option(
        None,
        "--signed-at",
        formats=["%Y-%m-%dT%H:%M:%S%z"],
        metavar="TIME",
        help="Signing time to record, ISO 8601 with its zone (e.g. 2026-01-31T12:00:00Z); "
        "default SOURCE_DATE_EPOCH when set, else now.",
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing --out file."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Run the claim rules, render the deploy files, sign the receipt and write KIT.tar.gz.

    Refuses on any claim-rule violation (exit 4), an unreadable or group/world-readable
    key (exit 5), a `published` date after the signing time or a package it cannot render
    (exit 3). The signing time is --signed-at, else SOURCE_DATE_EPOCH (seconds since
    1970-01-01 UTC, the reproducible-builds convention), else the clock; the same package,
    key and signing time always give a byte-identical archive. docs/kit.md describes the
    layout and how to rebuild a published kit.
    """
    from servekit.cli.output import plain, print_json, stdout
    from servekit.kit.build import build_kit, source_date_epoch, write_kit
    from servekit.seams import output_file

    output_file(out, force=force)
    when = signed_at or source_date_epoch(os.environ)
    kit = build_kit(package_dir, key, signed_at=when)
    write_kit(kit, out)
    if as_json:
        print_json({"kit": str(out), **kit.as_dict()})
        return
    stdout.print(f"wrote {plain(str(out))}: {len(kit.files)} files, {len(kit.archive)} bytes")
    stdout.print(f"package:     {kit.package_id} {kit.version}")
    stdout.print(f"kit digest:  sha256:{kit.kit_digest}")
    stdout.print(f"signed by:   {kit.key_id}")
    stdout.print(f"signed at:   {kit.signed_at:%Y-%m-%dT%H:%M:%SZ}")


@app.command("unpack")
def unpack_command(
    kit: Path = typer.Argument(..., help="KIT.tar.gz (or an unpacked kit directory)."),
    directory: Path = typer.Argument(..., help="Where to write the kit: new or empty."),
    trust: Path = typer.Option(..., "--trust", help=TRUST_HELP),
    expect: str | None = typer.Option(None, "--expect", metavar="ID@VERSION", help=EXPECT_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Verify a kit, then write only the verified bytes into DIR, with canonical modes.

    Use this instead of `tar -x`: tar writes what the archive says, this writes what was
    verified (0644, 0755 for deploy/launch.sh). Nothing is written unless the kit verifies;
    the exit codes are those of `servekit verify kit`. DIR must be new or empty, and its
    parent must exist (exit 2).
    """
    from servekit.cli.output import plain, print_json, stdout
    from servekit.cli.verify_kit import render_identity
    from servekit.receipts.keys import load_trust_store
    from servekit.seams import output_dir
    from servekit.verify.expect import Expectation
    from servekit.verify.kit import unpack_kit
    from servekit.verify.unpack import DIRECTORY_MODE

    wanted = Expectation.parse(expect) if expect is not None else None
    # no --force, no parent made, none left empty; never group-writable (umask 002 would
    # make it so, and unpack refuses a directory others can write)
    with output_dir(directory, force=None, option="DIR", mode=DIRECTORY_MODE):
        result = unpack_kit(kit, load_trust_store(trust, bare_key=True), directory, expect=wanted)
    if as_json:
        print_json({**result.as_dict(), "unpacked_to": str(directory)})
        return
    render_identity(result)
    stdout.print(
        f"[green]✓ verified[/] and unpacked {result.files} files into {plain(str(directory))}"
    )
