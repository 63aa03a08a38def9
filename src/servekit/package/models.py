"""The recipe package definition: frozen, typed models of ``package.yaml``.

A package version is one directory::

    package.yaml     this model, as YAML
    evidence/        raw per-request benchmark records (JSON Lines) and other raw files
    licenses/        package licence and the base model's licence texts
    build/           the engine build recipe (e.g. a Dockerfile pinned to a commit)

Every path in the model is relative to that directory. The JSON Schema in
``schema/package.schema.json`` is generated from these classes.
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)

SCHEMA_VERSION = 1

Sha256Hex = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
TreeDigest = Annotated[str, StringConstraints(pattern=r"^sha256:[0-9a-f]{64}$")]
GitCommit = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{40}$")]
ShortCommit = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{7,40}$")]


def _relative_path(value: str) -> str:
    parts = value.split("/")
    if value.startswith("/") or ".." in parts or "" in parts or "." in parts:
        raise ValueError(
            f"'{value}' must be a plain relative path inside the package (no leading '/', "
            "no '.' or '..' parts, no empty parts)"
        )
    return value


RelPath = Annotated[
    str,
    StringConstraints(pattern=r"^[A-Za-z0-9._+-]+(/[A-Za-z0-9._+-]+)*$"),
    AfterValidator(_relative_path),
]
AbsPath = Annotated[
    str,
    StringConstraints(pattern=r"^/[A-Za-z0-9._+-]+(/[A-Za-z0-9._+-]+)*$"),
    AfterValidator(lambda v: "/" + _relative_path(v[1:])),
]
Identifier = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9._-]*$")]
NonEmpty = Annotated[str, StringConstraints(min_length=1)]


class Model(BaseModel):
    """Base for every package model: frozen, no unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_enum_values=False)


# --- closed sets ----------------------------------------------------------------


class PackageStatus(StrEnum):
    DRAFT = "draft"
    PUBLISHED = "published"
    SUPERSEDED = "superseded"


class MeasurementStatus(StrEnum):
    CURRENT = "current"
    RERUN = "re-run"
    RETRACTED = "retracted"


class Provenance(StrEnum):
    MEASURED = "measured"
    REPORTED = "reported"


class Modality(StrEnum):
    TEXT = "text"
    VISION = "vision"
    AUDIO = "audio"
    VIDEO = "video"


class EngineBuild(StrEnum):
    WHEEL = "wheel"
    SOURCE = "source"


class Metric(StrEnum):
    TTFT = "ttft"
    TPOT = "tpot"
    ITL = "itl"
    E2EL = "e2el"
    REQUEST_THROUGHPUT = "request_throughput"
    OUTPUT_THROUGHPUT = "output_throughput"
    TOTAL_TOKEN_THROUGHPUT = "total_token_throughput"

    @property
    def is_throughput(self) -> bool:
        return self in _THROUGHPUT

    @property
    def unit(self) -> str:
        match self:
            case Metric.TTFT | Metric.TPOT | Metric.ITL | Metric.E2EL:
                return "ms"
            case Metric.REQUEST_THROUGHPUT:
                return "req/s"
            case Metric.OUTPUT_THROUGHPUT | Metric.TOTAL_TOKEN_THROUGHPUT:
                return "tok/s"


_THROUGHPUT = frozenset(
    {Metric.REQUEST_THROUGHPUT, Metric.OUTPUT_THROUGHPUT, Metric.TOTAL_TOKEN_THROUGHPUT}
)


class Statistic(StrEnum):
    MEAN = "mean"
    MEDIAN = "median"
    P50 = "p50"
    P90 = "p90"
    P95 = "p95"
    P99 = "p99"
    VALUE = "value"  # throughputs: one value over the measured window


class Scope(StrEnum):
    PER_GPU = "per_gpu"
    NODE = "node"


class AccuracyMethod(StrEnum):
    BY_CONSTRUCTION = "by_construction"
    MEASURED = "measured"
    NOT_MEASURED = "not_measured"
    NOT_APPLICABLE = "not_applicable"


