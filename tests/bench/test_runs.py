"""Harness runs against the simulator: evidence shape, engine quirks, chat TTFT."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from servekit.bench.loop import LoopKind
from servekit.bench.runner import RunConfig, run_benchmark
from servekit.bench.summary import summarize_path
from servekit.errors import BenchError
from servekit.package.evidence import Evidence
from servekit.package.stats import summarize
from tests.bench.conftest import Counter

Sim = Callable[..., AbstractContextManager[str]]
Harness = Callable[..., list[Evidence]]


def test_evidence_shape_header_and_ids(sim: Sim, run_harness: Harness) -> None:
    with sim() as url:
        evs = run_harness(url, concurrencies=(1, 2), runs=2, requests=3, warmup=2, gpus=4)
    assert [ev.header.run for ev in evs] == ["run-1", "run-2"]
    ev = evs[0]
    assert ev.header.simulator is True and ev.header.engine_version.startswith("servekit-sim")
    assert ev.header.gpus == 4 and ev.header.fixed_length is True
    # the simulator answers 422 to a body without a JSON Content-Type, as FastAPI does:
    # streaming requests and the /tokenize calibration both got through
    assert ev.header.tokenizer is not None and "server /tokenize" in ev.header.tokenizer
    assert ev.concurrencies == (1, 2)
    for conc in (1, 2):
        assert len(ev.measured(conc)) == 3 and len(ev.warmups(conc)) == 2
    ids = [r.id for ev in evs for r in ev.requests]
    assert len(set(ids)) == len(ids)  # warmups and runs have their own prompts
    record = ev.measured(2)[0]
    assert record.usage_source == "server" and record.completion_tokens == 8
    assert record.prompt_tokens == record.requested_prompt_tokens  # calibrated by /tokenize
    assert record.t_start is not None and record.t_start <= record.t_send
    assert len(record.t_content) == 8


def test_existing_evidence_is_not_overwritten(sim: Sim, run_harness: Harness) -> None:
    with sim() as url:
        run_harness(url)
        with pytest.raises(BenchError, match="already exists"):
            run_harness(url)
        run_harness(url, force=True)


def test_transformers_serve_quirks_are_handled_and_flagged(
    sim: Sim, run_harness: Harness, tmp_path: Path
) -> None:
    """No usage chunk and a 422 for ignore_eos: retried without, counted client-side,
    and a shorter natural length is flagged per request."""
    with sim(no_usage=True, reject_ignore_eos=True, natural_length=5) as url:
        (ev,) = run_harness(url)
    assert ev.header.fixed_length is False and ev.header.usage_source == "client"
    assert any("HTTP 422" in note for note in ev.header.notes)
    assert any("no usage chunk" in note for note in ev.header.notes)
    measured = ev.measured(2)
    assert all(r.ok and r.usage_source == "client" for r in measured)
    assert all(r.completion_tokens == 5 and r.length_mismatch for r in measured)
    assert summarize(ev.requests, 2).length_mismatches == 6
    (group,) = summarize_path(tmp_path / "out").groups
    assert "6 output-length mismatches" in group.flags
    assert "token counts: client" in group.flags


def test_chat_ttft_starts_at_first_content_not_the_role_chunk(
    sim: Sim, run_harness: Harness
) -> None:
    with sim(ttft_ms=150.0, role_chunk=True) as url:
        (ev,) = run_harness(url, api="chat", requests=2, warmup=0, concurrencies=(1,))
    for r in ev.measured(1):
        assert r.t_first_event is not None and r.t_first_content is not None
        assert r.t_first_event - r.t_send < 0.1  # the role chunk came at once (loaded: later)
        assert r.t_first_content - r.t_send >= 0.140  # TTFT waited for real content (150 ms)
    (ttft, *_rest) = summarize(ev.requests, 1).ttft_ms
    assert ttft >= 140.0


def test_poisson_arrivals_are_seeded(sim: Sim, run_harness: Harness, tmp_path: Path) -> None:
    with sim() as url:
        (ev,) = run_harness(url, request_rate=50.0, requests=6, warmup=0)
    assert ev.header.request_rate == 50.0
    sends = sorted(r.t_send for r in ev.measured(2))
    assert sends[-1] - sends[0] > 0.01  # spread out, not a burst


def test_queueing_behind_the_concurrency_limit(sim: Sim, run_harness: Harness) -> None:
    with sim(ttft_ms=40.0, itl_ms=5.0, max_concurrency=1) as url:
        (ev,) = run_harness(url, requests=4, warmup=0, output_tokens=4)
    ttfts = sorted(summarize(ev.requests, 2).ttft_ms)
    assert ttfts[0] < 60.0 and ttfts[-1] > 80.0  # one waited ~55 ms behind another


def test_progress_names_each_phase_and_counts_it(sim: Sim, tmp_path: Path) -> None:
    config = RunConfig(endpoint="", model="servekit-sim", prompt_min=20, prompt_max=40,
                       output_tokens=4, concurrencies=(1, 2), requests=3, warmup=1, runs=2,
                       out=tmp_path / "out", timeout_s=5.0, loop=LoopKind.ASYNCIO)  # fmt: skip
    counter = Counter()
    with sim() as url:
        run_benchmark(config.model_copy(update={"endpoint": url}), counter)
    probe, *groups = counter.phases
    assert probe[0] == f"probing {url}" and probe[1] is None
    assert [(name, total, done) for name, total, done in groups] == [
        (f"run {r}/2, c={c}, {kind} requests", n, n)
        for r in (1, 2)
        for c in (1, 2)
        for kind, n in (("warmup", 1), ("measured", 3))
    ]


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_old_garbage_is_collected_before_measuring_not_frozen_with_the_rest(
    sim: Sim, run_harness: Harness
) -> None:
    """The harness freezes what the process holds while it measures. Garbage that has
    reached the oldest generation is collected first, once an invocation, however many
    groups it runs: a freeze resets the collector's counts, so nothing else would."""
    garbage = _Cycle()
    gone = weakref.ref(garbage)
    gc.collect()  # it survives this one: now in the oldest generation
    del garbage  # unreachable now, but only a full collection can find it
    with sim() as url:
        run_harness(url, concurrencies=(1, 2), runs=2)  # four groups
    assert gone() is None
