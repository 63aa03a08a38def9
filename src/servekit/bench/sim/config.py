"""Settings of the simulator: its timing model, its quirks and the faults it injects."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from servekit.bench.sim.perf import PerfModel

ENGINE_NAME = "servekit-sim"


class Fault(StrEnum):
    """A failure the simulator injects into selected streaming requests."""

    HTTP_500 = "http_500"  # answer 500 with a JSON error body
    MIDSTREAM_ERROR = "midstream_error"  # half way, an SSE event carrying {"error": ...}
    MALFORMED = "malformed"  # half way, a line that is not a server-sent event
    DISCONNECT = "disconnect"  # half way, close the connection mid-body
    STALL = "stall"  # half way, stop sending (the client's read timeout fires)
    WRONG_USAGE = "wrong_usage"  # usage reports fewer completion tokens than were streamed


class SimConfig(BaseModel):
    """The simulator's timing model and behaviour.

    Time to first token is ``ttft_ms + prompt_tokens * prefill_us_per_token / 1000``
    after admission (plus any time queued behind ``max_concurrency``). Each later token
    follows ``itl_ms * (1 + batch_slowdown * (running - 1))`` after the previous one,
    times a seeded uniform jitter factor in ``[1 - jitter, 1 + jitter]``. Deadlines are
    absolute, so timer lateness never accumulates. With ``perf`` set, the engine flags of
    :class:`~servekit.bench.sim.perf.PerfModel` change both, and admission.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = "servekit-sim"
    ttft_ms: float = Field(default=120.0, ge=0)
    prefill_us_per_token: float = Field(default=0.0, ge=0)
    itl_ms: float = Field(default=15.0, gt=0)
    batch_slowdown: float = Field(default=0.0, ge=0)
    jitter: float = Field(default=0.0, ge=0, lt=1)
    seed: int = 0
    max_concurrency: int = Field(default=0, ge=0, description="0: no limit, no queueing.")
    max_model_len: int = Field(default=131072, ge=1)
    natural_length: int = Field(
        default=0,
        ge=0,
        description="Without ignore_eos/min_tokens, stop after this many tokens (0: never early).",
    )
    no_usage: bool = Field(default=False, description="Ignore stream_options (no usage chunk).")
    reject_ignore_eos: bool = Field(
        default=False, description="Answer 422 to ignore_eos/min_tokens, as transformers serve."
    )
    role_chunk: bool = Field(
        default=True, description="Chat: send a role-only chunk at admission, before any content."
    )
    fault: Fault | None = None
    fault_every: int = Field(default=1, ge=1)
    fault_match: str | None = Field(
        default=None, description="Fault only requests whose prompt contains this text."
    )
    perf: PerfModel | None = Field(
        default=None, description="The performance model of engine flags (off: None)."
    )

    def ttft_s(self, prompt_tokens: int) -> float:
        extra = self.perf.prefill_extra_ms(prompt_tokens) if self.perf else 0.0
        return (self.ttft_ms + prompt_tokens * self.prefill_us_per_token / 1000.0 + extra) / 1000.0

    def interval_s(self, running: int) -> float:
        base = self.itl_ms * (1.0 + self.batch_slowdown * max(running - 1, 0))
        return (self.perf.decode(base, running) if self.perf else base) / 1000.0
