"""``servekit demo``: the main job of `make run`: the publisher's and buyer's loop on the examples.

Steps:
  1. check every example package (every measured figure recomputed from raw records);
  2. generate a throwaway Ed25519 key pair in a temporary directory (never a key of
     yours: nothing under OUT/keys is read or replaced); its public half goes to
     OUT/kits/demo.pub so the kits can be verified afterwards;
  3. build each package's kit (OUT/kits/ID-VERSION.tar.gz) and verify it offline;
  4. export the static catalog to OUT/catalog.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from servekit.cli.output import fail, plain, print_json, stderr, stdout
from servekit.errors import ClaimRuleError, ClaimViolation, UsageError

if TYPE_CHECKING:  # the library loads when the demo runs, not for --help
    from servekit.receipts.keys import KeyPairPaths


def _package_dirs(root: Path) -> list[Path]:
    from servekit.package.files import PACKAGE_GLOB

    dirs = sorted(p.parent for p in root.glob(PACKAGE_GLOB))
    if not dirs:
        raise UsageError(f"no packages under {root}", hint="run from the repository root")
    return dirs


def demo(
    examples: Path | None = typer.Option(
        None, metavar="DIR", help="Directory of example packages (default: SERVEKIT_EXAMPLES_DIR)."
    ),
    out: Path = typer.Option(
        Path("out/demo"), "--out", metavar="DIR", help="Where kits and pages go (new or empty)."
    ),
    force: bool = typer.Option(False, "--force", help="Write into a non-empty --out."),
    as_json: bool = typer.Option(False, "--json", help="Print the kits and pages as JSON."),
) -> None:
    """Check every example package, build and verify its signed kit, export the catalog.

    Signs with a fresh temporary key, never one of yours; its public half is written
    to OUT/kits/demo.pub. Exit 4 when a claim rule refuses an example's figure.
    """
    from servekit.config import load_settings
    from servekit.receipts.keys import generate, write_key_pair
    from servekit.seams import output_dir

    dirs = _package_dirs(examples or load_settings().examples_dir)
    with output_dir(out, force=force), tempfile.TemporaryDirectory() as keydir:
        done = _demo(dirs, out, write_key_pair(generate(), Path(keydir) / "keys"), as_json)
    result = {
        "out": str(out),
        "public_key": str(out / "kits" / "demo.pub"),
        "kits": [str(k) for k in done.kits],
        "catalog": str(done.pages[0]),
        "packages": len(dirs),
    }
    if done.failed:
        raise fail(ClaimRuleError(done.failed), result, as_json=as_json)
    if as_json:
        print_json({"ok": True, **result})


@dataclass(frozen=True)
class _Done:
    failed: list[ClaimViolation]
    kits: list[Path]
    pages: list[Path]


def _demo(dirs: list[Path], out: Path, keys: KeyPairPaths, as_json: bool) -> _Done:
    """The loop itself; with --json the human output goes to stderr."""
    from servekit.catalog import Catalog, Entry, build_card, export_site
    from servekit.cli.package import render_report
    from servekit.kit.build import build_kit, write_kit
    from servekit.package import check, load_package
    from servekit.receipts.keys import load_trust_store
    from servekit.verify.kit import verify_kit

    console = stderr if as_json else stdout
    private = keys.private
    public = out / "kits" / "demo.pub"
    public.parent.mkdir(exist_ok=True)
    shutil.copyfile(keys.public, public)
    trust, entries = load_trust_store(public, bare_key=True), []
    failed: list[ClaimViolation] = []
    kits: list[Path] = []
    for directory in dirs:
        console.rule(plain(str(directory)))
        loaded = load_package(directory)
        report = check(loaded)
        if not as_json:
            render_report(report)
        entries.append(Entry(loaded=loaded, card=build_card(loaded, report)))
        if not report.ok:
            failed.extend(report.violations)
            continue
        kit_path = out / "kits" / f"{report.package_id}-{report.version}.tar.gz"
        kit = build_kit(directory, private)
        write_kit(kit, kit_path)
        result = verify_kit(kit_path, trust)
        kits.append(kit_path)
        console.print(
            f"[green]✓[/] kit {plain(str(kit_path))}: {result.files} files, "
            f"{len(kit.archive):,} bytes, signature and manifest verified"
        )
    pages = export_site(Catalog(entries), out / "catalog").pages
    console.rule()
    console.print(f"catalog: {plain(str(pages[0]))} ({len(entries)} package pages)")
    return _Done(failed=failed, kits=kits, pages=pages)
