"""``servekit model``: pin an upstream model, or digest a local model tree."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from servekit.cli.output import plain, print_json, stdout
from servekit.seams import output_file

if TYPE_CHECKING:  # the pinning library loads when a command runs, not for --help
    from servekit.weights.models import WeightsPin

app = typer.Typer(
    help="Pin an upstream model at an immutable commit, or digest a local model tree "
    "(every file's path, size and sha256, and the tree digest: docs/digest.md).",
    no_args_is_help=True,
)


def pin_summary(pin: WeightsPin, written: list[Path]) -> dict[str, object]:
    return {
        "repo": pin.repo,
        "revision": pin.revision,
        "commit": pin.commit,
        "tree_digest": pin.tree_digest,
        "files": pin.file_count,
        "shard_count": pin.shard_count,
        "total_bytes": pin.total_bytes,
        "written": [str(p) for p in written],
    }


def render_pin(pin: WeightsPin, written: list[Path], as_json: bool) -> None:
    if as_json:
        print_json(pin_summary(pin, written))
        return
    if pin.repo:
        stdout.print(f"pinned {plain(pin.repo)}@{plain(pin.revision or '')} → commit {pin.commit}")
    stdout.print(
        f"{pin.file_count} files, {pin.shard_count} weight files, {pin.total_bytes:,} bytes"
    )
    stdout.print(f"tree digest {pin.tree_digest}")
    for path in written:
        stdout.print(f"wrote {plain(str(path))}")


@app.command("pin")
def pin_command(
    repo: str = typer.Argument(..., help="Hugging Face model repository, e.g. org/name."),
    revision: str = typer.Option(
        ..., "--revision", "-r", help="Branch, tag or commit; pinned to the commit it names now."
    ),
    output: Path | None = typer.Option(
        None, "--output", "-o", help="Write the pin here (default: PIN.json, unless --package)."
    ),
    package: Path | None = typer.Option(
        None,
        "--package",
        help="Write the pin into this package (model/pin.json) and set package.yaml's "
        "model.commit, tree_digest, total_bytes, shard_count and files.",
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing pin file."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Resolve REPO at --revision to its commit and pin every file's size and sha256.

    Large (LFS) files take the sha256 the Hub publishes; small files are downloaded
    at the commit, checked against their git blob id, and hashed. Gated or private
    repositories need a token: HF_TOKEN, or `hf auth login`. Exit 6 on a Hub problem.
    """
    from servekit.weights.package import pin_into_package
    from servekit.weights.pin import pin_repo
    from servekit.weights.pinfile import write_pin

    target = output or Path("PIN.json")
    if output is not None or package is None:
        output_file(target, force=force, option="--output")
    pin = pin_repo(repo, revision)
    written = []
    if package is not None:
        written.append(pin_into_package(pin, package))
    if output is not None or package is None:
        write_pin(pin, target)
        written.append(target)
    render_pin(pin, written, as_json)


@app.command("digest")
def digest_command(
    directory: Path = typer.Argument(..., help="A model directory or a cache snapshot."),
    output: Path | None = typer.Option(
        None, "--output", "-o", help="Write the pin here (default: print the digest only)."
    ),
    workers: int | None = typer.Option(
        None, "--workers", min=1, help="Hashing threads (default: every core)."
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing pin file."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Hash every file of a local model tree and compute its tree digest.

    Symlinks of a Hugging Face cache snapshot are followed inside the snapshot and
    its blobs/ only. An unreadable or unsafe entry is an error (exit 16).
    """
    from servekit.weights.pin import pin_directory
    from servekit.weights.pinfile import write_pin

    if output is not None:
        output_file(output, force=force, option="--output")
    pin = pin_directory(directory, workers=workers)
    written = []
    if output is not None:
        write_pin(pin, output)
        written.append(output)
    render_pin(pin, written, as_json)
