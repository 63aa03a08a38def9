"""Render the catalog pages, and export them as a static site.

The live web app (``servekit.web``) and ``servekit catalog export`` render the same
templates from the same :class:`~servekit.catalog.pages.Catalog`; only the
:class:`~servekit.catalog.pages.Links` differ. The static export holds the pages, the
charts, the stylesheet and every raw evidence file a figure links to; it has no store pages.

Export steps:
  1. empty a directory an earlier export wrote (only one that carries ``MARKER``; a
     non-empty directory without it is refused, so nothing the user keeps there is lost);
  2. write the marker and the stylesheet;
  3. start copying the files the figures link to, per package version, in threads: the
     kernel copies (``sendfile``) without the GIL while this thread renders;
  4. write one index page per page of cards (``index.html``, ``page-2.html``, ...);
  5. per package version: the page and its charts; then wait for the copies.

Emptying never leaves the directory: a symbolic link inside it is removed as a link, and
its target, inside the export or not, is never read, followed or deleted.
"""

from __future__ import annotations

import os
import shutil
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from servekit.catalog.cards import Card
from servekit.catalog.chart import Panel, charts, render
from servekit.catalog.listing import MAX_SEARCH, PAGE_SIZE, Listing, Query, Sort, sort_figure
from servekit.catalog.pages import (
    Catalog,
    ComparePage,
    Entry,
    Links,
    PackagePage,
    listing_of,
    package_page,
)
from servekit.catalog.text import finalize
from servekit.errors import UsageError

STYLESHEET = "catalog.css"
SCRIPT = "catalog.js"
"""The live catalog page's one script: filters apply on change (the page works without it)."""
COPY_THREADS = 4  # copies wait on the file system more than on the CPU: 4 overlap that
MARKER = ".servekit-catalog-export"
"""The file that says a directory is a catalog export, which a later export may empty."""
MARKER_TEXT = (
    "This directory was written by `servekit catalog export`.\n"
    "Exporting into it again with --force deletes everything in it first.\n"
)

# The pages' Content-Security-Policy, also in a <meta> tag so the static export carries
# it: scripts, styles and images from the page's own origin only (the one script is
# SCRIPT, on the live catalog page), nothing inline.
PAGE_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; base-uri 'none'"
)


@cache
def environment() -> Environment:
    """The one Jinja environment: autoescaping on, undefined names are errors.

    Templates are package data, compiled once per process: ``auto_reload`` off, so an
    ``{% include %}`` inside a loop is a cache lookup, not a ``stat`` of the template file.
    """
    env = Environment(
        loader=PackageLoader("servekit.catalog", "templates"),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        auto_reload=False,
        finalize=finalize,  # direction and invisible characters shown escaped (text.py)
    )
    env.globals["query_string"] = query_string
    env.globals["Query"] = Query
    env.globals["page_policy"] = PAGE_POLICY
    env.globals.update(Sort=Sort, sorts=list(Sort), sort_figure=sort_figure)
    env.globals["max_search"] = MAX_SEARCH
    return env


def query_string(query: Query, **changes: object) -> str:
    values = query.model_copy(update=changes).model_dump()
    kept = {k: v for k, v in values.items() if v and not (k == "page" and v == 1)}
    return "?" + urlencode(kept) if kept else ""


def stylesheet() -> bytes:
    return files("servekit.catalog").joinpath("static", STYLESHEET).read_bytes()


def script() -> bytes:
    return files("servekit.catalog").joinpath("static", SCRIPT).read_bytes()


def render_index(listing: Listing, links: Links, *, live: bool) -> str:
    """The catalog page; ``live`` adds the search, filter and sort form and the compare
    checkboxes (the static export has neither: its pages are the default order)."""
    template = environment().get_template("catalog/index.html")
    return template.render(listing=listing, links=links, live=live)


def render_package(page: PackagePage, links: Links, *, live: bool) -> str:
    template = environment().get_template("catalog/package.html")
    return template.render(page=page, card=page.card, pkg=page.package, links=links, live=live)


def render_compare(page: ComparePage, links: Links) -> str:
    """The compare page (live only: the static export has no way to pick versions)."""
    template = environment().get_template("catalog/compare.html")
    return template.render(page=page, links=links, live=True)