class GateResult(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    NOT_RUN = "not_run"


class MemorySource(StrEnum):
    ENGINE_PREALLOCATION = "engine_preallocation"
    MEASURED_PROFILE = "measured_profile"


class DisclosureTopic(StrEnum):
    MODALITY = "modality"
    CONTEXT = "context"
    SAFETY = "safety"
    ACCURACY = "accuracy"
    ENGINE_BUILD = "engine_build"
    PEAK_MEMORY = "peak_memory"
    HARDWARE = "hardware"
    SPEEDUP = "speedup"
    EVIDENCE = "evidence"
    SIMULATOR = "simulator"
    OUTPUT_LENGTH = "output_length"
    WARMUP = "warmup"
    REPORTED_WORKLOAD = "reported_workload"
    OTHER = "other"


class Tier(StrEnum):
    STANDARD = "standard"
    ENTERPRISE = "enterprise"


class Api(StrEnum):
    COMPLETIONS = "completions"
    CHAT = "chat"


# --- model pin ---------------------------------------------------------------------


class LicenseObligation(Model):
    """A key obligation of the base model's licence, in the publisher's words."""

    section: str | None = None
    summary: NonEmpty
    threshold: str | None = Field(
        default=None, description="When it applies, e.g. 'above 20M USD revenue over 12 months'."
    )


class ModelLicense(Model):
    name: NonEmpty
    spdx: str | None = None
    file: RelPath = Field(description="The licence text, shipped in the kit under licenses/.")
    copyright: str | None = None
    commercial_use: bool | None = None
    obligations: tuple[LicenseObligation, ...] = ()
    modifications: NonEmpty = Field(
        description="Statement of what the publisher changed in the model (e.g. 'none')."
    )


class ModalityComponent(Model):
    modality: Modality
    component: str | None = Field(default=None, description="e.g. 'MoonViT-V2 vision tower'.")
    parameters: int | None = Field(default=None, ge=0)


class Parameters(Model):
    total: int = Field(ge=1)
    active: int | None = Field(default=None, ge=1, description="Active per token (MoE).")
    notes: str | None = None


class ModelPin(Model):
    """The upstream model at an immutable Hugging Face commit."""

    repo: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9._-]+/[A-Za-z0-9._-]+$")]
    commit: GitCommit
    tree_digest: TreeDigest
    total_bytes: int = Field(ge=0)
    shard_count: int = Field(ge=1, description="Number of weight files (safetensors shards).")
    files: RelPath | None = Field(
        default=None,
        description="Optional pin file (JSON) listing every file with size and sha256.",
    )
    parameters: Parameters
    modalities: tuple[ModalityComponent, ...] = Field(min_length=1)
    context_length: int = Field(ge=1, description="Longest context the model supports.")
    gated: bool = False
    quantization: str | None = Field(
        default=None, description="Upstream weight format, e.g. 'MXFP4 (upstream QAT release)'."
    )
    quantized_by_publisher: bool = Field(
        default=False, description="True only if the publisher produced a quantized copy."
    )
    license: ModelLicense


# --- engine, serving, hardware -------------------------------------------------------


class EnginePin(Model):
    name: NonEmpty = Field(description="e.g. 'vllm'.")
    version: NonEmpty = Field(description="The exact version string the engine reports.")
    source_repo: NonEmpty = Field(description="e.g. 'vllm-project/vllm'.")
    source_commit: ShortCommit | None = Field(
        default=None, description="Commit the engine was built from (required for source builds)."
    )
    build: EngineBuild
    distribution: str | None = Field(
        default=None, description="Wheel builds: the distribution installed, e.g. 'vllm==0.11.0'."
    )
    distribution_record_sha256: Sha256Hex | None = Field(
        default=None,
        description="Wheel builds: sha256 of the installed distribution's RECORD file "
        "(lists every installed file with its hash), pinning the exact wheel contents.",
    )
    build_recipe: RelPath | None = Field(default=None, description="e.g. build/Dockerfile.")
    build_exclusions: tuple[NonEmpty, ...] = ()
    binary_ships: bool = False
    recipe_executed: bool = Field(
        default=True, description="False if the build recipe has not yet been run end to end."
    )
    image: str | None = Field(
        default=None, description="Container image the deploy files run (built from the recipe)."
    )
    notes: str | None = None

    @model_validator(mode="after")
    def _build_is_pinned(self) -> EnginePin:
        if self.build is EngineBuild.SOURCE and (
            self.build_recipe is None or not self.source_commit
        ):
            raise ValueError(
                "a source-built engine needs source_commit and build_recipe (e.g. build/Dockerfile)"
            )
        if self.build is EngineBuild.WHEEL and not (self.source_commit or self.distribution):
            raise ValueError(
                "a wheel build needs distribution (e.g. 'vllm==0.11.0') or source_commit"
            )
        return self


