"""Serving metrics recomputed from request records, on records written out by hand."""

from __future__ import annotations

from typing import Any

import pytest

from servekit.package.evidence import RequestRecord
from servekit.package.models import Metric, Scope, Statistic
from servekit.package.stats import (
    achieved_concurrency,
    figure_value,
    statistic,
    steady_window,
    summarize,
)


def _request(
    send: float, first: float, contents: tuple[float, ...], **fields: Any
) -> RequestRecord:
    values: dict[str, Any] = {
        "id": f"r-{send}",
        "run": "r",
        "concurrency": 1,
        "t_send": send,
        "t_first_content": first,
        "t_content": contents,
        "t_end": contents[-1] if contents else first,
        "prompt_tokens": 10,
        "completion_tokens": len(contents),
        "http_status": 200,
    }
    return RequestRecord(**{**values, **fields})


def _failed(send: float, end: float | None, **fields: Any) -> RequestRecord:
    return RequestRecord(
        id=f"f-{send}", run="r", concurrency=1, t_send=send, t_end=end, error="boom", **fields
    )


def test_percentiles_interpolate_linearly_as_vllm_does() -> None:
    samples = [1.0, 2.0, 3.0, 4.0]
    assert statistic(samples, Statistic.MEDIAN) == 2.5
    assert statistic(samples, Statistic.P50) == 2.5
    assert statistic(samples, Statistic.P90) == pytest.approx(3.7)
    assert statistic(samples, Statistic.P99) == pytest.approx(3.97)
    assert statistic(samples, Statistic.MEAN) == 2.5


def test_a_statistic_needs_samples_and_value_is_for_throughputs() -> None:
    with pytest.raises(ValueError, match="no samples"):
        statistic([], Statistic.MEAN)
    with pytest.raises(ValueError, match="'value' applies to throughputs only"):
        statistic([1.0], Statistic.VALUE)


def test_a_summary_skips_warmups_and_counts_failures_in_the_window() -> None:
    records = [
        _request(0.0, 0.1, (0.1,), warmup=True),  # left out entirely
        _request(1.0, 1.1, (1.1, 1.3, 1.6)),  # 3 tokens: gaps of 200 and 300 ms
        _request(1.2, 1.25, (1.25,)),  # 1 token: a TTFT, no TPOT
        _failed(1.5, 3.0),  # its end still closes the window
    ]
    summary = summarize(records, concurrency=1)
    assert (summary.completed, summary.failed) == (2, 1)
    assert summary.duration_s == pytest.approx(2.0)
    assert summary.ttft_ms == pytest.approx((100.0, 50.0))
    assert summary.tpot_ms == pytest.approx((250.0,))  # (600 - 100) / (3 - 1)
    assert summary.itl_ms == pytest.approx((200.0, 300.0))
    assert summary.e2el_ms == pytest.approx((600.0, 50.0))
    assert summary.total_output_tokens == 4 and summary.total_input_tokens == 20
    assert summary.throughput(Metric.REQUEST_THROUGHPUT) == pytest.approx(1.0)
    assert summary.throughput(Metric.TOTAL_TOKEN_THROUGHPUT) == pytest.approx(12.0)


def test_a_group_where_nothing_ended_has_zero_throughput() -> None:
    summary = summarize([_failed(1.0, None), _failed(2.0, None)], concurrency=1)
    assert summary.duration_s == 0.0 and summary.failed == 2
    assert summary.throughput(Metric.OUTPUT_THROUGHPUT) == 0.0


def test_throughputs_and_samples_are_not_interchangeable() -> None:
    summary = summarize([_request(0.0, 0.1, (0.1, 0.2))], concurrency=1)
    with pytest.raises(ValueError, match="is not a throughput"):
        summary.throughput(Metric.TTFT)
    with pytest.raises(ValueError, match="is a throughput, not a per-request sample"):
        summary.samples(Metric.OUTPUT_THROUGHPUT)


def test_per_gpu_figures_divide_the_node_throughput() -> None:
    summary = summarize([_request(0.0, 0.5, (0.5, 1.0, 2.0))], concurrency=1)
    node = figure_value(summary, Metric.OUTPUT_THROUGHPUT, Statistic.VALUE, None, gpus=4)
    per_gpu = figure_value(summary, Metric.OUTPUT_THROUGHPUT, Statistic.VALUE, Scope.PER_GPU, 4)
    assert node == pytest.approx(1.5) and per_gpu == pytest.approx(0.375)
    assert figure_value(summary, Metric.TTFT, Statistic.P50, None, 4) == pytest.approx(500.0)


def test_the_steady_window_leaves_out_ramp_up_and_drain() -> None:
    # two workers: sends at 0 and 1, ends at 9 and 10; steady from the 2nd send to the
    # 2nd end from last
    records = [_request(0.0, 0.5, (10.0,)), _request(1.0, 1.5, (9.0,))]
    assert steady_window(records, 2) == (1.0, 9.0)
    assert achieved_concurrency(records, 2) == pytest.approx(2.0)


def test_a_window_empty_after_trimming_falls_back_to_the_whole_group() -> None:
    # two requests one after the other at concurrency 2: trimming leaves nothing
    records = [_request(0.0, 0.5, (1.0,)), _request(1.0, 1.5, (2.0,))]
    assert steady_window(records, 2) == (0.0, 2.0)
    assert achieved_concurrency(records, 2) == pytest.approx(1.0)


def test_no_window_means_no_achieved_concurrency() -> None:
    assert achieved_concurrency([], 4) is None
    instant = _failed(5.0, None)  # never ended: counted as ending when sent
    assert achieved_concurrency([instant], 1) is None
