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

from servekit.package.identifiers import GitCommit as GitCommit
from servekit.package.identifiers import Sha256Hex as Sha256Hex
from servekit.package.identifiers import TreeDigest as TreeDigest

SCHEMA_VERSION = 1

ShortCommit = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{7,40}$")]


def is_placeholder_commit(commit: str) -> bool:
    """True for an all-zero commit id (git's null id, e.g. forty ``0``): a value written
    where the real commit was not known, which ``servekit model pin`` replaces."""
    return set(commit) == {"0"}


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

    model_config = ConfigDict(
        frozen=True, extra="forbid", use_enum_values=False, use_attribute_docstrings=True
    )


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
            case Metric.OUTPUT_THROUGHPUT | Metric.TOTAL_TOKEN_THROUGHPUT:  # pragma: no branch
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
    WEIGHTS_SOURCE = "weights_source"
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
    """The licence section it comes from, e.g. '4(a)'."""
    summary: NonEmpty
    """The obligation in one sentence, e.g. 'Display "Built with Llama" in the product'."""
    threshold: str | None = Field(
        default=None, description="When it applies, e.g. 'above 20M USD revenue over 12 months'."
    )


class ModelLicense(Model):
    name: NonEmpty
    """The licence's name, e.g. 'Llama 3.1 Community License' or 'Apache 2.0'."""
    spdx: str | None = None
    """SPDX identifier when it has one, e.g. 'Apache-2.0'."""
    file: RelPath = Field(description="The licence text, shipped in the kit under licenses/.")
    copyright: str | None = None
    """The upstream copyright line, reproduced in the kit's model notice."""
    commercial_use: bool | None = None
    """Whether the licence allows commercial use; null when it depends on terms."""
    obligations: tuple[LicenseObligation, ...] = ()
    """Key obligations a deployer must meet, each with its section and threshold."""
    modifications: NonEmpty = Field(
        description="Statement of what the publisher changed in the model (e.g. 'none')."
    )


class ModalityComponent(Model):
    modality: Modality
    """text, vision, audio or video."""
    component: str | None = Field(default=None, description="e.g. 'MoonViT-V2 vision tower'.")
    parameters: int | None = Field(default=None, ge=0)
    """Parameters of that component, when published."""


class Parameters(Model):
    total: int = Field(ge=1)
    """Total parameters, e.g. 8030261248."""
    active: int | None = Field(default=None, ge=1, description="Active per token (MoE).")
    notes: str | None = None
    """How the count was taken, e.g. 'from the safetensors headers'."""


class ModelPin(Model):
    """The upstream model at an immutable Hugging Face commit."""

    repo: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9._-]+/[A-Za-z0-9._-]+$")]
    """Hugging Face repository, e.g. 'meta-llama/Llama-3.1-8B-Instruct'."""
    commit: GitCommit
    """The 40-hex commit the weights are pinned to (never a branch or tag)."""
    tree_digest: TreeDigest
    """sha256: and 64 hex over every file of that commit (see docs/digest.md)."""
    total_bytes: int = Field(ge=0)
    """Bytes of every file in the pinned tree."""
    shard_count: int = Field(ge=1, description="Number of weight files (safetensors shards).")
    files: RelPath | None = Field(
        default=None,
        description="Optional pin file (JSON) listing every file with size and sha256.",
    )
    parameters: Parameters
    """Total (and, for MoE, active) parameters."""
    modalities: tuple[ModalityComponent, ...] = Field(min_length=1)
    """Every modality the model accepts, each with its component."""
    context_length: int = Field(ge=1, description="Longest context the model supports.")
    gated: bool = False
    """True when the repository needs an accepted licence to download."""
    quantization: str | None = Field(
        default=None, description="Upstream weight format, e.g. 'MXFP4 (upstream QAT release)'."
    )
    quantized_by_publisher: bool = Field(
        default=False, description="True only if the publisher produced a quantized copy."
    )
    license: ModelLicense
    """The base model's licence: name, text file, obligations, modifications."""

    @property
    def placeholder_commit(self) -> bool:
        return is_placeholder_commit(self.commit)


# --- engine, serving, hardware -------------------------------------------------------


