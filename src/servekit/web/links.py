"""The live app's URLs for the catalog templates (the static export has its own)."""

from __future__ import annotations

from urllib.parse import quote

from servekit.catalog import Card, Query
from servekit.catalog.chart import Panel
from servekit.catalog.site import query_string


class LiveLinks:
    """Absolute paths of the live app's routes."""

    def index(self, query: Query) -> str:
        return "/" + query_string(query)

    def package(self, card: Card) -> str:
        return f"/packages/{quote(card.id)}/{quote(card.version)}"

    def file(self, card: Card, path: str) -> str:
        return f"{self.package(card)}/files/{quote(path)}"

    def chart(self, card: Card, panel: Panel) -> str:
        return f"{self.package(card)}/charts/{panel.value}.svg"

    def asset(self, name: str) -> str:
        return f"/static/{quote(name)}"
