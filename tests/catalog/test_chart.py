"""Charts that do not mislead, checked from the SVG matplotlib writes.

Every example package's charts are rendered and parsed: a line path never has fewer than
two points and never crosses a concurrency its series has no published figure at; every
dot is drawn unclipped inside its axes, at the concurrency and value of a published figure;
a dot left alone carries its value; each panel holds one kind of number on its own axis;
the legend uses the figures' own labels.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from servekit.catalog import Card, CardFigure, load_catalog
from servekit.catalog.chart import Panel, charts, render, series_name
from servekit.catalog.pages import package_dirs
from servekit.package.models import Metric

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "packages"
NS = {"svg": "http://www.w3.org/2000/svg"}
XLINK = "{http://www.w3.org/1999/xlink}href"
PANEL_METRICS = {
    Panel.LATENCY: {Metric.E2EL},
    Panel.PER_TOKEN: {Metric.TTFT, Metric.TPOT, Metric.ITL},
    Panel.THROUGHPUT: {Metric.OUTPUT_THROUGHPUT, Metric.TOTAL_TOKEN_THROUGHPUT},
    Panel.REQUESTS: {Metric.REQUEST_THROUGHPUT},
}
INTERNAL = re.compile(r"\b(e2el|ttft|tpot|itl)\b|_")  # the package's ids, never a legend


def _points(d: str) -> list[tuple[float, float]]:
    numbers = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", d)]
    return list(zip(numbers[::2], numbers[1::2], strict=True))


def _text(group: ET.Element) -> str:
    return "".join(t.text or "" for t in group.iter("{http://www.w3.org/2000/svg}text"))


@dataclass
class ParsedChart:
    """What a reader sees in one panel's SVG, in data coordinates where it matters."""

    box: tuple[float, float, float, float]  # x0, y0 (top), x1, y1 (bottom) of the axes
    xticks: dict[float, int]  # pixel x -> concurrency
    yticks: list[tuple[float, float]]  # (pixel y, value)
    ylabel: str
    lines: dict[int, list[list[tuple[float, float]]]]  # series index -> line paths
    dots: dict[int, list[tuple[float, float]]]
    clipped_dots: int
    labels: dict[int, list[str]]
    legend: list[str]

    def concurrency(self, x: float) -> int:
        near = min(self.xticks, key=lambda tx: abs(tx - x))
        assert abs(near - x) < 0.5, f"x={x} is at no tick {sorted(self.xticks)}"
        return self.xticks[near]

    def value(self, y: float) -> float:
        (y0, v0), (y1, v1) = self.yticks[0], self.yticks[-1]
        return v0 + (y - y0) * (v1 - v0) / (y1 - y0)


def _ticks(axes: ET.Element, axis: str) -> list[tuple[float, str]]:
    ticks = []
    for tick in axes.iterfind(f".//svg:g[@id='matplotlib.axis_{axis}']/svg:g", NS):
        if not (tick.get("id") or "").startswith(("xtick_", "ytick_")):
            continue
        use = tick.find(".//svg:use", NS)
        assert use is not None
        ticks.append((float(use.get("x" if axis == "1" else "y") or 0), _text(tick)))
    return ticks


def _series(axes: ET.Element, prefix: str) -> dict[int, list[ET.Element]]:
    found: dict[int, list[ET.Element]] = {}
    for group in axes.iterfind(".//svg:g[@id]", NS):
        gid = group.get("id") or ""
        if gid.startswith(prefix) and gid[len(prefix) :].isdigit():
            found.setdefault(int(gid[len(prefix) :]), []).append(group)
    return found


def parse(svg: bytes, panel: Panel) -> ParsedChart:
    root = ET.fromstring(svg)
    axes = root.find(f".//svg:g[@id='chart-{panel.value}']", NS)
    assert axes is not None, f"no axes chart-{panel.value}"
    frame = axes.find("svg:g[@id='patch_2']/svg:path", NS)
    assert frame is not None
    corners = _points(frame.get("d") or "")
    xs, ys = [x for x, _ in corners], [y for _, y in corners]
    yaxis = axes.find(".//svg:g[@id='matplotlib.axis_2']", NS)
    assert yaxis is not None
    ylabel = [g for g in yaxis.findall("svg:g", NS) if (g.get("id") or "").startswith("text_")]
    lines = {
        i: [_points(p.get("d") or "") for g in gs for p in g.iterfind(".//svg:path", NS)]
        for i, gs in _series(axes, "line-").items()
    }
    dots: dict[int, list[tuple[float, float]]] = {}
    clipped = 0
    for i, groups in _series(axes, "dots-").items():
        for group in groups:
            clipped += sum(1 for e in group.iter() if e.get("clip-path"))
            for use in group.iterfind(".//svg:use", NS):
                dots.setdefault(i, []).append((float(use.get("x") or 0), float(use.get("y") or 0)))
    labels = {i: [_text(g) for g in gs] for i, gs in _series(axes, "label-").items()}
    legend = axes.find(".//svg:g[@id='legend_1']", NS)
    assert legend is not None
    return ParsedChart(
        box=(min(xs), min(ys), max(xs), max(ys)),
        xticks={x: int(t) for x, t in _ticks(axes, "1")},
        yticks=sorted((y, float(t.replace("\u2212", "-"))) for y, t in _ticks(axes, "2")),
        ylabel=_text(ylabel[-1]),
        lines=lines,
        dots=dots,
        clipped_dots=clipped,
        labels=labels,
        legend=[_text(t) for t in legend.findall("svg:g", NS) if _text(t)],
    )