class EnginePin(Model):
    name: NonEmpty = Field(description="e.g. 'vllm'.")
    version: NonEmpty = Field(description="The exact version string the engine reports.")
    source_repo: NonEmpty = Field(description="e.g. 'vllm-project/vllm'.")
    source_commit: ShortCommit | None = Field(
        default=None, description="Commit the engine was built from (required for source builds)."
    )
    build: EngineBuild
    """wheel (an installed distribution) or source (built from source_commit)."""
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
    """Parts of the engine left out of the build, e.g. 'FlashInfer sampling kernels'."""
    binary_ships: bool = False
    """True when the kit ships an engine binary or image, not only the recipe."""
    recipe_executed: bool = Field(
        default=True, description="False if the build recipe has not yet been run end to end."
    )
    image: str | None = Field(
        default=None, description="Container image the deploy files run (built from the recipe)."
    )
    notes: str | None = None
    """Anything else about the build a deployer needs to know."""

    @property
    def placeholder_commit(self) -> bool:
        return self.source_commit is not None and is_placeholder_commit(self.source_commit)

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
    """Variable name, e.g. 'VLLM_ATTENTION_BACKEND'."""
    value: str
    """Its value, exactly as set, e.g. 'FLASHINFER'."""


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
    """Arguments after the model, in order, e.g. ['--tensor-parallel-size', '8']."""
    env: tuple[EnvVar, ...] = ()
    """Environment variables set for the server."""
    port: int = Field(default=8000, ge=1, le=65535)
    """The port the server listens on."""
    served_model_name: str | None = None
    """The model name clients send, when it differs from the repository."""
    model_dir: AbsPath | None = None
    """An absolute path the engine serves in place of model.repo at model.commit, for weights
    the publisher converted (a disclosure says how to make them): deploy files mount the
    operator's copy there read-only and pin no Hub revision. E.g. '/models/smollm2-135m-bf16'."""


class GpuTarget(Model):
    gpu: NonEmpty = Field(description="GPU model, e.g. 'B300'.")
    count: int = Field(ge=1, description="GPUs in total.")
    memory_per_gpu_gb: float = Field(gt=0)
    """Memory of one GPU in GB as the vendor states it, e.g. 288."""
    nodes: int = Field(default=1, ge=1)
    """Nodes the GPUs span (1 for a single node)."""
    interconnect: NonEmpty = Field(description="e.g. 'NVLink, single node'.")

    @property
    def label(self) -> str:
        return f"{self.count}x {self.gpu}"


class HardwareAlternative(Model):
    description: NonEmpty
    """Other hardware that also clears the floor, e.g. '8x H200 (141 GB)'."""
    measured: bool = False
    """True when the figures were also measured on it."""


class FloorAttempt(Model):
    hardware: NonEmpty
    """What was tried, e.g. '4x H100 80GB'."""
    configuration: NonEmpty
    """How it was served, e.g. 'TP=4, fp8 KV cache'."""
    outcome: NonEmpty
    """What happened, e.g. 'OOM while loading weights'."""
    reason: NonEmpty
    """Why it cannot work, e.g. 'weights need 92 GiB per GPU'."""
    evidence: RelPath | None = Field(
        default=None, description="The attempt's log or record (a failed attempt's proof)."
    )


class HardwareFloor(Model):
    weights_per_gpu_gib: float | None = Field(default=None, gt=0)
    """GiB of weights resident on each GPU once loaded."""
    free_gib: float | None = Field(default=None, gt=0)
    """GiB left free per GPU after loading, for the KV cache."""
    total_gib: float | None = Field(default=None, gt=0)
    """Total GiB per GPU the engine saw."""
    measured_on: str | None = Field(default=None, description="Hardware of the residency figure.")
    requirement: str | None = Field(default=None, description="The floor in words.")
    attempts: tuple[FloorAttempt, ...] = ()
    """Smaller configurations tried and why they failed."""


class Hardware(Model):
    target: GpuTarget
    """The hardware every figure was measured on."""
    alternatives: tuple[HardwareAlternative, ...] = ()
    """Other hardware that also clears the floor."""
    floor: HardwareFloor | None = None
    """The evidence for the least hardware that serves the model."""


# --- workloads and measurements --------------------------------------------------------


class TokenRange(Model):
    min: int = Field(ge=1)
    """Fewest tokens, e.g. 200."""
    max: int = Field(ge=1)
    """Most tokens (equal to min for a fixed length)."""
    counted_by: str = Field(default="server", description="Who counted: 'server' or a tokenizer.")

    @model_validator(mode="after")
    def _ordered(self) -> TokenRange:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) is larger than max ({self.max})")
        return self


