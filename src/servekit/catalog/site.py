"""Static catalog export: one page per package version and an index, from the cards."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from servekit.catalog.cards import Card, build_card
from servekit.errors import PackageError, UsageError
from servekit.package.load import load_package
from servekit.package.rules import check


def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("servekit.catalog", "templates"),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
    )


def load_cards(packages_dir: Path) -> list[Card]:
    """Cards for every package directory under ``packages_dir`` (sorted by id)."""
    dirs = sorted(p.parent for p in packages_dir.glob("*/package.yaml"))
    if not dirs:
        raise UsageError(
            f"no package.yaml under {packages_dir}/*/",
            hint="pass the directory that holds one folder per package",
        )
    cards: list[Card] = []
    seen: dict[tuple[str, str], Path] = {}
    for directory in dirs:
        loaded = load_package(directory)
        _refuse_duplicate(seen, loaded.package.id, loaded.package.version, directory)
        cards.append(build_card(loaded, check(loaded)))
    return sorted(cards, key=lambda c: c.id)


def _refuse_duplicate(
    seen: dict[tuple[str, str], Path], package_id: str, version: str, directory: Path
) -> None:
    """One catalog holds each id and version once: two would share a page and a kit name."""
    first = seen.setdefault((package_id, version), directory)
    if first != directory:
        raise PackageError(
            f"{first} and {directory} are both {package_id} {version}",
            hint="give one of them a new version (or id); a catalog lists each version once",
        )


def render_page(card: Card) -> str:
    return _environment().get_template("catalog/package.html").render(card=card)


def render_index(cards: Iterable[Card]) -> str:
    return _environment().get_template("catalog/index.html").render(cards=list(cards))


def export_site(cards: list[Card], out: Path) -> list[Path]:
    """Write ``index.html`` and ``<id>-<version>.html`` pages; returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "index.html"]
    written[0].write_text(render_index(cards), encoding="utf-8")
    for card in cards:
        page = out / f"{card.id}-{card.version}.html"
        page.write_text(render_page(card), encoding="utf-8")
        written.append(page)
    return written
