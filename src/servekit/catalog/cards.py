"""Catalog cards, built from the package definition and its check report, never typed twice.

Every number on a card is read from ``package.yaml`` at build time, next to what the claim
rules recomputed for it. Retract or re-run a measurement and the card changes with it. A
reported figure is labelled with its source; a simulator figure says so; a figure any claim
rule refuses is badged refused, with its rule ids, never measured.
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from servekit.errors import Error
from servekit.fit import PackageFit, package_fit
from servekit.fit.models import GIB
from servekit.package.load import LoadedPackage
from servekit.package.models import (
    DisclosureTopic,
    Figure,
    MeasurementStatus,
    Package,
    PackageStatus,
    Provenance,
    Scope,
)
from servekit.package.rules import CheckReport, FigureResult
from servekit.weights.package import package_pin_of


class Badge(StrEnum):
    MEASURED = "measured"
    REPORTED = "reported"
    SIMULATOR = "simulator"
    REFUSED = "refused"


class Link(BaseModel):
    """Where a figure's proof lives: a raw evidence file in the package, or an outside source.

    ``href`` is set only for a package-relative file or an ``http(s)`` URL, so a hostile
    ``javascript:`` reference is shown as text and never becomes a link.
    """

    model_config = ConfigDict(frozen=True)

    text: str
    path: str | None = None
    url: str | None = None


class CardFigure(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    label: str
    display: str
    context: str
    badge: Badge
    badge_text: str
    status: MeasurementStatus
    headline: bool
    metric: str
    statistic: str
    concurrency: int
    value: float
    unit: str
    per_gpu: bool
    workload: str
    """The id of the workload the figure was measured on ("" when the package names none)."""
    proof: tuple[Link, ...]


class Card(BaseModel):
    """Everything a catalog page shows about one package version."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    version: str
    status: str
    draft: bool
    """A draft is shown for review and is never for sale."""
    summary: str
    publisher: str
    published: dt.date | None
    proof_verified: dt.date | None
    engine: str
    engine_commit: str | None
    """The engine's source commit exactly as the package gives it, never shortened."""
    hardware: str
    model: str
    model_commit: str
    """The full 40-hex commit the weights are pinned to."""
    weights: str
    weights_files: str
    """How many files the weights are, counted from the pin file when there is one."""
    warnings: tuple[str, ...]
    """Placeholder commits and other reasons the package cannot be used as it stands."""
    accuracy_claim: str
    accuracy_method: str
    figures: tuple[CardFigure, ...]
    concurrencies: tuple[int, ...] = ()
    """Every concurrency the package measured (its workloads) or named a figure at,
    retracted figures included: a chart's line never crosses one its series lacks."""
    disclosures: tuple[tuple[str, str], ...]
    solved: tuple[str, ...]
    package_license: str
    model_license: str
    price: str
    price_usd: float = 0.0
    tier: str
    maintenance: str
    checks_pass: bool
    violations: tuple[str, ...]
    gpu: str
    engine_name: str
    model_repo: str
    accuracy_gate: str
    floor_measured: str = "not measured"
    floor_predicted: str = "no prediction"


def _badge(fig: Figure, result: FigureResult) -> tuple[Badge, str]:
    if result.refused_by:
        rules = ", ".join(result.refused_by)
        return Badge.REFUSED, f"refused by claim rule {rules}: not carried by its evidence"
    if fig.provenance is Provenance.REPORTED:
        source = fig.source.name if fig.source else "an unnamed source"
        return Badge.REPORTED, f"reported by {source}; not measured by servekit"
    if result.simulator:
        return Badge.SIMULATOR, "measured against servekit's simulator, not a real engine"
    runs = len(result.per_run)
    return Badge.MEASURED, f"recomputed from raw records ({runs} run{'s' if runs != 1 else ''})"


