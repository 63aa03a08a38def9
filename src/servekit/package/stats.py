"""Serving metrics recomputed from raw per-request records.

Definitions (docs/metrics.md maps them to vLLM ``bench serve``, GuideLLM and AIPerf):

* TTFT: first non-empty content event minus send time.
* E2EL: end of the response minus send time.
* TPOT: (E2EL - TTFT) / (completion tokens - 1), for requests with more than one token.
* ITL: every gap between consecutive content events.
* duration: last end minus first send over the measured requests of one concurrency.
* throughputs: completed requests, output tokens and prompt + output tokens per second
  of that duration; per GPU divides the node aggregate by the run's GPU count.

Percentiles use numpy's ``linear`` method, as vLLM does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from servekit.package.evidence import RequestRecord
from servekit.package.models import Metric, Scope, Statistic

_PERCENTILE = {
    Statistic.P50: 50.0,
    Statistic.MEDIAN: 50.0,
    Statistic.P90: 90.0,
    Statistic.P95: 95.0,
    Statistic.P99: 99.0,
}


@dataclass(frozen=True)
class GroupSummary:
    """Every metric of one (run, concurrency) group, times in milliseconds."""

    concurrency: int
    completed: int
    failed: int
    length_mismatches: int
    duration_s: float
    total_input_tokens: int
    total_output_tokens: int
    ttft_ms: tuple[float, ...]
    tpot_ms: tuple[float, ...]
    itl_ms: tuple[float, ...]
    e2el_ms: tuple[float, ...]

    def throughput(self, metric: Metric) -> float:
        if self.duration_s <= 0:
            return 0.0
        match metric:
            case Metric.REQUEST_THROUGHPUT:
                return self.completed / self.duration_s
            case Metric.OUTPUT_THROUGHPUT:
                return self.total_output_tokens / self.duration_s
            case Metric.TOTAL_TOKEN_THROUGHPUT:
                return (self.total_input_tokens + self.total_output_tokens) / self.duration_s
            case Metric.TTFT | Metric.TPOT | Metric.ITL | Metric.E2EL:  # pragma: no branch
                raise ValueError(f"{metric} is not a throughput")

    def samples(self, metric: Metric) -> tuple[float, ...]:
        match metric:
            case Metric.TTFT:
                return self.ttft_ms
            case Metric.TPOT:
                return self.tpot_ms
            case Metric.ITL:
                return self.itl_ms
            case Metric.E2EL:
                return self.e2el_ms
            case (  # pragma: no branch
                Metric.REQUEST_THROUGHPUT | Metric.OUTPUT_THROUGHPUT | Metric.TOTAL_TOKEN_THROUGHPUT
            ):
                raise ValueError(f"{metric} is a throughput, not a per-request sample")


def statistic(samples: Sequence[float], stat: Statistic) -> float:
    """One statistic of a sample set (numpy ``linear`` percentiles)."""
    if not samples:
        raise ValueError("no samples")
    arr = np.asarray(samples, dtype=np.float64)
    match stat:
        case Statistic.MEAN:
            return float(arr.mean())
        case Statistic.MEDIAN | Statistic.P50 | Statistic.P90 | Statistic.P95 | Statistic.P99:
            return float(np.percentile(arr, _PERCENTILE[stat], method="linear"))
        case Statistic.VALUE:  # pragma: no branch
            raise ValueError("'value' applies to throughputs only")


def request_metrics(r: RequestRecord) -> tuple[float, float | None, float]:
    """(TTFT, TPOT or None with fewer than two tokens, E2EL) of one successful request, in ms."""
    assert r.t_first_content is not None and r.t_end is not None  # guaranteed by r.ok
    first = (r.t_first_content - r.t_send) * 1000.0
    total = (r.t_end - r.t_send) * 1000.0
    tokens = r.completion_tokens or 0
    return first, ((total - first) / (tokens - 1) if tokens > 1 else None), total


def summarize(records: Sequence[RequestRecord], concurrency: int) -> GroupSummary:
    """Summarize the measured (non-warmup) records of one concurrency."""
    measured = [r for r in records if r.concurrency == concurrency and not r.warmup]
    ok = [r for r in measured if r.ok]
    ttft: list[float] = []
    tpot: list[float] = []
    itl: list[float] = []
    e2el: list[float] = []
    for r in ok:
        first, per_token, total = request_metrics(r)
        ttft.append(first)
        e2el.append(total)
        if per_token is not None:
            tpot.append(per_token)
        itl.extend((b - a) * 1000.0 for a, b in zip(r.t_content, r.t_content[1:], strict=False))
    ends = [r.t_end for r in measured if r.t_end is not None]
    duration = (max(ends) - min(r.t_send for r in measured)) if ends else 0.0
    return GroupSummary(
        concurrency=concurrency,
        completed=len(ok),
        failed=len(measured) - len(ok),
        length_mismatches=sum(1 for r in ok if r.length_mismatch),
        duration_s=duration,
        total_input_tokens=sum(r.prompt_tokens or 0 for r in ok),
        total_output_tokens=sum(r.completion_tokens or 0 for r in ok),
        ttft_ms=tuple(ttft),
        tpot_ms=tuple(tpot),
        itl_ms=tuple(itl),
        e2el_ms=tuple(e2el),
    )


def figure_value(
    summary: GroupSummary, metric: Metric, stat: Statistic, scope: Scope | None, gpus: int
) -> float:
    """Recompute one figure from a group summary."""
    if metric.is_throughput:
        node = summary.throughput(metric)
        return node / gpus if scope is Scope.PER_GPU else node
    return statistic(summary.samples(metric), stat)


def _end(r: RequestRecord) -> float:
    return r.t_end if r.t_end is not None else r.t_send


def steady_window(records: Sequence[RequestRecord], concurrency: int) -> tuple[float, float]:
    """The steady part of a group's window: from the ``concurrency``-th send to the
    ``concurrency``-th end from last (ramp-up and drain left out); the whole window when
    that is empty. ``records`` are the measured requests of one concurrency (at least one).
    """
    sends = sorted(r.t_send for r in records)
    ends = sorted(_end(r) for r in records)
    n = min(concurrency, len(records))
    start, end = sends[n - 1], ends[len(records) - n]
    return (start, end) if end > start else (sends[0], ends[-1])


def achieved_concurrency(records: Sequence[RequestRecord], concurrency: int) -> float | None:
    """Time-weighted mean of requests in flight over the steady window (None: no window)."""
    if not records:
        return None
    start, end = steady_window(records, concurrency)
    if not end > start:
        return None
    busy = sum(max(0.0, min(_end(r), end) - max(r.t_send, start)) for r in records)
    mean = busy / (end - start)
    return mean if math.isfinite(mean) else None
