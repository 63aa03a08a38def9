"""``servekit keys``: make an Ed25519 signing key pair; show a key's id."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import typer

from servekit.cli.output import plain, print_json, stdout
from servekit.seams import output_dir

app = typer.Typer(
    help="Ed25519 keys that sign receipts: generate a pair, show a key's id.",
    no_args_is_help=True,
)


@app.command("generate")
def generate_command(
    out: Path = typer.Option(..., "--out", help="Directory for servekit.key and servekit.pub."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Write a new key pair: DIR/servekit.key (mode 0600, keep it secret) and DIR/servekit.pub.

    Refuses to overwrite existing key files (exit 5). Publish servekit.pub and its
    key id so buyers can add it to their trust store.
    """
    from servekit.receipts.keys import generate, write_key_pair

    key = generate()
    with output_dir(out, force=True):  # no parent created; existing keys refused below
        paths = write_key_pair(key, out)
    result = {
        "private_key": str(paths.private),
        "public_key": str(paths.public),
        "key_id": key.public.key_id,
    }
    if as_json:
        print_json(result)
        return
    stdout.print(f"private key: {plain(str(paths.private))} (mode 0600; never share it)")
    stdout.print(f"public key:  {plain(str(paths.public))}")
    stdout.print(f"key id:      {key.public.key_id}")


@app.command("show")
def show_command(
    file: Path = typer.Argument(..., help="A servekit.key or servekit.pub file."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Print a key file's kind (private or public), key id and public key.

    The key id is the hex sha256 of the raw 32-byte Ed25519 public key: compare it
    with the id the publisher announces before trusting a key.
    """
    from servekit.receipts.keys import describe_key

    info = describe_key(file)
    if as_json:
        print_json(asdict(info))
        return
    stdout.print(f"file:   {plain(info.path)} (mode {info.mode})")
    stdout.print(f"kind:   Ed25519 {info.kind} key")
    stdout.print(f"key id: {info.key_id}")
    stdout.print(info.public_pem.rstrip(), markup=False)