def _proof(pkg: Package, fig: Figure) -> tuple[Link, ...]:
    if fig.provenance is Provenance.REPORTED:
        if fig.source is None:
            return ()
        ref = fig.source.reference
        url = ref if ref.startswith(("https://", "http://")) else None
        return (Link(text=f"{fig.source.name}: {ref} ({fig.source.date})", url=url),)
    runs = (pkg.run(run_id) for run_id in fig.runs)
    return tuple(Link(text=f"raw records of run {r.id}", path=r.file) for r in runs if r)


def figure_workload(pkg: Package, fig: Figure) -> str | None:
    """The id of the workload a figure was measured on: its own, else its first run's."""
    if fig.measured_on is not None:
        return fig.measured_on.workload
    run = pkg.run(fig.runs[0]) if fig.runs else None
    return run.workload if run else None


def _concurrencies(pkg: Package) -> tuple[int, ...]:
    found = {f.concurrency for f in pkg.measurements.figures}
    found.update(c for w in pkg.workloads for c in w.concurrencies)
    return tuple(sorted(found))


def _figure(pkg: Package, fig: Figure, result: FigureResult) -> CardFigure:
    badge, text = _badge(fig, result)
    scope = f", {fig.scope.value.replace('_', ' ')}" if fig.scope else ""
    if result.achieved_concurrency:
        scope += f" (achieved {min(result.achieved_concurrency.values()):.2f})"
    if result.error_rate is not None:
        scope += f", {result.error_rate * 100:.1f} % errors"
    return CardFigure(
        id=fig.id,
        label=fig.label,
        display=result.display,
        context=f"concurrency {fig.concurrency}{scope}",
        badge=badge,
        badge_text=text,
        status=fig.status.state,
        headline=fig.on_card,
        metric=fig.metric.value,
        statistic=fig.statistic.value,
        concurrency=fig.concurrency,
        value=fig.value,
        unit=fig.unit,
        per_gpu=fig.scope is Scope.PER_GPU,
        workload=figure_workload(pkg, fig) or "",
        proof=_proof(pkg, fig),
    )


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _weights_files(loaded: LoadedPackage) -> str:
    """The file count of the pinned tree, from the pin file when the package has one."""
    model = loaded.package.model
    shards = _plural(model.shard_count, "weight shard")
    if model.files is None:
        return f"{shards} (no per-file pin, so other files of the tree are not counted)"
    try:
        text = loaded.path(model.files).read_text(encoding="utf-8")
        pin = package_pin_of(model, text, model.files)
    except (Error, OSError, UnicodeDecodeError):
        return f"{shards} (the pin file {model.files} does not agree with package.yaml)"
    return f"{_plural(len(pin.files), 'file')} ({shards}), as pinned in {model.files}"


def _size(total_bytes: int) -> str:
    if total_bytes < 100_000_000:
        return _plural(total_bytes, "byte")
    return f"about {total_bytes / 1e9:,.1f} GB"


def _weights(pkg: Package, files: str) -> str:
    where = f"{_size(pkg.model.total_bytes)} in {files}"
    if not pkg.weights_from_hub:
        return f"{where}; not pulled from the Hugging Face Hub: {_weights_source(pkg)}"
    return (
        f"{where}, pulled by your node from huggingface.co/{pkg.model.repo} at commit "
        f"{pkg.model.commit}; the kit holds zero weight bytes"
    )


def _weights_source(pkg: Package) -> str:
    """Where the served weights come from instead of the Hub, in the package's own words."""
    parts = [
        f'see the disclosure "{d.title}"'
        for d in pkg.disclosures
        if d.topic is DisclosureTopic.WEIGHTS_SOURCE
    ]
    if pkg.serve.model_dir is not None:
        parts.insert(0, f"the engine serves {pkg.serve.model_dir}, a directory you provide")
    return "; ".join(parts) + "; the kit holds zero weight bytes"