class Workload(Model):
    id: Identifier
    """Stable id that runs and figures refer to, e.g. 'chat-200'."""
    description: NonEmpty
    """The workload in words, e.g. '200-token prompts, 64-token answers'."""
    dataset: NonEmpty
    """Where prompts came from, e.g. 'synthetic (servekit bench run, seed 0)'."""
    api: Api = Api.COMPLETIONS
    """completions (/v1/completions) or chat (/v1/chat/completions)."""
    modalities: tuple[Modality, ...] = (Modality.TEXT,)
    """The modalities the requests exercised."""
    prompt_tokens: TokenRange
    """Prompt lengths sent, and who counted the tokens."""
    output_tokens: int = Field(ge=1)
    """Output tokens asked for per request."""
    concurrencies: tuple[int, ...] = Field(min_length=1)
    """Concurrent requests measured, e.g. [1, 8, 64]."""
    warmup_requests: int = Field(ge=0)
    """Requests sent and discarded before measuring each concurrency."""
    measured_requests: int = Field(ge=1, description="Measured requests per concurrency per run.")
    seed: int
    """Seed of the prompt generator, so the run can be repeated."""
    context_length: int = Field(ge=1, description="The engine's max model length in the runs.")


class FigureStatus(Model):
    state: MeasurementStatus = MeasurementStatus.CURRENT
    """current, re-run (superseded by a later measurement) or retracted."""
    reason: str | None = None
    """Why it was re-run or retracted (required unless current)."""
    date: dt.date | None = None
    """When it was re-run or retracted (required unless current)."""

    @model_validator(mode="after")
    def _retraction_needs_reason(self) -> FigureStatus:
        if self.state is not MeasurementStatus.CURRENT and (not self.reason or not self.date):
            raise ValueError(f"a figure in state '{self.state}' needs a reason and a date")
        return self


class ServeRecord(Model):
    """The serve configuration a run ran with, for evidence that does not record it (v1)."""

    argv: tuple[NonEmpty, ...] = Field(min_length=1)
    """The server's full argument vector, e.g. ['vllm', 'serve', 'org/model', '--port', '8000']."""
    env: tuple[EnvVar, ...] = ()
    """Environment variables it ran with."""


class Run(Model):
    """One benchmark run: a raw evidence file of per-request records."""

    id: Identifier
    """Stable id that figures refer to, e.g. 'run-a'."""
    file: RelPath
    """The run's evidence file (JSON Lines), e.g. 'evidence/run-a.jsonl'; one file per run."""
    workload: Identifier
    """The workload id this run measured."""
    simulator: bool = Field(
        default=False, description="True when the engine was servekit's simulator, not a real one."
    )
    date: dt.date
    """When the run was measured."""
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
    """Output tokens per request, as the source states."""
    concurrency: int | None = Field(default=None, ge=1)
    """Concurrent requests, as the source states."""
    requests: int | None = Field(default=None, ge=1)
    """Measured requests, as the source states."""
    warmup: int | None = Field(default=None, ge=0)
    """Warmup requests, as the source states."""
    prompt_tokens: TokenRange | None = None
    """Prompt lengths, as the source states."""
    modalities: tuple[Modality, ...] | None = None
    """What the source's requests carried, as it states, e.g. [text]; a modality no source
    states and no record carried needs a modality disclosure (SK112)."""


class Source(Model):
    """Where a reported figure comes from."""

    name: NonEmpty
    """Who reported the figure, e.g. 'vLLM blog'."""
    reference: NonEmpty = Field(description="URL, document or file name.")
    date: dt.date
    """When the source was published."""
    workload: SourceWorkload | None = Field(
        default=None, description="The workload the source states (output tokens, concurrency...)."
    )


class MeasuredOn(Model):
    engine: NonEmpty = Field(description="Engine version string, must equal engine.version.")
    hardware: NonEmpty = Field(description="e.g. '8x B300', must equal the hardware target.")
    workload: Identifier
    """The workload id the figure was measured on."""


class Figure(Model):
    """One published number, and how to recompute it."""

    id: Identifier
    """Stable id, e.g. 'e2el-p50-c8'."""
    label: NonEmpty
    """What the card prints, e.g. 'Latency p50'."""
    metric: Metric
    """ttft, tpot, itl, e2el, request_throughput, output_throughput or total_token_throughput."""
    statistic: Statistic
    """mean, median, p50, p90, p95, p99, or value (throughputs)."""
    concurrency: int = Field(ge=1)
    """The concurrency it was measured at."""
    value: float
    """The published number, in the metric's unit (ms, req/s or tok/s); recomputed from the runs."""
    decimals: int = Field(default=0, ge=0, le=6, description="Rounding of the published value.")
    scope: Scope | None = Field(default=None, description="Throughputs: per_gpu or node.")
    provenance: Provenance
    """measured (runs here) or reported (a source elsewhere)."""
    measured_on: MeasuredOn | None = None
    """Engine, hardware and workload, checked against the package."""
    runs: tuple[Identifier, ...] = Field(
        default=(), description="Measured: the run it is computed from, then replicate runs."
    )
    source: Source | None = None
    """Reported figures: who reported it, where and when."""
    status: FigureStatus = FigureStatus()
    """current, re-run or retracted; retracted figures stay as history."""
    on_card: bool = Field(default=False, description="Shown as a headline on the catalog card.")

    @property
    def unit(self) -> str:
        return self.metric.unit


