"""Filters and pagination hold at 1 000 package versions."""

from __future__ import annotations

from pathlib import Path

import pytest

from servekit.catalog import Card, Query, load_catalog
from servekit.catalog.listing import Sort, facets, list_cards, sort_figure

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


def test_sorting_a_thousand_keeps_ties_in_the_default_order(thousand: list[Card]) -> None:
    priced = [c.model_copy(update={"price_usd": float(i % 3)}) for i, c in enumerate(thousand)]
    listing = list_cards(priced, Query(sort=Sort.PRICE_DESC), all_facets=facets(priced))
    assert [c.price_usd for c in listing.cards[:2]] == [2.0, 2.0]
    assert [c.id for c in listing.cards[:2]] == ["pkg-0002", "pkg-0005"]  # stable


def test_only_latency_and_throughput_sorts_name_a_figure() -> None:
    cards = {c.id: c for c in load_catalog(ROOT / "examples" / "packages").cards}
    llama = cards["llama-850m-h200"]
    for sort in (Sort.DEFAULT, Sort.PRICE, Sort.PRICE_DESC):
        assert sort_figure(llama, sort) is None
    latency, throughput = sort_figure(llama, Sort.LATENCY), sort_figure(llama, Sort.THROUGHPUT)
    assert latency and (latency.id, latency.concurrency) == ("e2el-p50-c1", 1)
    assert throughput and throughput.id == "otps-gpu-c32"
    assert sort_figure(cards["smollm2-135m-vllm-h200"], Sort.LATENCY) is None  # p99 only
    assert len({s.text for s in Sort}) == len(Sort)


def test_a_long_search_is_refused_not_cut() -> None:
    with pytest.raises(ValueError, match="at most 200 characters"):
        Query(q="x" * 201)
    assert not Query(q="   ").filtered and Query(q="a").filtered
