"""The charts of a package page: each figure against concurrency, as SVG, one per panel.

Drawn by matplotlib (bundled fonts, no network, no JavaScript) from the card's published
figures. Text stays text (``svg.fonttype = none``) so a chart is small and searchable; the
output is byte-for-byte deterministic for the same figures, which lets a page cache it.

What keeps a chart from misleading:

* one panel per kind of number, each on its own axis: end-to-end latency, per-token
  times (TTFT, TPOT, ITL), token throughput, request throughput; a 20 ms TTFT is never
  flattened on a 2,500 ms axis;
* a line joins only neighbouring points: where the package measured a concurrency (or
  named a figure there, retracted included) and a series has no published figure at it,
  the line breaks, and a point left alone is a dot labelled with its value;
* a panel whose series are all single points is not drawn (it would show dots, not a
  trend: the figures table says the same), and no chart at all is drawn when no panel is;
* the legend uses the figures' own labels, as the page's table shows them;
* dots are never clipped: the axes leave room around the outermost points, and markers
  draw over the axes' edge (a value near zero sits on the axis, whole).
"""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from itertools import takewhile
from threading import Lock
from typing import Any

from servekit.catalog.cards import CardFigure
from servekit.package.models import Metric

_RC: dict[Any, Any] = {  # typed loosely: matplotlib types its keys as a Literal
    "svg.fonttype": "none",
    "svg.hashsalt": "servekit",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


WIDTH_IN, PLOT_IN, LEGEND_ROW_IN = 4.6, 2.9, 0.2  # the figure's width, plot and legend rows


class Panel(StrEnum):
    """One chart of a package page: the numbers that share one axis."""

    LATENCY = "latency"
    PER_TOKEN = "per-token"
    THROUGHPUT = "throughput"
    REQUESTS = "requests"

    @property
    def heading(self) -> str:
        match self:
            case Panel.LATENCY:
                return "End-to-end latency"
            case Panel.PER_TOKEN:
                return "Per-token times (TTFT, TPOT, ITL)"
            case Panel.THROUGHPUT:
                return "Token throughput"
            case Panel.REQUESTS:  # pragma: no branch
                return "Request throughput"

    @property
    def axis(self) -> str:
        match self:
            case Panel.LATENCY | Panel.PER_TOKEN:
                return "milliseconds"
            case Panel.THROUGHPUT:
                return "tokens per second"
            case Panel.REQUESTS:  # pragma: no branch
                return "requests per second"


def panel_of(metric: Metric) -> Panel:
    """The panel a metric is drawn in."""
    match metric:
        case Metric.E2EL:
            return Panel.LATENCY
        case Metric.TTFT | Metric.TPOT | Metric.ITL:
            return Panel.PER_TOKEN
        case Metric.REQUEST_THROUGHPUT:
            return Panel.REQUESTS
        case Metric.OUTPUT_THROUGHPUT | Metric.TOTAL_TOKEN_THROUGHPUT:  # pragma: no branch
            return Panel.THROUGHPUT


@dataclass(frozen=True)
class Point:
    concurrency: int
    value: float
    text: str
    """The figure as the page shows it (``18695 ms``): the label of a dot left alone."""


@dataclass(frozen=True)
class Series:
    """The published figures of one metric, statistic, scope and workload."""

    name: str
    points: tuple[Point, ...]

    def runs(self, grid: Sequence[int]) -> tuple[tuple[Point, ...], ...]:
        """The points split where ``grid`` has a concurrency this series has no figure at."""
        at = {p.concurrency: p for p in self.points}
        runs: list[list[Point]] = [[]]
        for concurrency in grid:
            if concurrency in at:
                runs[-1].append(at[concurrency])
            elif runs[-1]:
                runs.append([])
        return tuple(tuple(run) for run in runs if run)


@dataclass(frozen=True)
class Chart:
    """One panel: its series and the concurrencies lines may not cross."""

    panel: Panel
    series: tuple[Series, ...]
    grid: tuple[int, ...]

    @property
    def has_line(self) -> bool:
        return any(len(run) > 1 for s in self.series for run in s.runs(self.grid))


def series_name(labels: Sequence[str]) -> str:
    """The legend's name for a series: its figures' label, or what their labels share
    (``TTFT p50`` for ``TTFT p50`` and ``TTFT p50, single stream``)."""
    first = labels[0]
    if all(label == first for label in labels):
        return first
    same = (
        chars[0] for chars in takewhile(lambda cs: len(set(cs)) == 1, zip(*labels, strict=False))
    )
    shared = "".join(same).rstrip(" ,;:-(")
    words = [label[len(shared) : len(shared) + 1] for label in labels]
    if shared and all(w in ("", " ", ",", ";", ":", "(", "-") for w in words):
        return shared
    return " / ".join(dict.fromkeys(labels))


def _group(figures: Iterable[CardFigure]) -> dict[Panel, list[Series]]:
    """One series per workload, metric, statistic and scope, grouped by panel; at a
    concurrency given twice, the figure with the first id is drawn."""
    groups: dict[tuple[str, str, str, bool], list[CardFigure]] = defaultdict(list)
    for fig in sorted(figures, key=lambda f: (f.concurrency, f.id)):
        groups[(fig.workload, fig.metric, fig.statistic, fig.per_gpu)].append(fig)
    named: dict[Panel, list[tuple[str, str, tuple[Point, ...]]]] = defaultdict(list)
    for (workload, metric, _, _), figs in sorted(groups.items()):
        points: dict[int, Point] = {}
        for f in figs:
            points.setdefault(f.concurrency, Point(f.concurrency, f.value, f.display))
        name = series_name([f.label for f in figs])
        named[panel_of(Metric(metric))].append((name, workload, tuple(points.values())))
    return {panel: _distinct(entries) for panel, entries in named.items()}


def _distinct(entries: list[tuple[str, str, tuple[Point, ...]]]) -> list[Series]:
    """Series of one panel; a name two workloads share says which workload it is."""
    names = [name for name, _, _ in entries]
    return [
        Series(f"{name} (workload {workload})" if names.count(name) > 1 else name, points)
        for name, workload, points in entries
    ]


def charts(figures: Sequence[CardFigure], grid: Iterable[int]) -> tuple[Chart, ...]:
    """The panels worth drawing, in :class:`Panel` order: those where a line joins two
    points. ``grid`` is every concurrency the package measured or named a figure at."""
    concurrencies = tuple(sorted({*grid, *(f.concurrency for f in figures)}))
    by_panel = _group(figures)
    drawn = (Chart(p, tuple(by_panel[p]), concurrencies) for p in Panel if p in by_panel)
    return tuple(chart for chart in drawn if chart.has_line)


def _plot(ax: Any, chart: Chart) -> None:
    for index, series in enumerate(chart.series):
        color, runs = f"C{index}", series.runs(chart.grid)
        for run in runs:
            xs, ys = [p.concurrency for p in run], [p.value for p in run]
            if len(run) > 1:
                ax.plot(xs, ys, color=color, linewidth=1.5, gid=f"line-{index}")
            for point in run if len(run) == 1 else ():
                last = point.concurrency == chart.grid[-1]  # label leftwards at the right edge
                ax.annotate(
                    point.text,
                    (point.concurrency, point.value),
                    xytext=(-5 if last else 5, 5),
                    textcoords="offset points",
                    ha="right" if last else "left",
                    fontsize=8,
                    color=color,
                    annotation_clip=False,
                    parse_math=False,
                    gid=f"label-{index}",
                )
        xs = [p.concurrency for p in series.points]
        ys = [p.value for p in series.points]
        ax.plot(
            xs, ys, linestyle="none", marker="o", color=color, clip_on=False, gid=f"dots-{index}"
        )
        joined = any(len(run) > 1 for run in runs)  # the legend shows a line only if one is
        ax.plot(
            [], [], marker="o", linestyle="-" if joined else "none", color=color, label=series.name
        )


def _axes(ax: Any, chart: Chart) -> None:
    ax.set_title(chart.panel.heading, loc="left", parse_math=False)
    ax.set_xlabel("concurrency (log scale)")
    ax.set_ylabel(chart.panel.axis)
    ax.set_xscale("log", base=2)
    ax.grid(True, alpha=0.3)
    shown = sorted({p.concurrency for s in chart.series for p in s.points})
    ax.set_xticks(shown, [str(c) for c in shown])
    ax.minorticks_off()
    ax.set_xlim(shown[0] / 1.4, shown[-1] * 1.4)
    top = max(p.value for s in chart.series for p in s.points)
    ax.set_ylim(0, top * 1.2)
    legend = ax.legend(
        frameon=False, loc="upper left", bbox_to_anchor=(-0.02, -0.2), borderaxespad=0.0
    )
    for text in legend.get_texts():
        text.set_parse_math(False)  # a label's "$" is a dollar, never mathtext


_DRAWING = Lock()
"""matplotlib is not thread-safe: a page's charts are fetched at once, each in a worker
thread, and two drawn together corrupted each other's ticks (and the cache kept that)."""


@lru_cache(maxsize=256)
def render(chart: Chart) -> bytes:
    """SVG bytes of one panel (cached by its values; drawn one at a time)."""
    with _DRAWING:
        return _draw(chart)


def _draw(chart: Chart) -> bytes:
    import matplotlib

    matplotlib.use("svg")
    from matplotlib.figure import Figure

    # One width and one plot area for every panel, so panels side by side share a scale;
    # the legend's rows, below the plot, add height.
    legend = LEGEND_ROW_IN * len(chart.series)
    height = PLOT_IN + legend
    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(WIDTH_IN, height))
        ax = fig.subplots()
        ax.set_gid(f"chart-{chart.panel.value}")
        _plot(ax, chart)
        _axes(ax, chart)
        fig.subplots_adjust(
            left=0.16, right=0.95, top=1 - 0.3 / height, bottom=(0.6 + legend) / height
        )
        buf = io.BytesIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    return buf.getvalue()


def chart_of(figures: Sequence[CardFigure], grid: Iterable[int], panel: Panel) -> Chart | None:
    """The panel ``panel`` of these figures, or None when it is not drawn."""
    return next((c for c in charts(figures, grid) if c.panel is panel), None)
