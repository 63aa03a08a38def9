"""What a replay writes and what a comparison finds: frozen, typed models.

A replay directory holds ``replay.json`` (:class:`ReplayHeader`: the kit, its receipt
digest, the host facts, and every evidence file with its digest) and, per workload,
``<workload>/run-N.jsonl`` in the harness's own evidence format (docs/metrics.md).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from servekit.package.models import Metric, Provenance, Scope, Statistic

REPLAY_FILE: Final = "replay.json"
REPLAY_FORMAT: Final = "servekit.replay/v1"
REPRODUCTION_PREDICATE_TYPE: Final = "https://servekit.dev/reproduction/v1"
RECEIPT_SUBJECT_PREFIX: Final = "servekit-receipt:"


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Gpu(Frozen):
    name: str
    memory: str | None = None
    driver: str | None = None


class HostFacts(Frozen):
    """The machine the replay ran from, and what the endpoint says it is."""

    hostname: str
    os: str
    python: str
    cpu: str | None = Field(default=None, description="CPU model name, when the OS says it.")
    cpu_count: int | None = None
    gpus: tuple[Gpu, ...] = Field(default=(), description="GPUs visible through nvidia-smi.")
    nvidia_smi: bool = Field(default=False, description="Whether nvidia-smi answered.")
    engine_version: str | None = None
    engine_version_source: Literal["/version", "/v1/models"] | None = None


class ReplayFile(Frozen):
    file: str = Field(description="Path relative to the replay directory.")
    sha256: str


class WorkloadReplay(Frozen):
    id: str
    concurrencies: tuple[int, ...]
    files: tuple[ReplayFile, ...]


class KitRef(Frozen):
    """The kit a replay or reproduction is about, by its signed receipt."""

    package: str
    version: str
    publisher: str
    publisher_key_id: str
    receipt_sha256: str = Field(description="sha256 of the kit's receipt.dsse.json bytes.")
    kit_digest: str = Field(description="sha256 of the kit's MANIFEST (the kit subject).")


class ReplayHeader(Frozen):
    """``replay.json``: names the kit, its receipt, the host and every evidence file."""

    record: Literal["replay"] = "replay"
    format: Literal["servekit.replay/v1"] = REPLAY_FORMAT
    kit: KitRef
    kit_source: str
    endpoint: str
    model: str
    gpus: int = Field(ge=1)
    servekit_version: str
    started_at: str
    ended_at: str
    host: HostFacts
    workloads: tuple[WorkloadReplay, ...]
    skipped: tuple[str, ...] = Field(default=(), description="Workloads not replayed.")

    def workload(self, workload_id: str) -> WorkloadReplay | None:
        return next((w for w in self.workloads if w.id == workload_id), None)


# --- comparison ---------------------------------------------------------------------


class Verdict(StrEnum):
    WITHIN = "within"
    BETTER = "better"
    WORSE = "worse"
    REPORTED = "reported"  # nothing published to compare against: here is your measurement
    NOT_REPLAYED = "not_replayed"
    NO_DATA = "no_data"  # the replay holds no successful request to recompute it from
    RETRACTED = "retracted"  # the publisher withdrew the figure; not compared

    @property
    def fails(self) -> bool:
        return self in (Verdict.WORSE, Verdict.NO_DATA)


class FigureComparison(Frozen):
    id: str
    label: str
    metric: Metric
    statistic: Statistic
    concurrency: int
    scope: Scope | None
    unit: str
    decimals: int
    provenance: Provenance
    workload: str | None
    published: float
    buyer: float | None
    per_run: dict[str, float]
    diff_pct: float | None
    verdict: Verdict


class WorkloadResult(Frozen):
    id: str
    replayed: bool
    runs: tuple[str, ...] = ()
    completed: int = 0
    failed: int = 0


class Comparison(Frozen):
    """Every figure of a package next to the buyer's replay of it."""

    kit: KitRef
    tolerance_pct: float
    figures: tuple[FigureComparison, ...]
    workloads: tuple[WorkloadResult, ...]
    host: HostFacts
    replayed_at: str
    evidence: tuple[ReplayFile, ...]

    @property
    def compared(self) -> tuple[FigureComparison, ...]:
        return tuple(
            f for f in self.figures if f.verdict in (Verdict.WITHIN, Verdict.BETTER, Verdict.WORSE)
        )

    @property
    def failed_requests(self) -> int:
        return sum(w.failed for w in self.workloads)

    @property
    def reproduced(self) -> bool:
        """Every replayed figure within tolerance or better, and no request failed."""
        return (
            bool(self.compared)
            and not any(f.verdict.fails for f in self.figures)
            and self.failed_requests == 0
        )
