"""Build the receipt statement of a kit from its package, claim-rule report and files."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

from servekit import __version__
from servekit.package.files import evidence_kit_path
from servekit.package.models import Figure, Package
from servekit.package.rules import RULES, CheckReport, FigureResult
from servekit.receipts.canonical import canonical_json
from servekit.receipts.formats import (
    DIGEST_ALGORITHM,
    PAYLOAD_TYPE,
    PREDICATE_TYPE,
    STATEMENT_TYPE,
    kit_subject_name,
    model_subject_name,
    tree_digest_hex,
)
from servekit.receipts.models import (
    FigureRecord,
    MeasurementDates,
    ModelRef,
    PackageRef,
    ReceiptPredicate,
    RulesRecord,
    RunRecord,
    ServeRecord,
    Statement,
    Subject,
)

__all__ = [
    "PAYLOAD_TYPE",
    "ReceiptInputs",
    "build_statement",
    "evidence_files",
    "figure_records",
    "statement_bytes",
]


@dataclass(frozen=True)
class ReceiptInputs:
    """What a receipt is made from; ``digests`` maps kit paths to hex sha256."""

    package: Package
    report: CheckReport
    serve: ServeRecord
    kit_digest: str
    digests: Mapping[str, str]
    key_id: str
    pin_file: str | None
    signed_at: dt.datetime


def evidence_files(package: Package) -> tuple[str, ...]:
    """Kit paths of every evidence file the package names (runs and controls), sorted."""
    files = {evidence_kit_path(r.file) for r in package.measurements.runs}
    files |= {evidence_kit_path(c.evidence) for c in package.accuracy.controls if c.evidence}
    return tuple(sorted(files))


def _subjects(inputs: ReceiptInputs) -> tuple[Subject, ...]:
    pkg = inputs.package
    kit = Subject(
        name=kit_subject_name(pkg.id, pkg.version), digest={DIGEST_ALGORITHM: inputs.kit_digest}
    )
    model = Subject(
        name=model_subject_name(pkg.model.repo, pkg.model.commit),
        digest={DIGEST_ALGORITHM: tree_digest_hex(pkg.model.tree_digest)},
    )
    evidence = tuple(
        Subject(name=path, digest={DIGEST_ALGORITHM: inputs.digests[path]})
        for path in evidence_files(pkg)
    )
    return (kit, model, *evidence)


def _figure(fig: Figure, result: FigureResult) -> FigureRecord:
    return FigureRecord(
        id=fig.id,
        label=fig.label,
        metric=fig.metric,
        statistic=fig.statistic,
        concurrency=fig.concurrency,
        value=fig.value,
        decimals=fig.decimals,
        unit=fig.unit,
        scope=fig.scope,
        provenance=fig.provenance,
        status=fig.status,
        measured_on=fig.measured_on,
        runs=fig.runs,
        recomputed=result.recomputed,
        per_run=dict(sorted(result.per_run.items())),
        source=fig.source,
        simulator=result.simulator,
    )


def figure_records(package: Package, report: CheckReport) -> tuple[FigureRecord, ...]:
    """Each published figure with what the claim rules recomputed for it (builder and verifier)."""
    results = {r.id: r for r in report.figures}
    return tuple(_figure(f, results[f.id]) for f in package.measurements.figures)


def _runs(inputs: ReceiptInputs) -> tuple[RunRecord, ...]:
    return tuple(
        RunRecord(
            id=r.id,
            file=evidence_kit_path(r.file),
            sha256=inputs.digests[evidence_kit_path(r.file)],
            workload=r.workload,
            simulator=r.simulator,
            date=r.date,
        )
        for r in inputs.package.measurements.runs
    )


def _model(package: Package, pin_file: str | None) -> ModelRef:
    m = package.model
    return ModelRef(
        repo=m.repo,
        commit=m.commit,
        tree_digest=m.tree_digest,
        total_bytes=m.total_bytes,
        shard_count=m.shard_count,
        pin_file=pin_file,
        quantization=m.quantization,
        quantized_by_publisher=m.quantized_by_publisher,
        license=m.license.name,
        modifications=m.license.modifications,
    )


def _dates(package: Package) -> MeasurementDates:
    run_dates = sorted(r.date for r in package.measurements.runs)
    return MeasurementDates(
        published=package.published,
        proof_verified=package.proof_verified,
        first_run=run_dates[0] if run_dates else None,
        last_run=run_dates[-1] if run_dates else None,
    )


def _package_ref(package: Package) -> PackageRef:
    return PackageRef(
        id=package.id,
        name=package.name,
        version=package.version,
        status=package.status,
        publisher=package.publisher,
        license=f"{package.license.id} {package.license.version}",
    )


def _predicate(inputs: ReceiptInputs) -> ReceiptPredicate:
    pkg = inputs.package
    return ReceiptPredicate(
        package=_package_ref(pkg),
        publisher_key_id=inputs.key_id,
        engine=pkg.engine,
        serve=inputs.serve,
        model=_model(pkg, inputs.pin_file),
        hardware=pkg.hardware.target,
        workloads=pkg.workloads,
        runs=_runs(inputs),
        figures=figure_records(pkg, inputs.report),
        speedups=pkg.measurements.speedups,
        accuracy=pkg.accuracy,
        measurement_dates=_dates(pkg),
        simulator=pkg.uses_simulator,
        claim_rules=RulesRecord(
            tool=f"servekit {__version__}",
            rules=tuple(RULES),
            violations=len(inputs.report.violations),
        ),
        signed_at=inputs.signed_at,
    )


def build_statement(inputs: ReceiptInputs) -> Statement:
    """The in-toto statement for a kit: subjects and the servekit predicate."""
    return Statement(
        type=STATEMENT_TYPE,
        subject=_subjects(inputs),
        predicate_type=PREDICATE_TYPE,
        predicate=_predicate(inputs),
    )


def statement_bytes(statement: Statement) -> bytes:
    """The statement as RFC 8785 canonical JSON: the exact bytes that are signed."""
    return canonical_json(statement.model_dump(mode="json", by_alias=True))
