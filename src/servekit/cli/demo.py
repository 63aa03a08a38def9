"""``servekit demo``: the main job of `make run`: the publisher's and buyer's loop on the examples.

Steps:
  1. check every example package (every measured figure recomputed from raw records);
  2. generate a throwaway Ed25519 key pair under OUT/keys;
  3. build each package's kit (OUT/kits/ID-VERSION.tar.gz) and verify it offline;
  4. export the static catalog to OUT/catalog.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from servekit.catalog import Catalog, Entry, build_card, export_site
from servekit.cli.output import stdout
from servekit.cli.package import render_report
from servekit.config import load_settings
from servekit.errors import UsageError
from servekit.kit.build import build_kit, write_kit
from servekit.package import check, load_package
from servekit.package.files import PACKAGE_GLOB
from servekit.receipts.keys import generate, load_trust_store, write_key_pair
from servekit.verify.kit import verify_kit


def _package_dirs(root: Path) -> list[Path]:
    dirs = sorted(p.parent for p in root.glob(PACKAGE_GLOB))
    if not dirs:
        raise UsageError(f"no packages under {root}", hint="run from the repository root")
    return dirs


def _fresh_keys(out: Path) -> tuple[Path, Path]:
    keys = out / "keys"
    for name in ("servekit.key", "servekit.pub"):
        (keys / name).unlink(missing_ok=True)
    paths = write_key_pair(generate(), keys)
    return paths.private, paths.public


def demo(
    examples: Path | None = typer.Option(
        None, help="Directory of example packages (default: SERVEKIT_EXAMPLES_DIR)."
    ),
    out: Path = typer.Option(Path("out/demo"), "--out", help="Where keys, kits and pages go."),
) -> None:
    """Check every example package, build and verify its signed kit, export the catalog."""
    dirs = _package_dirs(examples or load_settings().examples_dir)
    private, public = _fresh_keys(out)
    trust, entries, failed = load_trust_store(public), [], 0
    for directory in dirs:
        stdout.rule(escape(str(directory)))
        loaded = load_package(directory)
        report = check(loaded)
        render_report(report)
        entries.append(Entry(loaded=loaded, card=build_card(loaded, report)))
        if not report.ok:
            failed += 1
            continue
        kit_path = out / "kits" / f"{report.package_id}-{report.version}.tar.gz"
        kit_path.parent.mkdir(parents=True, exist_ok=True)
        kit = build_kit(directory, private)
        write_kit(kit, kit_path)
        result = verify_kit(kit_path, trust)
        stdout.print(
            f"[green]✓[/] kit {escape(str(kit_path))}: {result.files} files, "
            f"{len(kit.archive):,} bytes, signature and manifest verified"
        )
    pages = export_site(Catalog(entries), out / "catalog")
    stdout.rule()
    stdout.print(f"catalog: {escape(str(pages[0]))} ({len(entries)} package pages)")
    if failed:
        raise typer.Exit(code=4)
