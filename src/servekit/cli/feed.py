"""``servekit feed``: sign a publisher's revocation feed."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from servekit.cli.output import plain, print_json, stderr, stdout
from servekit.seams import output_file

if TYPE_CHECKING:  # the feed library loads when a command runs, not for --help
    from servekit.package.models import Package
    from servekit.receipts.keys import TrustStore

app = typer.Typer(
    help="The publisher's revocation feed: revoked versions, retracted figures, bad builds.",
    no_args_is_help=True,
)


@app.command("sign")
def sign_command(
    source: Path = typer.Argument(..., help="feed.yaml: the publisher's retractions."),
    key: Path = typer.Option(..., "--key", help="The publisher's private key (servekit.key)."),
    out: Path = typer.Option(Path("feed.json"), "--out", "-o", help="Signed feed to write."),
    expires_in: str = typer.Option(
        "7d", metavar="DURATION", help="How long buyers accept it: 7d, 12h, 30m."
    ),
    state: Path | None = typer.Option(
        None, "--state", help="State file of the last serial signed (default: the cache dir)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Sign feed.yaml into feed.json with a serial one higher than the last one signed
    and an expiry time; buyers pass it to `verify kit --feed` and `verify weights --feed`.
    It replaces --out in place (each signing supersedes the last), but creates no directory.
    """
    from servekit.feed import default_state_path, sign_feed_file
    from servekit.feed.sign import parse_duration

    output_file(out, force=True, option="--out")
    signed = sign_feed_file(
        source,
        key,
        out,
        expires_in=parse_duration(expires_in),
        state_path=state or default_state_path(),
    )
    if as_json:
        print_json(
            {
                "feed": str(signed.path),
                "publisher": signed.publisher,
                "serial": signed.serial,
                "expires": signed.expires.isoformat(),
                "retractions": signed.entries,
                "key_id": signed.key_id,
            }
        )
        return
    stdout.print(
        f"[green]✓ signed[/] {plain(str(signed.path))}: {plain(signed.publisher)}, serial "
        f"{signed.serial}, {signed.entries} retraction(s), expires {signed.expires.isoformat()}"
    )
    stdout.print(f"  signed by: {signed.key_id}")


def hold_against_feed(
    feed: Path | None,
    trust: TrustStore,
    feed_state: Path | None,
    *,
    kit: Package | None = None,
    package: Path | None = None,
    model: tuple[str | None, str | None] | None = None,
    publisher: str | None = None,
) -> None:
    """``--feed`` of the verify commands: refuse what the feed revokes, warn on retractions.

    With ``model`` (``verify weights``) the model commit is held against the feed, and
    the kit's or package's version and engine when one is given; else the kit's package.
    The feed must be the kit's (package's, ``publisher``'s) own publisher's. ``kit`` is
    the package of a kit already verified (parsed from the verified bytes, not re-read).
    """
    if feed is None:
        return
    from servekit.feed import check_kit_feed, check_weights_feed, default_state_path

    state = feed_state or default_state_path()
    if model is None:
        assert kit is not None
        result = check_kit_feed(kit, feed, trust, state_path=state)
    else:
        result = check_weights_feed(
            feed,
            trust,
            state_path=state,
            model=model,
            kit=kit,
            package_dir=package,
            publisher=publisher,
        )
    p = result.feed.predicate
    stderr.print(
        f"feed: {plain(p.publisher)} serial {p.serial}, expires {p.expires.isoformat()}: "
        "nothing here is revoked"
    )
    for entry in result.retracted:
        link = f" ({plain(entry.link)})" if entry.link else ""
        stderr.print(
            f"[yellow]warning: figure '{plain(entry.figure)}' was retracted on "
            f"{entry.date.isoformat()}: {plain(entry.reason)}{link}[/]"
        )