def _warnings(pkg: Package) -> tuple[str, ...]:
    warnings = []
    if pkg.status is PackageStatus.DRAFT:
        warnings.append("Draft: shown for review only, and not for sale.")
    if pkg.model.placeholder_commit:
        warnings.append(
            f"The model commit {pkg.model.commit} is a placeholder, not a real commit of "
            f"{pkg.model.repo}: re-pin it with `servekit model pin` before deploying."
        )
    if pkg.engine.placeholder_commit:
        warnings.append(
            f"The engine source commit {pkg.engine.source_commit} is a placeholder, not a "
            f"commit of {pkg.engine.source_repo}: the build recipe cannot be reproduced."
        )
    return tuple(warnings)


def _floor_measured(pkg: Package) -> str:
    floor = pkg.hardware.floor
    if floor is None or floor.weights_per_gpu_gib is None:
        return "not measured"
    where = f" on {floor.measured_on}" if floor.measured_on else ""
    return f"{floor.weights_per_gpu_gib:.2f} GiB of weights per GPU{where}"


def _floor_predicted(fit: PackageFit | None) -> str:
    if fit is None:
        return "no prediction: the package carries no model/config.json"
    r = fit.result
    text = (
        f"{r.weights_bytes_per_gpu / GIB:.2f} GiB of weights per GPU ({r.basis.value} basis); "
        f"on {r.gpu.name}: {'fits' if r.fits else 'does not fit'}, "
        f"margin {r.margin_bytes / GIB:+.2f} GiB per GPU"
    )
    return text + (
        f". Contradicts the measured floor: {fit.contradiction}" if fit.contradiction else ""
    )


def build_card(loaded: LoadedPackage, report: CheckReport) -> Card:
    """The card of one package version (retracted figures are left off)."""
    pkg = loaded.package
    files = _weights_files(loaded)
    results = {r.id: r for r in report.figures}
    figures = tuple(_figure(pkg, f, results[f.id]) for f in pkg.published_figures)
    target = pkg.hardware.target
    maintenance = pkg.pricing.maintenance
    return Card(
        id=pkg.id,
        name=pkg.name,
        version=pkg.version,
        status=pkg.status.value,
        draft=pkg.status is PackageStatus.DRAFT,
        summary=pkg.summary,
        publisher=pkg.publisher,
        published=pkg.published,
        proof_verified=pkg.proof_verified,
        engine=f"{pkg.engine.name} {pkg.engine.version} ({pkg.engine.build.value} build)",
        engine_commit=pkg.engine.source_commit,
        hardware=f"{target.label}, {target.memory_per_gpu_gb:g} GB each, {target.interconnect}",
        model=f"{pkg.model.repo}@{pkg.model.commit}",
        model_commit=pkg.model.commit,
        weights=_weights(pkg, files),
        weights_files=files,
        warnings=_warnings(pkg),
        accuracy_claim=pkg.accuracy.claim,
        accuracy_method=pkg.accuracy.method.value.replace("_", " "),
        figures=figures,
        concurrencies=_concurrencies(pkg),
        disclosures=tuple((d.title, d.text) for d in pkg.disclosures),
        solved=pkg.solved,
        package_license=f"{pkg.license.name} {pkg.license.version} ({pkg.license.date})",
        model_license=pkg.model.license.name,
        price=f"{pkg.pricing.usd:,.0f} USD, once",
        price_usd=pkg.pricing.usd,
        tier=pkg.pricing.tier.value,
        maintenance=(
            f"{maintenance.usd_per_year:,.0f} USD a year, added to a bought version: each newer verified version while it runs"
            if maintenance.available and maintenance.usd_per_year is not None
            else "not offered"
        ),
        checks_pass=report.ok,
        violations=tuple(f"{v.rule} {v.field}: {v.message}" for v in report.violations),
        floor_measured=_floor_measured(pkg),
        floor_predicted=_floor_predicted(package_fit(loaded)),
        gpu=target.gpu,
        engine_name=pkg.engine.name,
        model_repo=pkg.model.repo,
        accuracy_gate=pkg.accuracy.gate.value.replace("_", " "),
    )
