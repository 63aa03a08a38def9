"""Render the catalog pages, and export them as a static site.

The live web app (``servekit.web``) and ``servekit catalog export`` render the same
templates from the same :class:`~servekit.catalog.pages.Catalog`; only the
:class:`~servekit.catalog.pages.Links` differ. The static export holds the pages, the
charts, the stylesheet and every raw evidence file a figure links to; it has no store pages.

Export steps:
  1. write the stylesheet;
  2. start copying the files the figures link to, per package version, in threads: the
     kernel copies (``sendfile``) without the GIL while this thread renders;
  3. write one index page per page of cards (``index.html``, ``page-2.html``, ...);
  4. per package version: the page and its chart; then wait for the copies.
"""

from __future__ import annotations

import shutil
from concurrent.futures import Future, ThreadPoolExecutor
from functools import cache
from importlib.resources import files
from pathlib import Path
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from servekit.catalog.cards import Card
from servekit.catalog.chart import render_chart
from servekit.catalog.listing import PAGE_SIZE, Listing, Query
from servekit.catalog.pages import Catalog, Entry, Links, PackagePage, listing_of, package_page

STYLESHEET = "catalog.css"
COPY_THREADS = 4  # copies wait on the file system more than on the CPU: 4 overlap that

# The pages' Content-Security-Policy, also in a <meta> tag so the static export carries
# it: no script source at all, styles and images from the page's own origin only.
PAGE_POLICY = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'"
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
    )
    env.globals["query_string"] = query_string
    env.globals["Query"] = Query
    env.globals["page_policy"] = PAGE_POLICY
    return env


def query_string(query: Query, **changes: object) -> str:
    values = query.model_copy(update=changes).model_dump()
    kept = {k: v for k, v in values.items() if v and not (k == "page" and v == 1)}
    return "?" + urlencode(kept) if kept else ""


def stylesheet() -> bytes:
    return files("servekit.catalog").joinpath("static", STYLESHEET).read_bytes()


def render_index(listing: Listing, links: Links, *, live: bool) -> str:
    """The catalog page; ``live`` adds the filter form (a static site cannot filter)."""
    template = environment().get_template("catalog/index.html")
    return template.render(listing=listing, links=links, live=live)


def render_package(page: PackagePage, links: Links, *, live: bool) -> str:
    template = environment().get_template("catalog/package.html")
    return template.render(page=page, card=page.card, pkg=page.package, links=links, live=live)


class StaticLinks:
    """Links between the files of the static export, all relative to its root."""

    def index(self, query: Query) -> str:
        return "index.html" if query.page == 1 else f"page-{query.page}.html"

    def package(self, card: Card) -> str:
        return f"{card.id}-{card.version}.html"

    def file(self, card: Card, path: str) -> str:
        return f"files/{card.id}-{card.version}/{path}"

    def chart(self, card: Card) -> str:
        return f"{card.id}-{card.version}.svg"

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
    (out / links.chart(card)).write_bytes(render_chart(card.figures))
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


def export_site(catalog: Catalog, out: Path, *, page_size: int = PAGE_SIZE) -> list[Path]:
    """Write the static catalog under ``out``; returns the HTML pages written, index first."""
    links = StaticLinks()
    # 1. the stylesheet
    out.mkdir(parents=True, exist_ok=True)
    (out / STYLESHEET).write_bytes(stylesheet())
    with ThreadPoolExecutor(COPY_THREADS, thread_name_prefix="export-copy") as copier:
        # 2. the linked files, copied while the pages render
        copies: list[Future[None]] = [
            copier.submit(_copy_files, e, links, out) for e in catalog.entries
        ]
        # 3. the index pages
        written = _export_index(catalog, links, out, page_size)
        # 4. the package pages and charts, then the copies (a failed copy raises here)
        written += [_export_entry(catalog, e, links, out) for e in catalog.entries]
        for copy in copies:
            copy.result()
    return written
