"""The catalog listing: search and filter cards, sort them, then cut one page.

The same function serves the live catalog page and the static export, so a filter or a
page boundary means the same thing in both (the static export offers no search, filter or
sort: its pages are the default order). Filtering is a linear scan over the cards in
memory (1 000 cards take well under a millisecond; docs/performance.md); a search or a
latency or throughput sort reads keys the catalog worked out once per card
(:class:`CardKeys`): 1 to 3 ms for 1 000 cards on the 2-core development machine.

Sorting by latency or throughput compares one named figure per card, and the card shows
which (:func:`sort_figure`): the end-to-end latency p50 at the lowest concurrency it was
published at, or the highest output throughput per GPU. A card without that figure goes
last; ties keep the default order (id, then version).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from servekit.catalog.cards import Card, CardFigure

PAGE_SIZE = 24
MAX_SEARCH = 200
"""The longest search text taken (characters); longer is refused, not cut."""


class Sort(StrEnum):
    """The orders a visitor can pick; the empty value is the default (id, then version)."""

    DEFAULT = ""
    PRICE = "price"
    PRICE_DESC = "-price"
    LATENCY = "latency"
    THROUGHPUT = "throughput"

    @property
    def text(self) -> str:
        match self:
            case Sort.DEFAULT:
                return "name"
            case Sort.PRICE:
                return "price: low to high"
            case Sort.PRICE_DESC:
                return "price: high to low"
            case Sort.LATENCY:
                return "latency p50: low to high"
            case Sort.THROUGHPUT:  # pragma: no branch
                return "throughput per GPU: high to low"


def _latency(card: Card) -> CardFigure | None:
    figures = [f for f in card.figures if f.metric == "e2el" and f.statistic in ("p50", "median")]
    return min(figures, key=lambda f: (f.concurrency, f.value), default=None)


def _throughput(card: Card) -> CardFigure | None:
    figures = [f for f in card.figures if f.metric == "output_throughput" and f.per_gpu]
    return max(figures, key=lambda f: (f.value, -f.concurrency), default=None)


def sort_figure(card: Card, sort: Sort) -> CardFigure | None:
    """The figure a latency or throughput sort compares for ``card`` (None: none, or
    another sort)."""
    match sort:
        case Sort.LATENCY:
            return _latency(card)
        case Sort.THROUGHPUT:
            return _throughput(card)
        case Sort.DEFAULT | Sort.PRICE | Sort.PRICE_DESC:  # pragma: no branch
            return None


class CardKeys(NamedTuple):
    """What search and sort read of a card, worked out once per card (a catalog keeps
    them: 1 000 cards are searched and sorted in a few milliseconds, not tens)."""

    text: str
    """Every searchable field, case-folded."""
    latency: float | None
    throughput: float | None


def card_keys(card: Card) -> CardKeys:
    fields = (card.id, card.name, card.version, card.summary, card.publisher, card.engine)
    more = (card.hardware, card.model_repo, card.tier, *(f.label for f in card.figures))
    latency, throughput = _latency(card), _throughput(card)
    return CardKeys(
        text=" ".join((*fields, *more)).casefold(),
        latency=latency.value if latency else None,
        throughput=throughput.value if throughput else None,
    )


KeysOf = Callable[[Card], CardKeys]


def _sorted(cards: list[Card], sort: Sort, keys: KeysOf) -> list[Card]:
    """``cards`` (in default order) in the order ``sort`` asks; a stable sort keeps ties."""
    match sort:
        case Sort.DEFAULT:
            return cards
        case Sort.PRICE | Sort.PRICE_DESC:
            return sorted(cards, key=lambda c: c.price_usd, reverse=sort is Sort.PRICE_DESC)
        case Sort.LATENCY:
            return sorted(cards, key=lambda c: _last_if_none(keys(c).latency))
        case Sort.THROUGHPUT:  # pragma: no branch
            return sorted(cards, key=lambda c: _last_if_none(keys(c).throughput, sign=-1))


def _last_if_none(value: float | None, sign: int = 1) -> tuple[bool, float]:
    return (value is None, sign * value if value is not None else 0.0)


class Query(BaseModel):
    """What the visitor asked for: a search (every word must appear in the card's text,
    in any case), exact-match filters (empty means any), an order and a page."""

    model_config = ConfigDict(frozen=True)

    q: str = Field(default="", max_length=MAX_SEARCH)
    gpu: str = ""
    engine: str = ""
    model: str = ""
    sort: Sort = Sort.DEFAULT
    page: int = Field(default=1, ge=1)

    @property
    def filtered(self) -> bool:
        """Whether anything narrows or reorders the listing (a "clear filters" link)."""
        return bool(self.q.strip() or self.gpu or self.engine or self.model or self.sort)

    @property
    def words(self) -> tuple[str, ...]:
        return tuple(self.q.casefold().split())

    def passes_filters(self, card: Card) -> bool:
        """The exact-match filters (the search is matched against kept keys)."""
        return (
            (not self.gpu or card.gpu == self.gpu)
            and (not self.engine or card.engine_name == self.engine)
            and (not self.model or card.model_repo == self.model)
        )


def _has_all(text: str, words: tuple[str, ...]) -> bool:
    return all(w in text for w in words)


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
    cards: Sequence[Card],
    query: Query,
    *,
    all_facets: Facets,
    page_size: int = PAGE_SIZE,
    keys: KeysOf = card_keys,
) -> Listing:
    """The cards matching ``query``, page ``query.page`` (clamped to the last page);
    ``keys`` gives a card's search and sort keys (a catalog passes the ones it keeps)."""
    words = query.words  # case-folded once, not per card
    found = [
        c for c in cards if query.passes_filters(c) and (not words or _has_all(keys(c).text, words))
    ]
    matched = _sorted(found, query.sort, keys)
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
