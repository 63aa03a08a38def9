"""Running every rule: the report of figures (with what servekit recomputed, the load it
achieved, its error rate and the rules that refuse it) and of violations."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from servekit.errors import ClaimRuleError, ClaimViolation
from servekit.package.load import LoadedPackage, load_package
from servekit.package.models import Figure, Provenance
from servekit.package.rules.context import Context
from servekit.package.rules.registry import RULES, Finding


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


@dataclass(frozen=True)
class FigureResult:
    """A published figure next to what servekit recomputed for it."""

    id: str
    label: str
    value: float
    unit: str
    provenance: Provenance
    status: str
    recomputed: float | None
    per_run: dict[str, float]
    source: str | None
    simulator: bool
    decimals: int = 0
    achieved_concurrency: dict[str, float] | None = None
    error_rate: float | None = None
    refused_by: tuple[str, ...] = ()
    metric: str = ""
    statistic: str = ""
    concurrency: int = 0
    scope: str | None = None
    workload: dict[str, object] | None = None

    @property
    def spread_pct(self) -> float | None:
        """(max - min) / mean of the per-run values, in percent (None under two runs)."""
        values = [v for v in self.per_run.values() if math.isfinite(v)]
        if len(values) < 2 or not sum(values):
            return None
        return (max(values) - min(values)) / (sum(values) / len(values)) * 100

    @property
    def display(self) -> str:
        """The value as published: rounded to the figure's decimals, with its unit."""
        if not math.isfinite(self.value):
            return f"{self.value} {self.unit}"
        return f"{self.value:.{self.decimals}f} {self.unit}"

    @property
    def verdict(self) -> str:
        """``refused`` when any rule refuses it, else its provenance (measured/reported)."""
        return "refused" if self.refused_by else self.provenance.value

    def as_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "label": self.label,
            "value": _finite(self.value),
            "unit": self.unit,
            "provenance": self.provenance.value,
            "verdict": self.verdict,
            "refused_by": list(self.refused_by),
            "status": self.status,
            "recomputed": _finite(self.recomputed),
            "per_run": {k: v for k, v in self.per_run.items() if math.isfinite(v)},
            "achieved_concurrency": self.achieved_concurrency,
            "error_rate": self.error_rate,
            "source": self.source,
            "simulator": self.simulator,
            "metric": self.metric,
            "statistic": self.statistic,
            "concurrency": self.concurrency,
            "scope": self.scope,
            "workload": self.workload,
            "spread_pct": _finite(self.spread_pct),
        }


@dataclass(frozen=True)
class CheckReport:
    package_id: str
    version: str
    figures: tuple[FigureResult, ...]
    violations: tuple[ClaimViolation, ...]
    cannot_verify: dict[str, tuple[str, ...]] | None = None

    @property
    def ok(self) -> bool:
        return not self.violations

    def as_dict(self) -> dict[str, object]:
        return {
            "package": self.package_id,
            "version": self.version,
            "ok": self.ok,
            "figures": [f.as_dict() for f in self.figures],
            "violations": [
                {
                    "rule": v.rule,
                    "name": RULES[v.rule].name,
                    "field": v.field,
                    "message": v.message,
                    "fix": v.fix,
                }
                for v in self.violations
            ],
            "cannot_verify": {k: list(v) for k, v in (self.cannot_verify or {}).items()},
        }


def _refusals(ctx: Context, findings: list[Finding]) -> dict[str, set[str]]:
    """Figure id -> ids of the rules that refuse it (named, or pointed at by field path)."""
    out: dict[str, set[str]] = {}
    for v in findings:
        named = set(v.figures)
        named |= {
            fid
            for fid, path in ctx.figure_fields.items()
            if v.field.startswith(path + ".") or v.field == path
        }
        for fid in named:
            out.setdefault(fid, set()).add(v.rule)
    return out


def _result(ctx: Context, f: Figure, refused: set[str]) -> FigureResult:
    per_run: dict[str, float] = {}
    achieved: dict[str, float] = {}
    if f.provenance is Provenance.MEASURED:
        for run_id in f.runs:
            got = ctx.recompute(f, run_id) if ctx.package.run(run_id) else None
            load = ctx.achieved(run_id, f.concurrency)
            if got is not None:
                per_run[run_id] = got
            if load is not None:
                achieved[run_id] = round(load, 3)
    primary = (
        ctx.summary(f.runs[0], f.concurrency) if f.runs and ctx.package.run(f.runs[0]) else None
    )
    total = primary.completed + primary.failed if primary else 0
    runs = [ctx.package.run(r) for r in f.runs]
    return FigureResult(
        id=f.id,
        label=f.label,
        value=f.value,
        decimals=f.decimals,
        unit=f.unit,
        provenance=f.provenance,
        status=f.status.state.value,
        recomputed=per_run.get(f.runs[0]) if f.runs else None,
        per_run=per_run,
        source=f"{f.source.name}, {f.source.date}" if f.source else None,
        simulator=any(r is not None and r.simulator for r in runs),
        achieved_concurrency=achieved or None,
        error_rate=round(primary.failed / total, 4) if primary and total else None,
        refused_by=tuple(sorted(refused)),
        metric=f.metric.value,
        statistic=f.statistic.value,
        concurrency=f.concurrency,
        scope=f.scope.value if f.scope else None,
        workload=_workload(ctx, f),
    )


def _workload(ctx: Context, f: Figure) -> dict[str, object] | None:
    """What the figure was measured on: API, prompt and output tokens, requests, warmup."""
    w = ctx.package.workload(f.measured_on.workload) if f.measured_on else None
    if w is None:
        return None
    return {
        "id": w.id,
        "api": w.api.value,
        "prompt_tokens": [w.prompt_tokens.min, w.prompt_tokens.max],
        "output_tokens": w.output_tokens,
        "requests": w.measured_requests,
        "warmup": w.warmup_requests,
    }


def check(loaded: LoadedPackage) -> CheckReport:
    """Run every claim rule; evidence errors (missing/malformed files) raise."""
    ctx = Context(loaded)
    findings = [v for r in sorted(RULES.values(), key=lambda r: r.id) for v in r.fn(ctx)]
    refused = _refusals(ctx, findings)
    unverifiable = {
        run.id: ev.unverifiable(ctx.engine_answers) for _, run, ev in ctx.runs_with_evidence()
    }
    cannot = {run_id: texts for run_id, texts in unverifiable.items() if texts}
    return CheckReport(
        package_id=loaded.package.id,
        version=loaded.package.version,
        figures=tuple(
            _result(ctx, f, refused.get(f.id, set())) for f in loaded.package.measurements.figures
        ),
        violations=tuple(findings),
        cannot_verify=cannot,
    )


def check_package(directory: Path) -> CheckReport:
    """Load the package directory and check it: every figure with its status and the
    violations. The one entry point for the verifier, the catalog and the store."""
    return check(load_package(directory))


def enforce(report: CheckReport) -> None:
    """Raise :class:`ClaimRuleError` if the report holds any violation."""
    if report.violations:
        raise ClaimRuleError(report.violations)