class EnvVar(Model):
    name: Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
    value: str


class Serve(Model):
    """The exact serve command: ``entrypoint MODEL args...`` with ``env``.

    ``args`` is the ordered argument vector after the model argument, exactly as
    every deploy file writes it.
    """

    entrypoint: tuple[NonEmpty, ...] = Field(min_length=1, description="e.g. ['vllm', 'serve'].")
    model_arg: str | None = Field(
        default=None,
        description="Flag that precedes the model (e.g. '--model'); null for a positional model.",
    )
    args: tuple[str, ...] = ()
    env: tuple[EnvVar, ...] = ()
    port: int = Field(default=8000, ge=1, le=65535)
    served_model_name: str | None = None
    model_dir: AbsPath | None = Field(
        default=None,
        description="An absolute path the engine serves in place of model.repo at model.commit, "
        "for weights the publisher converted (a disclosure says how to make them): deploy files "
        "mount the operator's copy there read-only and pin no Hub revision.",
    )


class GpuTarget(Model):
    gpu: NonEmpty = Field(description="GPU model, e.g. 'B300'.")
    count: int = Field(ge=1, description="GPUs in total.")
    memory_per_gpu_gb: float = Field(gt=0)
    nodes: int = Field(default=1, ge=1)
    interconnect: NonEmpty = Field(description="e.g. 'NVLink, single node'.")

    @property
    def label(self) -> str:
        return f"{self.count}x {self.gpu}"


class HardwareAlternative(Model):
    description: NonEmpty
    measured: bool = False


class FloorAttempt(Model):
    hardware: NonEmpty
    configuration: NonEmpty
    outcome: NonEmpty
    reason: NonEmpty
    evidence: RelPath | None = Field(
        default=None, description="The attempt's log or record (a failed attempt's proof)."
    )


class HardwareFloor(Model):
    weights_per_gpu_gib: float | None = Field(default=None, gt=0)
    free_gib: float | None = Field(default=None, gt=0)
    total_gib: float | None = Field(default=None, gt=0)
    measured_on: str | None = Field(default=None, description="Hardware of the residency figure.")
    requirement: str | None = Field(default=None, description="The floor in words.")
    attempts: tuple[FloorAttempt, ...] = ()


class Hardware(Model):
    target: GpuTarget
    alternatives: tuple[HardwareAlternative, ...] = ()
    floor: HardwareFloor | None = None


# --- workloads and measurements --------------------------------------------------------


class TokenRange(Model):
    min: int = Field(ge=1)
    max: int = Field(ge=1)
    counted_by: str = Field(default="server", description="Who counted: 'server' or a tokenizer.")

    @model_validator(mode="after")
    def _ordered(self) -> TokenRange:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) is larger than max ({self.max})")
        return self


class Workload(Model):
    id: Identifier
    description: NonEmpty
    dataset: NonEmpty
    api: Api = Api.COMPLETIONS
    modalities: tuple[Modality, ...] = (Modality.TEXT,)
    prompt_tokens: TokenRange
    output_tokens: int = Field(ge=1)
    concurrencies: tuple[int, ...] = Field(min_length=1)
    warmup_requests: int = Field(ge=0)
    measured_requests: int = Field(ge=1, description="Measured requests per concurrency per run.")
    seed: int
    context_length: int = Field(ge=1, description="The engine's max model length in the runs.")


