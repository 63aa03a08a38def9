"""The latency and throughput against concurrency chart of a package page, as SVG.

Drawn by matplotlib (bundled fonts, no network, no JavaScript) from the card's published
figures: one line per (metric, statistic) in the latency panel and per throughput metric in
the throughput panel. Text stays text (``svg.fonttype = none``) so the chart is small and
searchable; the output is byte-for-byte deterministic for the same figures, which lets a
page cache it by its inputs.
"""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from servekit.catalog.cards import CardFigure

# (label, unit, ((concurrency, value), ...))
Series = tuple[str, str, tuple[tuple[int, float], ...]]

_RC: dict[Any, Any] = {  # typed loosely: matplotlib types its keys as a Literal
    "svg.fonttype": "none",
    "svg.hashsalt": "servekit",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def chart_series(figures: Sequence[CardFigure]) -> tuple[tuple[Series, ...], tuple[Series, ...]]:
    """Split figures into latency series and throughput series, each sorted by concurrency."""
    groups: dict[tuple[bool, str, str], dict[int, float]] = defaultdict(dict)
    for fig in figures:
        throughput = fig.unit != "ms"
        name = f"{fig.metric} {fig.statistic}" if not throughput else fig.metric
        if throughput and fig.per_gpu:
            name += " per GPU"
        groups[(throughput, name.replace("_", " "), fig.unit)][fig.concurrency] = fig.value
    latency: list[Series] = []
    throughput_series: list[Series] = []
    for (is_tp, name, unit), points in sorted(groups.items()):
        series = (name, unit, tuple(sorted(points.items())))
        (throughput_series if is_tp else latency).append(series)
    return tuple(latency), tuple(throughput_series)


def _panel(ax: object, series: tuple[Series, ...], title: str) -> None:
    from matplotlib.axes import Axes

    assert isinstance(ax, Axes)
    ax.set_title(title, loc="left")
    ax.set_xlabel("concurrency")
    ax.set_xscale("log", base=2)
    ax.grid(True, alpha=0.3)
    for name, unit, points in series:
        xs = [c for c, _ in points]
        ys = [v for _, v in points]
        ax.plot(xs, ys, marker="o", label=f"{name} ({unit})")
    if series:
        concurrencies = sorted({c for _, _, pts in series for c, _ in pts})
        ax.set_xticks(concurrencies, [str(c) for c in concurrencies])
        ax.set_ylim(bottom=0)
        ax.legend(frameon=False)
    else:
        ax.text(0.5, 0.5, "no figures published", ha="center", va="center")
        ax.set_xticks([])
        ax.set_yticks([])


@lru_cache(maxsize=256)
def _render(latency: tuple[Series, ...], throughput: tuple[Series, ...]) -> bytes:
    import matplotlib

    matplotlib.use("svg")
    from matplotlib.figure import Figure

    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(8.0, 3.0))
        left, right = fig.subplots(1, 2)
        _panel(left, latency, "Latency")
        _panel(right, throughput, "Throughput")
        fig.subplots_adjust(left=0.07, right=0.99, bottom=0.16, top=0.9, wspace=0.22)
        buf = io.BytesIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    return buf.getvalue()


def render_chart(figures: Sequence[CardFigure]) -> bytes:
    """SVG bytes of the chart for ``figures`` (cached by their values)."""
    return _render(*chart_series(figures))
