"""Helpers: a real simulator on a loopback port (its own thread) and a small harness run."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from servekit.bench.runner import RunConfig, run_benchmark
from servekit.bench.sim import SimConfig
from servekit.bench.sim.server import running_in_thread
from servekit.package.evidence import Evidence, load_evidence
from servekit.progress import track_count

FAST = {"ttft_ms": 5.0, "itl_ms": 2.0}


class Counter:
    """A progress tracker that remembers each phase and what was counted in it."""

    def __init__(self) -> None:
        self.done = 0.0
        self.phases: list[tuple[str, int | None, float]] = []

    def advance(self, amount: float) -> None:
        self.done += amount
        if self.phases:
            name, total, count = self.phases[-1]
            self.phases[-1] = (name, total, count + amount)

    def phase(self, description: str, total: int | None) -> None:
        self.phases.append((description, total, 0.0))


@pytest.fixture
def sim() -> Callable[..., AbstractContextManager[str]]:
    """``with sim(ttft_ms=..., fault=...) as url:`` runs a simulator for the block."""

    def start(**settings: Any) -> AbstractContextManager[str]:
        return running_in_thread(SimConfig(**{**FAST, **settings}))

    return start


def harness(url: str, out: Path, **overrides: Any) -> list[Evidence]:
    """A small run against ``url``; returns the loaded evidence files."""
    settings: dict[str, Any] = {
        "endpoint": url,
        "model": "servekit-sim",
        "prompt_min": 20,
        "prompt_max": 40,
        "output_tokens": 8,
        "concurrencies": (2,),
        "requests": 6,
        "warmup": 1,
        "seed": 7,
        "out": out,
        "timeout_s": 5.0,
        "loop": "asyncio",
    }
    settings.update(overrides)
    config = RunConfig.model_validate(settings)
    counter = Counter()
    with track_count("test", config.total_requests, unit="requests"):
        files = run_benchmark(config, counter)
    assert counter.done == config.total_requests
    return [load_evidence(f) for f in files]


@pytest.fixture
def run_harness(tmp_path: Path) -> Iterator[Callable[..., list[Evidence]]]:
    yield lambda url, **kw: harness(url, tmp_path / "out", **kw)
