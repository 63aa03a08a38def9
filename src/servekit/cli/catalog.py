"""``servekit catalog``: show a package's card, export the static catalog."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from servekit.cli.output import plain, print_json, stdout

if TYPE_CHECKING:  # the catalog loads when a command runs, not for --help
    from servekit.catalog import Card

app = typer.Typer(
    help="Catalog cards and pages, read from package definitions (nothing typed twice).",
    no_args_is_help=True,
)


def _print_card(card: Card) -> None:
    stdout.print(f"[bold]{plain(card.name)}[/] {plain(card.version)} ({card.status})")
    for warning in card.warnings:
        stdout.print(f"  [bold yellow]warning:[/] {plain(warning)}")
    stdout.print(f"  {plain(card.hardware)} · {plain(card.engine)}")
    if card.engine_commit:
        stdout.print(f"  engine source commit {plain(card.engine_commit)}")
    stdout.print(f"  model {plain(card.model)}: {plain(card.weights)}")
    for fig in card.figures:
        star = "*" if fig.headline else " "
        stdout.print(
            f" {star} {plain(fig.label)}: {fig.display} ({fig.context}) "
            f"{plain(f'[{fig.badge.value}]')} {plain(fig.badge_text)}"
        )
    stdout.print(f"  accuracy: {plain(card.accuracy_claim)} ({plain(card.accuracy_method)})")
    for title, _ in card.disclosures:
        stdout.print(f"  not measured / disclosed: {plain(title)}")
    stdout.print(f"  {card.price} ({card.tier}); maintenance: {card.maintenance}")


@app.command("show")
def show_command(
    directory: Path = typer.Argument(..., help="Package directory."),
    as_json: bool = typer.Option(False, "--json", help="Print the card as JSON."),
) -> None:
    """Print the catalog card of one package: every figure with its provenance badge."""
    from servekit.catalog import build_card
    from servekit.package import check, load_package

    loaded = load_package(directory)
    card = build_card(loaded, check(loaded))
    if as_json:
        print_json(card.model_dump(mode="json"))
    else:
        _print_card(card)


@app.command("export")
def export_command(
    packages: Path = typer.Argument(..., help="Directory with one folder per package."),
    out: Path = typer.Option(
        ..., "--out", "-o", metavar="DIR", help="Directory for the HTML pages (new or empty)."
    ),
    force: bool = typer.Option(
        False, "--force", help="Replace an earlier export in --out (deletes what it holds)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the pages written as JSON."),
) -> None:
    """Write the static catalog: index pages, one page and chart per package version, evidence.

    --out must be new or empty; its parent must exist (exit 2 otherwise). With --force,
    --out may hold an earlier export (it carries a .servekit-catalog-export marker): every
    file in it is deleted first, and the ones this export did not write again are listed.
    A non-empty directory without the marker is never emptied, not even with --force.
    Two package directories with the same id and version are refused (exit 3).
    """
    from servekit.catalog import export_site, load_catalog
    from servekit.catalog.site import refuse_foreign
    from servekit.seams import output_dir

    catalog = load_catalog(packages)
    refuse_foreign(out)
    with output_dir(out, force=force):
        export = export_site(catalog, out)
    if as_json:
        pages = [str(p) for p in export.pages]
        print_json(
            {
                "ok": True,
                "out": str(out),
                "packages": len(catalog.entries),
                "pages": pages,
                "removed": list(export.removed),
            }
        )
        return
    stdout.print(f"wrote {len(export.pages)} pages to {plain(str(out))}")
    if export.removed:
        stdout.print(f"removed {len(export.removed)} paths an earlier export left:")
        for path in export.removed:
            stdout.print(f"  {plain(path)}")