def _check(card: Card, panel: Panel, chart: ParsedChart) -> None:
    """Every property the issue asks of a chart, read back from its SVG."""
    published = {(f.concurrency, f.value) for f in card.figures}
    by_label = {
        name: [f for f in card.figures if f.label.startswith(name)] for name in chart.legend
    }
    # the legend: the page's own figure labels, one kind of number per panel
    for name, figures in by_label.items():
        assert figures and not INTERNAL.search(name), name
        assert {Metric(f.metric) for f in figures} <= PANEL_METRICS[panel], (name, panel)
    assert chart.ylabel == panel.axis
    # dots: unclipped, inside the axes, each at a published figure
    x0, y0, x1, y1 = chart.box
    assert chart.clipped_dots == 0
    for series, dots in chart.dots.items():
        for x, y in dots:
            assert x0 <= x <= x1 and y0 <= y <= y1, (card.id, panel, series, x, y)
            point = (chart.concurrency(x), chart.value(y))
            assert any(c == point[0] and abs(v - point[1]) < 0.01 * v for c, v in published)
    # lines: two points or more, between neighbouring concurrencies only
    for series, paths in chart.lines.items():
        for path in paths:
            assert len(path) >= 2, (card.id, panel, series, path)
            at = [chart.concurrency(x) for x, _ in path]
            crossed = [c for c in card.concurrencies if at[0] < c < at[-1] and c not in at]
            assert crossed == [], f"{card.id} {panel}: a line crosses {crossed}"
            assert {tuple(p) for p in path} <= set(chart.dots[series])
    # a dot no line reaches is labelled with its value
    for series, dots in chart.dots.items():
        joined = {tuple(p) for path in chart.lines.get(series, []) for p in path}
        alone = [d for d in dots if d not in joined]
        assert len(chart.labels.get(series, [])) == len(alone), (card.id, panel, series)
        displays = {f.display for f in card.figures}
        assert set(chart.labels.get(series, [])) <= displays


def example_cards() -> list[Card]:
    return load_catalog(EXAMPLES).cards


@pytest.mark.parametrize("card", example_cards(), ids=lambda c: c.id)
def test_every_example_chart_reads_true_from_its_svg(card: Card) -> None:
    drawn = charts(card.figures, card.concurrencies)
    for chart in drawn:
        _check(card, chart.panel, parse(render(chart), chart.panel))
    assert len(package_dirs(EXAMPLES)) == 6  # every example is a case here


def test_what_each_example_draws() -> None:
    """K3 and SmolLM2 publish every figure at one concurrency: no chart, the table alone; the
    two tuning refusals publish no figure. Llama's p99 skips concurrency 8: two labelled dots,
    no line across the gap."""
    drawn = {c.id: charts(c.figures, c.concurrencies) for c in example_cards()}
    assert drawn["kimi-k3-8xb300"] == () and drawn["smollm2-135m-vllm-h200"] == ()
    assert drawn["qwen2.5-7b-dummy-vllm-tune-h200"] == drawn["smollm2-135m-vllm-tune-h200"] == ()
    llama = {c.panel: c for c in drawn["llama-850m-h200"]}
    assert list(llama) == [Panel.LATENCY, Panel.PER_TOKEN, Panel.THROUGHPUT]
    chart = parse(render(llama[Panel.LATENCY]), Panel.LATENCY)
    assert chart.legend == ["Latency p50", "Latency p99"]
    assert [len(p) for p in chart.lines[0]] == [3] and 1 not in chart.lines
    assert sorted(chart.labels[1]) == ["2590 ms", "935 ms"]
    per_token = parse(render(llama[Panel.PER_TOKEN]), Panel.PER_TOKEN)
    assert per_token.legend == ["Time per output token p50", "Time to first token p50"]
    assert max(v for _, v in per_token.yticks) < 100  # not flattened on a latency axis
    assert [c.panel for c in drawn["tiny-sim"]] == [Panel.PER_TOKEN]