class FigureStatus(Model):
    state: MeasurementStatus = MeasurementStatus.CURRENT
    reason: str | None = None
    date: dt.date | None = None

    @model_validator(mode="after")
    def _retraction_needs_reason(self) -> FigureStatus:
        if self.state is not MeasurementStatus.CURRENT and (not self.reason or not self.date):
            raise ValueError(f"a figure in state '{self.state}' needs a reason and a date")
        return self


class ServeRecord(Model):
    """The serve configuration a run ran with, for evidence that does not record it (v1)."""

    argv: tuple[NonEmpty, ...] = Field(min_length=1)
    env: tuple[EnvVar, ...] = ()


class Run(Model):
    """One benchmark run: a raw evidence file of per-request records."""

    id: Identifier
    file: RelPath
    workload: Identifier
    simulator: bool = Field(
        default=False, description="True when the engine was servekit's simulator, not a real one."
    )
    date: dt.date
    config: Identifier = Field(
        default="default",
        description="Serving configuration label: runs of one workload and config are "
        "replicates (a speedup's stock baseline is another config on the same workload).",
    )
    status: FigureStatus = Field(
        default_factory=lambda: FigureStatus(),
        description="retracted (with reason and date) when no figure may use this run.",
    )
    serve: ServeRecord | None = Field(
        default=None,
        description="The serve configuration of a run whose evidence does not record it (v1).",
    )

    @property
    def current(self) -> bool:
        return self.status.state is MeasurementStatus.CURRENT


class SourceWorkload(Model):
    """The workload a reported figure's source states it ran."""

    output_tokens: int | None = Field(default=None, ge=1)
    concurrency: int | None = Field(default=None, ge=1)
    requests: int | None = Field(default=None, ge=1)
    warmup: int | None = Field(default=None, ge=0)
    prompt_tokens: TokenRange | None = None


class Source(Model):
    """Where a reported figure comes from."""

    name: NonEmpty
    reference: NonEmpty = Field(description="URL, document or file name.")
    date: dt.date
    workload: SourceWorkload | None = Field(
        default=None, description="The workload the source states (output tokens, concurrency...)."
    )


class MeasuredOn(Model):
    engine: NonEmpty = Field(description="Engine version string, must equal engine.version.")
    hardware: NonEmpty = Field(description="e.g. '8x B300', must equal the hardware target.")
    workload: Identifier


class Figure(Model):
    """One published number, and how to recompute it."""

    id: Identifier
    label: NonEmpty
    metric: Metric
    statistic: Statistic
    concurrency: int = Field(ge=1)
    value: float
    decimals: int = Field(default=0, ge=0, le=6, description="Rounding of the published value.")
    scope: Scope | None = Field(default=None, description="Throughputs: per_gpu or node.")
    provenance: Provenance
    measured_on: MeasuredOn | None = None
    runs: tuple[Identifier, ...] = Field(
        default=(), description="Measured: the run it is computed from, then replicate runs."
    )
    source: Source | None = None
    status: FigureStatus = FigureStatus()
    on_card: bool = Field(default=False, description="Shown as a headline on the catalog card.")

    @property
    def unit(self) -> str:
        return self.metric.unit


class Speedup(Model):
    """A claimed improvement of a figure over a stock baseline figure."""

    id: Identifier
    figure: Identifier
    baseline: Identifier
    value_pct: float
    baseline_is_stock: bool


class Measurements(Model):
    tolerance_pct: float = Field(
        default=2.0, gt=0, description="Repeated runs of one configuration must agree within this."
    )
    improvement_contract_pct: float = Field(
        default=2.0, ge=0, description="Smallest end-to-end improvement a speedup may claim."
    )
    concurrency_tolerance_pct: float = Field(
        default=10.0,
        gt=0,
        le=50,
        description="Achieved concurrency must lie within this percent of the labelled one.",
    )
    runs: tuple[Run, ...] = ()
    figures: tuple[Figure, ...] = ()
    speedups: tuple[Speedup, ...] = ()
    notes: str | None = None


# --- accuracy ---------------------------------------------------------------------


class Control(Model):
    """A control experiment, e.g. two identical servers compared with each other."""

    name: NonEmpty
    kind: str = Field(description="e.g. 'same_server_agreement'.")
    value_pct: float | None = None
    evidence: RelPath | None = None
    shows_method_unsound: bool = False
    description: NonEmpty


