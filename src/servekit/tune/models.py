"""What ``servekit tune`` reads (the workload and the search space) and what it records
(each candidate, the confirmation), as frozen models."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from servekit.engines import FlagValue
from servekit.package.models import Api, Identifier, Metric, Statistic

CONTRACT_PCT = 2.0
"""The improvement contract the draft package states: servekit's floor (SK106)."""


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Objective(Frozen):
    """The one number the search minimises (latency) or maximises (throughput)."""

    metric: Metric = Metric.E2EL
    statistic: Statistic = Statistic.MEDIAN


class TuneWorkload(Frozen):
    """``workload.yaml``: the contract every candidate is measured on (one concurrency)."""

    id: Identifier
    description: str = Field(min_length=1)
    api: Api = Api.COMPLETIONS
    prompt_tokens: tuple[int, int] = Field(description="[min, max] prompt tokens.")
    output_tokens: int = Field(ge=1)
    concurrency: int = Field(ge=1)
    requests: int = Field(ge=1, description="Measured requests per run.")
    warmup: int = Field(default=0, ge=0)
    seed: int = 0
    context_length: int = Field(ge=1, description="The engine's max model length.")
    objective: Objective = Objective()

    @model_validator(mode="after")
    def _ordered(self) -> TuneWorkload:
        low, high = self.prompt_tokens
        if not 1 <= low <= high:
            raise ValueError(f"prompt_tokens [{low}, {high}] must be 1 <= min <= max")
        return self


class Space(Frozen):
    """``space.yaml``: ``search`` (flag -> values to try) and ``fixed`` (arguments every
    candidate, stock included, runs with; they must be load-needed flags of the engine);
    ``env`` (variables every start runs with, recorded in each run; they must be neutral for
    the engine) and ``shared`` (other arguments every candidate, stock included, runs with:
    the baseline is then stock plus these, not the engine's stock, and the draft says so)."""

    search: dict[str, tuple[FlagValue, ...]] = Field(min_length=1)
    fixed: tuple[str, ...] = ()
    env: dict[str, str] = {}
    shared: tuple[str, ...] = ()

    def size(self) -> int:
        total = 1
        for values in self.search.values():
            total *= len(values)
        return total


class Method(StrEnum):
    TPE = "tpe"  # optuna's tree-structured Parzen estimator
    RANDOM = "random"  # a baseline: uniform over the space
    GRID = "grid"  # a baseline: the space in order


class TuneConfig(Frozen):
    """Everything one ``servekit tune`` was asked to do."""

    engine: str
    model_dir: Path
    served_name: str
    workload: TuneWorkload
    space: Space
    budget_s: float = Field(gt=0)
    max_candidates: int | None = Field(default=None, ge=1)
    method: Method = Method.TPE
    confirm_pairs: int = Field(default=5, ge=4, le=10)
    out: Path
    gpus: int = Field(default=1, ge=1)
    hardware: str = "1x GPU"
    allow_numerics: bool = False
    seed: int = 0
    startup_timeout_s: float = Field(default=900.0, gt=0)


class Status(StrEnum):
    OK = "ok"
    FAILED = "failed"


class Candidate(Frozen):
    """One configuration the search measured (stock is ``c000``), or failed to."""

    id: str
    flags: dict[str, FlagValue]
    status: Status
    reason: str | None = None
    score: float | None = None
    run_file: str | None = None
    seconds: float = Field(ge=0, description="Wall time, engine start and stop included.")


class Confirmation(Frozen):
    """The fresh interleaved runs of stock and the best candidate, and the test's verdict."""

    candidate: str
    stock_scores: tuple[float, ...]
    tuned_scores: tuple[float, ...]
    improvement_pct: float
    p_value: float
    alpha: float
    contract_pct: float
    claimed: bool
    verdict: str