def _fig(fid: str, metric: str, stat: str, conc: int, value: float, **kw: object) -> CardFigure:
    values: dict[str, object] = {
        "id": fid,
        "label": fid,
        "display": f"{value:g} ms",
        "context": "",
        "badge": "measured",
        "badge_text": "",
        "status": "current",
        "headline": False,
        "metric": metric,
        "statistic": stat,
        "concurrency": conc,
        "value": value,
        "unit": "ms",
        "per_gpu": False,
        "workload": "w",
        "proof": (),
    }
    return CardFigure.model_validate(values | kw)


def _card(figures: Sequence[CardFigure], concurrencies: tuple[int, ...]) -> Card:
    card = example_cards()[0]
    return card.model_copy(update={"figures": tuple(figures), "concurrencies": concurrencies})


def test_a_retracted_or_unpublished_point_breaks_the_line() -> None:
    figures = [
        _fig("a1", "e2el", "p50", 1, 100.0, label="Latency p50"),
        _fig("a4", "e2el", "p50", 4, 150.0, label="Latency p50"),
        _fig("a16", "e2el", "p50", 16, 400.0, label="Latency p50"),
        _fig("a32", "e2el", "p50", 32, 900.0, label="Latency p50"),
    ]
    # 8 was measured (or its figure retracted): no figure there, so 4 and 16 are not joined
    card = _card(figures, (1, 4, 8, 16, 32))
    (chart,) = charts(card.figures, card.concurrencies)
    parsed = parse(render(chart), chart.panel)
    _check(card, chart.panel, parsed)
    assert sorted(len(p) for p in parsed.lines[0]) == [2, 2]
    # a grid that does not know 8 would join them: the check above would then fail
    joined = parse(render(charts(figures, (1, 4, 16, 32))[0]), Panel.LATENCY)
    assert [len(p) for p in joined.lines[0]] == [4]
    with pytest.raises(AssertionError, match="a line crosses"):
        _check(card, chart.panel, joined)


def test_a_dollar_or_markup_in_a_label_is_text() -> None:
    label = "Latency $p50$ at $1/h <script>alert(1)</script>"
    figures = [_fig(f"x{c}", "tpot", "p50", c, 10.0 * c, label=label) for c in (1, 2)]
    (chart,) = charts(figures, ())
    svg = render(chart)
    parsed = parse(svg, chart.panel)
    assert parsed.legend == [label] and parsed.ylabel == "milliseconds"
    assert b"<script" not in svg


@pytest.mark.parametrize(
    ("labels", "name"),
    [
        (["TTFT p50", "TTFT p50"], "TTFT p50"),
        (["TTFT p50", "TTFT p50, single stream"], "TTFT p50"),
        (["Latency p5", "Latency p50"], "Latency p5 / Latency p50"),  # not a word boundary
        (["a", "b", "a"], "a / b"),
    ],
)
def test_series_name(labels: list[str], name: str) -> None:
    assert series_name(labels) == name


def test_request_throughput_has_its_own_panel() -> None:
    figures = [
        _fig(f"r{c}", "request_throughput", "value", c, 1.5 * c, label="Requests", unit="req/s")
        for c in (1, 4)
    ] + [_fig(f"t{c}", "total_token_throughput", "value", c, 900.0 * c) for c in (1, 4)]
    drawn = charts(figures, (1, 4))
    assert [c.panel for c in drawn] == [Panel.THROUGHPUT, Panel.REQUESTS]
    parsed = parse(render(drawn[1]), Panel.REQUESTS)
    assert parsed.ylabel == "requests per second" and parsed.legend == ["Requests"]
    card = _card(figures, (1, 4))
    _check(card, Panel.REQUESTS, parsed)
    assert Panel.REQUESTS.heading == "Request throughput"


def test_charts_drawn_at_once_in_threads_are_the_charts_drawn_alone() -> None:
    """A page's charts are fetched together, each drawn in a worker thread; matplotlib is
    not thread-safe, so drawing two at once must not mix them (nor cache the mix)."""
    drawn = [c for card in example_cards() for c in charts(card.figures, card.concurrencies)]
    alone = [render(c) for c in drawn]
    for _ in range(2):
        render.cache_clear()
        with ThreadPoolExecutor(len(drawn)) as pool:
            together = list(pool.map(render, drawn))
        assert together == alone


def test_two_workloads_with_one_label_are_told_apart_in_the_legend() -> None:
    figures = [
        _fig(f"{w}{c}", "e2el", "p50", c, 10.0 * c, label="Latency p50", workload=w)
        for w in ("short", "long")
        for c in (1, 2)
    ]
    (chart,) = charts(figures, ())
    parsed = parse(render(chart), chart.panel)
    assert parsed.legend == ["Latency p50 (workload long)", "Latency p50 (workload short)"]
    assert sorted(len(p) for paths in parsed.lines.values() for p in paths) == [2, 2]
