"""The receipt: an in-toto Statement v1 and servekit's receipt predicate (v1).

Every section that repeats a part of ``package.yaml`` reuses that part's model, so the
predicate's field names and meanings are the package's (docs/package.md); the
sections servekit computes (serve argv, runs with digests, recomputed figures,
dates, the rules it ran) are defined here. docs/kit.md lists every field.
"""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, ConfigDict, Field

from servekit.package.models import (
    Accuracy,
    EnginePin,
    EnvVar,
    FigureStatus,
    GpuTarget,
    MeasuredOn,
    Metric,
    PackageStatus,
    Provenance,
    Scope,
    Source,
    Speedup,
    Statistic,
    Workload,
)


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class Subject(Frozen):
    """An in-toto ResourceDescriptor: a name and its digests (``{"sha256": hex}``)."""

    name: str
    digest: dict[str, str]


class PackageRef(Frozen):
    id: str
    name: str
    version: str
    status: PackageStatus
    publisher: str
    license: str = Field(description="The package licence id and version, e.g. 'x 1.0'.")


class ModelRef(Frozen):
    repo: str
    commit: str
    tree_digest: str
    total_bytes: int
    shard_count: int
    pin_file: str | None = Field(description="Kit path of the file-by-file pin, if shipped.")
    quantization: str | None
    quantized_by_publisher: bool
    license: str
    modifications: str


class ServeRecord(Frozen):
    """The exact process every deploy file starts: argv, the package's env, port, image."""

    argv: tuple[str, ...]
    env: tuple[EnvVar, ...]
    port: int
    served_model_name: str | None
    image: str


class RunRecord(Frozen):
    id: str
    file: str = Field(description="Kit path of the raw evidence file.")
    sha256: str
    workload: str
    simulator: bool
    date: dt.date


class FigureRecord(Frozen):
    """A published figure as the claim rules saw it, with what they recomputed."""

    id: str
    label: str
    metric: Metric
    statistic: Statistic
    concurrency: int
    value: float
    decimals: int
    unit: str
    scope: Scope | None
    provenance: Provenance
    status: FigureStatus
    measured_on: MeasuredOn | None
    runs: tuple[str, ...]
    recomputed: float | None
    per_run: dict[str, float]
    source: Source | None
    simulator: bool


class MeasurementDates(Frozen):
    published: dt.date | None
    proof_verified: dt.date | None
    first_run: dt.date | None
    last_run: dt.date | None


class RulesRecord(Frozen):
    """The claim rules the builder ran before signing (a kit is never built with violations)."""

    tool: str
    rules: tuple[str, ...]
    violations: int


class ReceiptPredicate(Frozen):
    """servekit receipt predicate v1 (``https://servekit.dev/receipt/v1``)."""

    package: PackageRef
    publisher_key_id: str
    engine: EnginePin
    serve: ServeRecord
    model: ModelRef
    hardware: GpuTarget
    workloads: tuple[Workload, ...]
    runs: tuple[RunRecord, ...]
    figures: tuple[FigureRecord, ...]
    speedups: tuple[Speedup, ...]
    accuracy: Accuracy
    measurement_dates: MeasurementDates
    simulator: bool = Field(description="True when any run measured servekit's simulator.")
    claim_rules: RulesRecord
    signed_at: dt.datetime | None = Field(
        default=None,
        description="When the receipt was signed (UTC, seconds); kit build always writes it, "
        "receipts from before it existed verify without it.",
    )


class Statement(Frozen):
    """in-toto Statement v1. Type strings are checked by the verifier, not here."""

    type: str = Field(alias="_type")
    subject: tuple[Subject, ...] = Field(min_length=1)
    predicate_type: str = Field(alias="predicateType")
    predicate: ReceiptPredicate
