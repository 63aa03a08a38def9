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

from servekit.package.load import LoadedPackage
from servekit.package.models import Figure, MeasurementStatus, Package, Provenance
from servekit.package.rules import CheckReport, FigureResult


class Badge(StrEnum):
    MEASURED = "measured"
    REPORTED = "reported"
    SIMULATOR = "simulator"
    REFUSED = "refused"


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


class Card(BaseModel):
    """Everything a catalog page shows about one package version."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    version: str
    status: str
    summary: str
    publisher: str
    published: dt.date | None
    proof_verified: dt.date | None
    engine: str
    hardware: str
    model: str
    weights: str
    accuracy_claim: str
    accuracy_method: str
    figures: tuple[CardFigure, ...]
    disclosures: tuple[tuple[str, str], ...]
    solved: tuple[str, ...]
    package_license: str
    model_license: str
    price: str
    tier: str
    maintenance: str
    checks_pass: bool
    violations: tuple[str, ...]


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


def _figure(fig: Figure, result: FigureResult) -> CardFigure:
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
    )


def _weights(pkg: Package) -> str:
    gb = pkg.model.total_bytes / 1e9
    return (
        f"about {gb:,.1f} GB in {pkg.model.shard_count} files, pulled by your node from "
        f"huggingface.co/{pkg.model.repo} at {pkg.model.commit[:12]}; the kit holds zero weight bytes"
    )


def build_card(loaded: LoadedPackage, report: CheckReport) -> Card:
    """The card of one package version (retracted figures are left off)."""
    pkg = loaded.package
    results = {r.id: r for r in report.figures}
    figures = tuple(_figure(f, results[f.id]) for f in pkg.published_figures)
    target = pkg.hardware.target
    maintenance = pkg.pricing.maintenance
    return Card(
        id=pkg.id,
        name=pkg.name,
        version=pkg.version,
        status=pkg.status.value,
        summary=pkg.summary,
        publisher=pkg.publisher,
        published=pkg.published,
        proof_verified=pkg.proof_verified,
        engine=f"{pkg.engine.name} {pkg.engine.version} ({pkg.engine.build.value} build)",
        hardware=f"{target.label}, {target.memory_per_gpu_gb:g} GB each, {target.interconnect}",
        model=f"{pkg.model.repo}@{pkg.model.commit[:12]}",
        weights=_weights(pkg),
        accuracy_claim=pkg.accuracy.claim,
        accuracy_method=pkg.accuracy.method.value.replace("_", " "),
        figures=figures,
        disclosures=tuple((d.title, d.text) for d in pkg.disclosures),
        solved=pkg.solved,
        package_license=f"{pkg.license.name} {pkg.license.version} ({pkg.license.date})",
        model_license=pkg.model.license.name,
        price=f"{pkg.pricing.usd:,.0f} USD, once",
        tier=pkg.pricing.tier.value,
        maintenance=(
            f"{maintenance.usd_per_year:,.0f} USD a year: always the latest verified version"
            if maintenance.available and maintenance.usd_per_year is not None
            else "not offered"
        ),
        checks_pass=report.ok,
        violations=tuple(f"{v.rule} {v.field}: {v.message}" for v in report.violations),
    )
