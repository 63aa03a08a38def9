"""Rendering the store's pages: their own templates, on the catalog's base template."""

from __future__ import annotations

from functools import cache
from typing import Any

from jinja2 import ChoiceLoader, Environment, PackageLoader, StrictUndefined, select_autoescape

from servekit.catalog.listing import Query
from servekit.catalog.site import PAGE_POLICY
from servekit.catalog.text import finalize
from servekit.web.links import LiveLinks
from servekit.web.sessions import CSRF_FIELD


def dollars(cents: int | None) -> str:
    return "-" if cents is None else f"${cents // 100:,}.{cents % 100:02d}"


@cache
def environment() -> Environment:
    """Autoescaping on, undefined names are errors, direction and invisible characters
    escaped (:mod:`servekit.catalog.text`), as for the catalog pages."""
    env = Environment(
        loader=ChoiceLoader(
            [PackageLoader("servekit.web", "templates"), PackageLoader("servekit.catalog")]
        ),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        finalize=finalize,  # direction and invisible characters shown escaped
    )
    env.globals.update(
        Query=Query, page_policy=PAGE_POLICY, links=LiveLinks(), csrf_field=CSRF_FIELD
    )
    env.filters["dollars"] = dollars
    return env


def render(template: str, **values: Any) -> str:
    return environment().get_template(template).render(**values)
