"""``servekit trust``: get a store's trust file, and the key ids to compare out of band."""

from __future__ import annotations

from pathlib import Path

import typer

from servekit.cli.output import plain, print_json, stdout
from servekit.seams import output_file

app = typer.Typer(
    help="Trust files: fetch a store's signing keys with their publisher grants.",
    no_args_is_help=True,
)


@app.command("fetch")
def fetch_command(
    url: str = typer.Argument(..., help="The store's address (or its trust file's URL)."),
    out: Path = typer.Option(Path("trust.toml"), "--out", "-o", help="Trust file to write."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing --out."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Download a store's trust file (URL/keys/trust.toml), check it, write it, and print
    each key id with what it signs for. Compare the key id with one you got another way
    before you trust the file: it proves only where it came from. Exit 39 when it cannot
    be fetched, 5 when it is not a trust file, 2 when --out exists (without --force).
    """
    from servekit.receipts.fetch import fetch_trust_file

    output_file(out, force=force, option="--out")
    fetched = fetch_trust_file(url)
    out.write_bytes(fetched.data)
    keys = [
        {
            "key_id": key_id,
            "grants": [
                {"publisher": s.publisher, "packages": list(s.packages)}
                for s in fetched.store.grants[key_id].scopes
            ],
        }
        for key_id in fetched.store.key_ids
    ]
    if as_json:
        print_json({"url": fetched.url, "out": str(out), "keys": keys})
        return
    stdout.print(f"[green]✓ wrote[/] {plain(str(out))} from {plain(fetched.url)}")
    for key in keys:
        stdout.print(f"  key id: {key['key_id']}")
        for grant in key["grants"]:
            assert isinstance(grant, dict)
            packages = ", ".join(grant["packages"])
            stdout.print(f"    signs {plain(packages)} by {plain(grant['publisher'])}")
    stdout.print(
        "Compare the key id with one you got another way (the store's announcement, a "
        "colleague) before you verify with it:"
    )
    stdout.print(f"  servekit verify kit KIT.tar.gz --trust {plain(str(out))}")
