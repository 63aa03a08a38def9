"""The catalog: cards and pages built from package definitions, live or as a static site."""

from servekit.catalog.cards import Badge, Card, CardFigure, Link, build_card
from servekit.catalog.listing import Listing, Query
from servekit.catalog.pages import (
    Catalog,
    Entry,
    Links,
    PackagePage,
    load_catalog,
    load_entry,
    package_page,
)
from servekit.catalog.site import Export, export_site, render_index, render_package

__all__ = [
    "Badge",
    "Card",
    "CardFigure",
    "Catalog",
    "Entry",
    "Export",
    "Link",
    "Links",
    "Listing",
    "PackagePage",
    "Query",
    "build_card",
    "export_site",
    "load_catalog",
    "load_entry",
    "package_page",
    "render_index",
    "render_package",
]
