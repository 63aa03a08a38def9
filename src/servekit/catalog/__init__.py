"""The catalog: cards and static pages built from package definitions."""

from servekit.catalog.cards import Badge, Card, CardFigure, build_card
from servekit.catalog.site import export_site, load_cards

__all__ = ["Badge", "Card", "CardFigure", "build_card", "export_site", "load_cards"]
