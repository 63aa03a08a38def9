"""``servekit verify weights``: the bytes on disk are the bytes that were pinned."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from servekit.cli.output import fail, plain, print_json, stdout
from servekit.errors import Error, UsageError

if TYPE_CHECKING:  # the verifier loads when weights are checked, not for --help
    from servekit.receipts.keys import TrustStore
    from servekit.verify.weights import Expected, WeightsReport


def _expected(
    pin: Path | None, package: Path | None, kit: Path | None, trust: Path | None
) -> Expected:
    from servekit.verify.weights import (
        expected_from_kit,
        expected_from_package,
        expected_from_pin_file,
    )

    given = [p for p in (pin, package, kit) if p is not None]
    if len(given) != 1:
        raise UsageError(
            "pass exactly one of --pin PIN.json, --package PKG_DIR or --kit KIT",
            hint="the pin says what the weights must be",
        )
    if pin is not None:
        return expected_from_pin_file(pin)
    if package is not None:
        return expected_from_package(package)
    assert kit is not None
    if trust is None:
        raise UsageError(
            "--kit needs --trust: the kit is verified before its pin is believed",
            hint="pass the publisher's servekit.pub or your trust file with --trust",
        )
    from servekit.receipts.keys import load_trust_store  # a pin file needs no trust store

    return expected_from_kit(kit, load_trust_store(trust, bare_key=True))


def _feed_trust(feed: Path | None, trust: Path | None) -> TrustStore:
    from servekit.receipts.keys import TrustStore, load_trust_store

    if feed is not None and trust is None:
        raise UsageError("--feed needs --trust: the publisher's key that signs the feed")
    return (
        load_trust_store(trust, bare_key=True)
        if trust is not None
        else TrustStore(source="none", keys={})
    )


def _directory(directory: Path | None, fetch: bool, expected: Expected) -> Path:
    if fetch and directory is not None:
        raise UsageError(
            "--fetch downloads into the Hugging Face cache; do not pass DIR with it",
            hint="set HF_HUB_CACHE to choose where the cache is",
        )
    if not fetch:
        if directory is None:
            raise UsageError("pass the model directory DIR, or --fetch to download it first")
        return directory
    if expected.repo is None or expected.commit is None:
        raise UsageError(
            f"{expected.source} names no repository and commit, so there is nothing to fetch",
            hint="pins made by `servekit model digest` are local; download the model yourself",
        )
    from servekit.weights.hub import Hub

    return Hub().snapshot(expected.repo, expected.commit)


def render_weights(report: WeightsReport) -> None:
    """Print a verified tree; a failed one is rendered as its error, on stderr."""
    if report.ok:
        stdout.print(
            f"[green]✓[/] {report.files} files, {report.bytes:,} bytes match "
            f"{plain(report.source)} ({report.gigabytes_per_second:.2f} GB/s)"
        )
        stdout.print(f"tree digest {report.actual_tree_digest}")


def weights_command(
    directory: Path | None = typer.Argument(
        None, help="The model directory, or a snapshot directory of the Hugging Face cache."
    ),
    pin: Path | None = typer.Option(None, "--pin", help="A pin file (PIN.json)."),
    package: Path | None = typer.Option(None, "--package", help="A package directory."),
    kit: Path | None = typer.Option(
        None, "--kit", help="A kit (.tar.gz or directory), verified first against --trust."
    ),
    trust: Path | None = typer.Option(
        None,
        "--trust",
        help="Trust file or servekit.pub: the kit (--kit) and the feed (--feed) must verify against it.",
    ),
    fetch: bool = typer.Option(
        False, "--fetch", help="Download the pinned commit into the Hugging Face cache first."
    ),
    workers: int | None = typer.Option(
        None,
        "--workers",
        min=1,
        help="Hashing workers (default: every core, more when whole files would leave one idle).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    feed: Path | None = typer.Option(
        None, "--feed", help="A signed revocation feed (feed.json); needs --trust."
    ),
    feed_state: Path | None = typer.Option(
        None, "--feed-state", help="State file of the last feed serial seen (default: cache dir)."
    ),
    publisher: str | None = typer.Option(
        None,
        "--publisher",
        metavar="NAME",
        help="With --feed and a bare --pin: the publisher whose feed it must be.",
    ),
) -> None:
    """Check every file of a model tree against its pin: names and sizes first, then sha256.

    Exit 0 when every file matches; otherwise every missing, extra, changed or
    unreadable file is named with the expected and the actual value, and the exit
    code names the failure (10 changed, 11 missing, 12 extra, 16 unreadable/unsafe).
    With --feed (and --trust) the model commit, and the kit's or package's version and
    engine build, are first held against the revocation feed (exit 50-54, docs/feed.md);
    it must be the feed of the kit's or package's publisher (with a bare --pin, name it
    with --publisher).
    """
    from servekit.verify.weights import check_weights

    expected = _expected(pin, package, kit, trust)
    if expected.package is not None and not as_json:
        from servekit.cli.verify_kit import identity_line

        stdout.print(identity_line(*expected.package))
    if feed is not None:  # else neither the feed nor a trust store loads (start-up)
        from servekit.cli.feed import hold_against_feed

        hold_against_feed(
            feed,
            _feed_trust(feed, trust),
            feed_state,
            kit=expected.kit,
            package=package,
            model=(expected.repo, expected.commit),
            publisher=publisher,
        )
    report = check_weights(_directory(directory, fetch, expected), expected, workers=workers)
    if not as_json:
        render_weights(report)
    try:
        report.raise_for_problems()
    except Error as exc:
        raise fail(exc, report.as_dict(), as_json=as_json) from None
    if as_json:
        print_json({"ok": True, **report.as_dict()})