class StaticLinks:
    """Links between the files of the static export, all relative to its root."""

    def index(self, query: Query) -> str:
        return "index.html" if query.page == 1 else f"page-{query.page}.html"

    def package(self, card: Card) -> str:
        return f"{card.id}-{card.version}.html"

    def file(self, card: Card, path: str) -> str:
        return f"files/{card.id}-{card.version}/{path}"

    def chart(self, card: Card, panel: Panel) -> str:
        return f"{card.id}-{card.version}-{panel.value}.svg"

    def asset(self, name: str) -> str:
        return name


def _copy_files(entry: Entry, links: StaticLinks, out: Path) -> None:
    card = entry.card
    for rel in sorted(entry.public_files()):
        target = out / links.file(card, rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(entry.loaded.path(rel), target)


def _export_entry(catalog: Catalog, entry: Entry, links: StaticLinks, out: Path) -> Path:
    card = entry.card
    page = out / links.package(card)
    page.write_text(render_package(package_page(catalog, entry), links, live=False), "utf-8")
    for chart in charts(card.figures, card.concurrencies):
        (out / links.chart(card, chart.panel)).write_bytes(render(chart))
    return page


def _export_index(catalog: Catalog, links: StaticLinks, out: Path, page_size: int) -> list[Path]:
    written: list[Path] = []
    first = listing_of(catalog, Query(), page_size)
    for number in range(1, first.pages + 1):
        listing = listing_of(catalog, Query(page=number), page_size)
        path = out / links.index(listing.query)
        path.write_text(render_index(listing, links, live=False), "utf-8")
        written.append(path)
    return written


@dataclass(frozen=True)
class Export:
    """What an export wrote (its HTML pages, index first) and what it deleted."""

    out: Path
    pages: list[Path]
    removed: tuple[str, ...]
    """Paths (relative to ``out``) an earlier export left that this one did not write."""


def _is_export(out: Path) -> bool:
    marker = out / MARKER
    if marker.is_symlink() or not marker.is_file():
        return False
    try:
        return marker.read_text(encoding="utf-8") == MARKER_TEXT
    except (OSError, UnicodeDecodeError):
        return False


def _tree(out: Path) -> set[str]:
    """Every path under ``out``, relative; links are listed, never followed."""
    found: set[str] = set()
    for top, dirs, names in os.walk(out, followlinks=False):
        rel = Path(top).relative_to(out)
        found.update(str(rel / name) for name in [*dirs, *names])
    return found


def refuse_foreign(out: Path) -> None:
    """Refuse a non-empty directory that is not an earlier export (it has no marker)."""
    if out.is_dir() and any(out.iterdir()) and not _is_export(out):
        raise UsageError(
            f"{out} is not empty and holds no {MARKER}: it is not a catalog export, "
            "so servekit will not delete what is in it, not even with --force",
            hint=f"export into a new or empty directory, or empty {out} yourself",
        )


def _empty_export(out: Path) -> set[str]:
    """Delete everything in a marked export directory; returns what was there."""
    refuse_foreign(out)
    before = _tree(out)
    for child in out.iterdir():
        if child.is_symlink() or not child.is_dir():
            child.unlink()
        else:
            shutil.rmtree(child)  # removes links inside as links, never their targets
    return before


def export_site(catalog: Catalog, out: Path, *, page_size: int = PAGE_SIZE) -> Export:
    """Write the static catalog into ``out`` (new, empty, or an earlier export, which is
    replaced); returns the pages written and what of the earlier export is gone."""
    links = StaticLinks()
    # 1. empty an earlier export; refuse any other non-empty directory
    out.mkdir(exist_ok=True)
    before = _empty_export(out) if any(out.iterdir()) else set()
    # 2. the marker and the stylesheet
    (out / MARKER).write_text(MARKER_TEXT, encoding="utf-8")
    (out / STYLESHEET).write_bytes(stylesheet())
    with ThreadPoolExecutor(COPY_THREADS, thread_name_prefix="export-copy") as copier:
        # 3. the linked files, copied while the pages render
        copies: list[Future[None]] = [
            copier.submit(_copy_files, e, links, out) for e in catalog.entries
        ]
        # 4. the index pages
        written = _export_index(catalog, links, out, page_size)
        # 5. the package pages and their charts, then the copies (a failed copy raises here)
        written += [_export_entry(catalog, e, links, out) for e in catalog.entries]
        for copy in copies:
            copy.result()
    return Export(out=out, pages=written, removed=tuple(sorted(before - _tree(out))))