class Speedup(Model):
    """A claimed improvement of a figure over a stock baseline figure."""

    id: Identifier
    """Stable id, e.g. 'tpot-vs-stock'."""
    figure: Identifier
    """The improved figure's id."""
    baseline: Identifier
    """The baseline figure's id (same metric, statistic and workload)."""
    value_pct: float
    """The claimed improvement in percent, recomputed from the two figures."""
    baseline_is_stock: bool
    """True when the baseline is the engine's stock configuration."""


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
    """Every run, one evidence file each, retracted ones included."""
    figures: tuple[Figure, ...] = ()
    """Every published number, retracted ones included."""
    speedups: tuple[Speedup, ...] = ()
    """Claimed improvements over a baseline."""
    notes: str | None = None
    """Anything else a reader of the figures needs."""


# --- accuracy ---------------------------------------------------------------------


class Control(Model):
    """A control experiment, e.g. two identical servers compared with each other."""

    name: NonEmpty
    """The control's name, e.g. 'two identical servers'."""
    kind: str = Field(description="e.g. 'same_server_agreement'.")
    value_pct: float | None = None
    """What the control measured, in percent."""
    evidence: RelPath | None = None
    """Its raw evidence file, e.g. 'evidence/control-a.jsonl'."""
    shows_method_unsound: bool = False
    """True when the control shows the method cannot support the claim."""
    description: NonEmpty
    """What was compared and what the result means."""


class AgreementScore(Model):
    value_pct: float
    """Agreement in percent."""
    informational: bool
    """True when it is shown for information, not as a gate."""
    description: NonEmpty
    """What was compared, e.g. 'greedy outputs of two servers'."""


class Accuracy(Model):
    method: AccuracyMethod
    """by_construction, measured, not_measured or not_applicable."""
    claim: NonEmpty = Field(description="What is claimed, e.g. served-output parity.")
    methodology: NonEmpty
    """How the claim was checked, step by step."""
    weights_modified: bool
    """True when the served weights differ from the pinned upstream ones."""
    runtime_stages_applied: tuple[NonEmpty, ...] = ()
    """Runtime changes that could alter outputs, e.g. 'fp8 KV cache'."""
    metric: str | None = None
    """The accuracy metric, e.g. 'GSM8K exact match'."""
    baseline: float | None = None
    """The metric on the stock configuration."""
    optimized: float | None = None
    """The metric on this configuration."""
    recovery_pct: float | None = None
    """optimized / baseline in percent."""
    delta: float | None = None
    """optimized - baseline."""
    absent_reason: str | None = Field(
        default=None, description="Why baseline/optimized/recovery are not published."
    )
    controls: tuple[Control, ...] = ()
    """Control experiments that bound the method's noise."""
    cross_server_agreement: AgreementScore | None = None
    """Agreement between servers, when compared."""
    gate: GateResult
    """passed, failed or not_run."""
    calibration: str | None = None
    """How the gate's threshold was set."""


# --- disclosures, money, licences ----------------------------------------------------------


class Disclosure(Model):
    topic: DisclosureTopic
    """modality, context, safety, accuracy, engine_build, peak_memory, hardware, speedup, evidence, simulator, output_length, warmup, reported_workload, weights_source (the served weights do not come from the Hugging Face Hub at model.commit) or other."""
    subject: str | None = Field(
        default=None, description="What it covers, e.g. 'vision' for a modality disclosure."
    )
    title: NonEmpty
    """One line, e.g. 'Vision not measured'."""
    text: NonEmpty
    """What was not measured or may differ, and why."""


class PeakMemory(Model):
    published: bool
    """True when a peak memory figure is published."""
    value_gib: float | None = None
    """Peak GPU memory in GiB."""
    source: MemorySource | None = None
    """engine_preallocation (what the engine reserves) or measured_profile."""
    note: str | None = None
    """Why none is published, or how it was taken."""


