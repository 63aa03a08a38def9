"""The simulator's performance model: engine flags a tuner searches, with a known optimum.

Off unless asked for (``SimConfig.perf`` is None), so the simulator's plain timing model
is unchanged. When on, it answers to the flags vLLM's tuners search, each with a cost
that has a reason:

* ``max_num_seqs`` (S): the batch limit. Requests beyond it queue; each idle batch slot
  costs ``pad_cost / S`` of a decode step (a batch padded to its captured size).
* ``max_num_batched_tokens`` (B): the token budget of one step. A prompt of P tokens
  prefills in ``ceil(P / B)`` chunks, each further chunk costing ``chunk_step_ms``; every
  decode step carries ``B * step_us_per_token`` (a step sized for its budget).
* ``chunked_prefill``: off, the budget must hold a whole ``max_model_len`` prompt, or the
  engine refuses to start (as vLLM does).
* ``gpu_memory_utilization`` (u): the KV cache holds ``kv_tokens * (u - weights_share)``
  tokens, so ``floor(capacity / (prompt + output))`` requests run at once; above
  ``oom_above`` the engine runs out of memory at start; a cache that cannot hold one
  ``max_model_len`` request refuses to start.
* ``noise``: the host's run-to-run noise. Each start of the simulator draws one factor,
  ``exp(noise * N(0, 1))`` from ``noise_seed``, that scales every duration of that
  process: the same configuration measures differently from start to start, as on a
  shared host, and best-of-N selection picks the luckiest start.

:func:`expected_e2el_ms` is the model's own prediction of end-to-end latency for a
closed-loop workload, so the optimum of a search space is known (:func:`optimum`).
"""

from __future__ import annotations

import itertools
import math
import os
import random
from collections.abc import Iterable, Mapping

from pydantic import BaseModel, ConfigDict, Field


class PerfModel(BaseModel):
    """Engine flags (stock values are the defaults) and the simulated GPU behind them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_num_seqs: int = Field(default=256, ge=1)
    max_num_batched_tokens: int = Field(default=2048, ge=16)
    chunked_prefill: bool = True
    gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1)
    kv_tokens: int = Field(default=10000, ge=1, description="KV tokens per unit of memory share.")
    weights_share: float = Field(default=0.5, ge=0, lt=1)
    oom_above: float = Field(default=0.96, gt=0, le=1)
    pad_cost: float = Field(default=0.5, ge=0)
    chunk_step_ms: float = Field(default=8.0, ge=0)
    step_us_per_token: float = Field(default=0.5, ge=0)
    noise: float = Field(default=0.0, ge=0, le=1)
    noise_seed: str | None = None

    def capacity(self) -> int:
        """KV-cache tokens."""
        return max(0, int(self.kv_tokens * (self.gpu_memory_utilization - self.weights_share)))

    def startup_problem(self, max_model_len: int) -> str | None:
        """Why an engine with these flags would not start, or None."""
        u, cap = self.gpu_memory_utilization, self.capacity()
        if u > self.oom_above:
            return (f"CUDA out of memory (simulated): gpu_memory_utilization {u:g} is above "
                    f"what this GPU has free ({self.oom_above:g})")  # fmt: skip
        if not self.chunked_prefill and self.max_num_batched_tokens < max_model_len:
            return (f"max_num_batched_tokens ({self.max_num_batched_tokens}) is smaller than "
                    f"max_model_len ({max_model_len}) with chunked prefill off")  # fmt: skip
        if cap < max_model_len:
            return (f"the KV cache holds {cap} tokens, fewer than max_model_len "
                    f"({max_model_len}): raise gpu_memory_utilization or --kv-tokens, or lower "
                    "--max-model-len")  # fmt: skip
        return None

    def slots(self, tokens: int) -> int:
        """Requests of ``tokens`` (prompt + output) that may run at once."""
        return max(1, min(self.max_num_seqs, self.capacity() // max(tokens, 1)))

    def prefill_extra_ms(self, prompt_tokens: int) -> float:
        if not self.chunked_prefill:
            return 0.0
        chunks = math.ceil(prompt_tokens / self.max_num_batched_tokens)
        return max(chunks - 1, 0) * self.chunk_step_ms

    def decode(self, base_ms: float, running: int) -> float:
        """One decode interval, from the plain model's ``base_ms`` at ``running`` requests."""
        s = self.max_num_seqs
        padding = 1.0 + self.pad_cost * (s - min(running, s)) / s
        return base_ms * padding + self.max_num_batched_tokens * self.step_us_per_token / 1000.0

    def host_factor(self) -> float:
        """This process's draw of host noise (1.0 without noise)."""
        if not self.noise:
            return 1.0
        seed = self.noise_seed if self.noise_seed is not None else os.urandom(16).hex()
        return math.exp(self.noise * random.Random(f"noise:{seed}").gauss(0.0, 1.0))


def expected_e2el_ms(
    perf: PerfModel,
    *,
    ttft_ms: float,
    itl_ms: float,
    prompt_tokens: int,
    output_tokens: int,
    concurrency: int,
    prefill_us_per_token: float = 0.0,
    batch_slowdown: float = 0.0,
) -> float:
    """The model's end-to-end latency for ``concurrency`` closed-loop requests (no noise):
    prefill, then ``output_tokens - 1`` decode intervals, stretched by queueing when fewer
    than ``concurrency`` requests fit at once."""
    slots = perf.slots(prompt_tokens + output_tokens)
    running = min(concurrency, slots)
    ttft = (
        ttft_ms + prompt_tokens * prefill_us_per_token / 1000 + perf.prefill_extra_ms(prompt_tokens)
    )
    base = itl_ms * (1.0 + batch_slowdown * (running - 1))
    service = ttft + (output_tokens - 1) * perf.decode(base, running)
    return service * max(1.0, concurrency / slots)


def grid(space: Mapping[str, Iterable[object]]) -> list[dict[str, object]]:
    """Every combination of a space given as field -> values."""
    names = list(space)
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*space.values())]


def optimum(
    base: PerfModel, space: Mapping[str, Iterable[object]], max_model_len: int, **workload: float
) -> tuple[dict[str, object], float]:
    """The point of ``space`` (PerfModel field -> values) with the lowest expected E2EL among
    those that start, and that latency."""
    best: tuple[dict[str, object], float] | None = None
    for point in grid(space):
        perf = base.model_copy(update=point)
        if perf.startup_problem(max_model_len) is not None:
            continue
        value = expected_e2el_ms(perf, **workload)  # type: ignore[arg-type]
        if best is None or value < best[1]:
            best = (point, value)
    if best is None:
        raise ValueError("no point of the space starts")
    return best
