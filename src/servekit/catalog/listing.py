"""The catalog listing: filter cards by GPU, engine and model, then cut one page.

The same function serves the live catalog page and the static export, so a filter or a
page boundary means the same thing in both. Filtering is a linear scan over the cards in
memory (1 000 cards take well under a millisecond; docs/performance.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from servekit.catalog.cards import Card

PAGE_SIZE = 24


class Query(BaseModel):
    """What the visitor asked for: exact-match filters (empty means any) and a page."""

    model_config = ConfigDict(frozen=True)

    gpu: str = ""
    engine: str = ""
    model: str = ""
    page: int = Field(default=1, ge=1)

    def matches(self, card: Card) -> bool:
        return (
            (not self.gpu or card.gpu == self.gpu)
            and (not self.engine or card.engine_name == self.engine)
            and (not self.model or card.model_repo == self.model)
        )


class Facets(BaseModel):
    """The values each filter offers, from every card (not only the filtered ones)."""

    model_config = ConfigDict(frozen=True)

    gpus: tuple[str, ...]
    engines: tuple[str, ...]
    models: tuple[str, ...]


class Listing(BaseModel):
    """One page of the catalog: the cards on it and where the other pages are."""

    model_config = ConfigDict(frozen=True)

    query: Query
    cards: tuple[Card, ...]
    total: int
    page: int
    pages: int
    facets: Facets

    @property
    def has_previous(self) -> bool:
        return self.page > 1

    @property
    def has_next(self) -> bool:
        return self.page < self.pages


def facets(cards: Sequence[Card]) -> Facets:
    return Facets(
        gpus=tuple(sorted({c.gpu for c in cards})),
        engines=tuple(sorted({c.engine_name for c in cards})),
        models=tuple(sorted({c.model_repo for c in cards})),
    )


def list_cards(
    cards: Sequence[Card], query: Query, *, all_facets: Facets, page_size: int = PAGE_SIZE
) -> Listing:
    """The cards matching ``query``, page ``query.page`` (clamped to the last page)."""
    matched = [c for c in cards if query.matches(c)]
    pages = max(1, math.ceil(len(matched) / page_size))
    page = min(query.page, pages)
    start = (page - 1) * page_size
    return Listing(
        query=query,
        cards=tuple(matched[start : start + page_size]),
        total=len(matched),
        page=page,
        pages=pages,
        facets=all_facets,
    )