class HourlyRate(Model):
    usd_per_node_hour: float = Field(gt=0)
    """Price of one node-hour in USD, e.g. 98.32."""
    source: NonEmpty
    """Where the price comes from, e.g. a provider's price page."""
    date: dt.date
    """When the price was read."""
    covers_whole_node: bool
    """True when the price is for the whole node the figures ran on."""


class CostBasis(Model):
    as_of: dt.date
    """The date the cost figures hold for."""
    node_hourly_rate: HourlyRate | None = None
    """The sourced, dated price of a node-hour."""
    usd_per_million_output_tokens: float | None = None
    """Cost per million output tokens, from the rate and the throughput figure."""
    throughput_figure: Identifier | None = Field(
        default=None, description="The node-aggregate output throughput the cost divides by."
    )
    note: NonEmpty
    """How the cost was derived, or why none is published."""


class PackageLicense(Model):
    id: Identifier
    """Licence id, e.g. 'servekit-recipe'."""
    name: NonEmpty
    """Licence name, e.g. 'servekit recipe licence'."""
    version: NonEmpty
    """Licence version, e.g. '1.0'."""
    date: dt.date
    """Licence date."""
    file: RelPath
    """The licence text, e.g. 'licenses/PACKAGE_LICENSE.md'."""
    summary: str | None = None
    """The licence in one or two sentences."""


class Maintenance(Model):
    available: bool = True
    """True when maintenance (re-runs on new engine versions) is offered."""
    usd_per_year: float | None = Field(default=None, ge=0)
    """Its yearly price in USD."""


class Pricing(Model):
    usd: float = Field(ge=0)
    """The package's price in USD (0 for free)."""
    tier: Tier
    """standard or enterprise."""
    maintenance: Maintenance = Maintenance()
    """Whether maintenance is offered, and its price."""


class RoadmapItem(Model):
    version: NonEmpty
    """The planned version, e.g. '1.1.0'."""
    trigger: NonEmpty
    """What starts it, e.g. 'vLLM 0.12 release'."""
    plan: NonEmpty
    """What it will change or measure."""


# --- the package --------------------------------------------------------------------


class Package(Model):
    """A recipe package version: the single source of truth for every number shown."""

    schema_version: int = Field(default=SCHEMA_VERSION, ge=1, le=SCHEMA_VERSION)
    """Version of this format; 1."""
    id: Identifier
    """Stable package id, e.g. 'llama-3.1-8b-h100'."""
    name: NonEmpty
    """Display name, e.g. 'Llama 3.1 8B on one H100'."""
    version: Annotated[str, StringConstraints(pattern=r"^\d+\.\d+\.\d+([.-][0-9A-Za-z.]+)?$")]
    """Semantic version of this package, e.g. '1.0.0'."""
    status: PackageStatus
    """draft, published or superseded."""
    summary: NonEmpty
    """One or two sentences for the catalog card."""
    publisher: NonEmpty
    """Who publishes it; must equal the publisher a trust grant names."""
    published: dt.date | None = None
    """Date of publication (required once published)."""
    proof_verified: dt.date | None = None
    """Date the evidence was last checked end to end."""
    model: ModelPin
    """The upstream model at an immutable commit."""
    engine: EnginePin
    """The serving engine's exact build."""
    serve: Serve
    """The exact serve command every deploy file runs."""
    hardware: Hardware
    """The target hardware and the evidence for its floor."""
    workloads: tuple[Workload, ...] = Field(min_length=1)
    """The measured workloads."""
    measurements: Measurements
    """Runs, figures and speedups."""
    accuracy: Accuracy
    """The accuracy claim and how it was checked."""
    disclosures: tuple[Disclosure, ...] = ()
    """What was not measured, or may differ for a buyer."""
    peak_memory: PeakMemory
    """Whether a peak memory figure is published, and from what source."""
    cost: CostBasis
    """The cost basis: a sourced, dated hourly rate, or why none is published."""
    license: PackageLicense
    """The package's own licence."""
    pricing: Pricing
    """Price and tier."""
    roadmap: tuple[RoadmapItem, ...] = ()
    """Planned versions and what triggers them."""
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

    @property
    def weights_from_hub(self) -> bool:
        """Whether a deployer's node pulls the served weights from the Hugging Face Hub at
        ``model.commit``: not when the engine serves converted weights (``serve.model_dir``)
        or a ``weights_source`` disclosure says where they come from instead."""
        return self.serve.model_dir is None and not any(
            d.topic is DisclosureTopic.WEIGHTS_SOURCE for d in self.disclosures
        )
