"""Filters and pagination hold at 1 000 package versions."""

from __future__ import annotations

from pathlib import Path

import pytest

from servekit.catalog import Card, Query, load_catalog
from servekit.catalog.listing import facets, list_cards

ROOT = Path(__file__).resolve().parents[2]
GPUS = ("B300", "H200", "MI355X", "L40S")


@pytest.fixture(scope="module")
def thousand() -> list[Card]:
    base = load_catalog(ROOT / "examples" / "packages").cards[0]
    return [
        base.model_copy(update={"id": f"pkg-{i:04d}", "gpu": GPUS[i % 4], "engine_name": "vllm"})
        for i in range(1000)
    ]


def test_every_card_is_on_exactly_one_page(thousand: list[Card]) -> None:
    all_facets = facets(thousand)
    first = list_cards(thousand, Query(), all_facets=all_facets, page_size=24)
    assert (first.total, first.pages) == (1000, 42)
    seen = [
        c.id
        for n in range(1, first.pages + 1)
        for c in list_cards(thousand, Query(page=n), all_facets=all_facets, page_size=24).cards
    ]
    assert seen == [c.id for c in thousand]


def test_filter_then_paginate(thousand: list[Card]) -> None:
    all_facets = facets(thousand)
    listing = list_cards(thousand, Query(gpu="H200", page=11), all_facets=all_facets, page_size=24)
    assert listing.total == 250 and listing.pages == 11 and listing.page == 11
    assert len(listing.cards) == 250 - 240 and {c.gpu for c in listing.cards} == {"H200"}
    assert listing.has_previous and not listing.has_next
    assert listing.facets.gpus == tuple(sorted(GPUS))  # every value stays offered


def test_page_past_the_end_is_the_last_page(thousand: list[Card]) -> None:
    listing = list_cards(thousand, Query(page=500), all_facets=facets(thousand), page_size=24)
    assert listing.page == 42 and [c.id for c in listing.cards][-1] == "pkg-0999"