class AgreementScore(Model):
    value_pct: float
    informational: bool
    description: NonEmpty


class Accuracy(Model):
    method: AccuracyMethod
    claim: NonEmpty = Field(description="What is claimed, e.g. served-output parity.")
    methodology: NonEmpty
    weights_modified: bool
    runtime_stages_applied: tuple[NonEmpty, ...] = ()
    metric: str | None = None
    baseline: float | None = None
    optimized: float | None = None
    recovery_pct: float | None = None
    delta: float | None = None
    absent_reason: str | None = Field(
        default=None, description="Why baseline/optimized/recovery are not published."
    )
    controls: tuple[Control, ...] = ()
    cross_server_agreement: AgreementScore | None = None
    gate: GateResult
    calibration: str | None = None


# --- disclosures, money, licences ----------------------------------------------------------


class Disclosure(Model):
    topic: DisclosureTopic
    subject: str | None = Field(
        default=None, description="What it covers, e.g. 'vision' for a modality disclosure."
    )
    title: NonEmpty
    text: NonEmpty


class PeakMemory(Model):
    published: bool
    value_gib: float | None = None
    source: MemorySource | None = None
    note: str | None = None


class HourlyRate(Model):
    usd_per_node_hour: float = Field(gt=0)
    source: NonEmpty
    date: dt.date
    covers_whole_node: bool


class CostBasis(Model):
    as_of: dt.date
    node_hourly_rate: HourlyRate | None = None
    usd_per_million_output_tokens: float | None = None
    throughput_figure: Identifier | None = Field(
        default=None, description="The node-aggregate output throughput the cost divides by."
    )
    note: NonEmpty


class PackageLicense(Model):
    id: Identifier
    name: NonEmpty
    version: NonEmpty
    date: dt.date
    file: RelPath
    summary: str | None = None


class Maintenance(Model):
    available: bool = True
    usd_per_year: float | None = Field(default=None, ge=0)


class Pricing(Model):
    usd: float = Field(ge=0)
    tier: Tier
    maintenance: Maintenance = Maintenance()


class RoadmapItem(Model):
    version: NonEmpty
    trigger: NonEmpty
    plan: NonEmpty


# --- the package --------------------------------------------------------------------


class Package(Model):
    """A recipe package version: the single source of truth for every number shown."""

    schema_version: int = Field(default=SCHEMA_VERSION, ge=1, le=SCHEMA_VERSION)
    id: Identifier
    name: NonEmpty
    version: Annotated[str, StringConstraints(pattern=r"^\d+\.\d+\.\d+([.-][0-9A-Za-z.]+)?$")]
    status: PackageStatus
    summary: NonEmpty
    publisher: NonEmpty
    published: dt.date | None = None
    proof_verified: dt.date | None = None
    model: ModelPin
    engine: EnginePin
    serve: Serve
    hardware: Hardware
    workloads: tuple[Workload, ...] = Field(min_length=1)
    measurements: Measurements
    accuracy: Accuracy
    disclosures: tuple[Disclosure, ...] = ()
    peak_memory: PeakMemory
    cost: CostBasis
    license: PackageLicense
    pricing: Pricing
    roadmap: tuple[RoadmapItem, ...] = ()
    solved: tuple[NonEmpty, ...] = Field(
        default=(), description="The walls this configuration resolves, one line each."
    )

    def workload(self, workload_id: str) -> Workload | None:
        return next((w for w in self.workloads if w.id == workload_id), None)

    def run(self, run_id: str) -> Run | None:
        return next((r for r in self.measurements.runs if r.id == run_id), None)

    def figure(self, figure_id: str) -> Figure | None:
        return next((f for f in self.measurements.figures if f.id == figure_id), None)

    @property
    def published_figures(self) -> tuple[Figure, ...]:
        """Figures a buyer sees: everything not retracted."""
        return tuple(
            f
            for f in self.measurements.figures
            if f.status.state is not MeasurementStatus.RETRACTED
        )

    @property
    def uses_simulator(self) -> bool:
        return any(r.simulator for r in self.measurements.runs)
