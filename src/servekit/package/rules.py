"""Claim rules: every published figure must be carried by the package's evidence.

Each rule has a stable id (``SK1xx``), a name and a one-line statement; docs/rules.md
documents every one. :func:`check` recomputes every measured figure from the raw
records and returns a :class:`CheckReport`; :func:`enforce` raises
:class:`~servekit.errors.ClaimRuleError` when it holds any violation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property

from servekit.errors import ClaimRuleError, ClaimViolation
from servekit.package.evidence import Evidence, load_evidence
from servekit.package.load import LoadedPackage
from servekit.package.models import (
    AccuracyMethod,
    DisclosureTopic,
    Figure,
    MemorySource,
    Metric,
    Modality,
    Package,
    Provenance,
    Scope,
    Statistic,
)
from servekit.package.stats import GroupSummary, figure_value, summarize


@dataclass(frozen=True)
class Rule:
    id: str
    name: str
    statement: str


RULES: dict[str, Rule] = {
    r.id: r
    for r in (
        Rule(
            "SK101",
            "measured-recomputes",
            "A measured figure equals its recomputation from the raw records, within its stated rounding.",
        ),
        Rule(
            "SK102",
            "measured-needs-records",
            "A figure with no raw per-request records cannot be published as measured.",
        ),
        Rule(
            "SK103",
            "reported-needs-source",
            "A reported figure names its external source and date, and carries no runs of its own.",
        ),
        Rule(
            "SK104",
            "runs-agree",
            "Repeated runs of one configuration agree within the package's declared tolerance.",
        ),
        Rule(
            "SK105",
            "throughput-scope",
            "A throughput says per GPU or node aggregate, and aggregate = per GPU x GPU count.",
        ),
        Rule(
            "SK106",
            "speedup-baseline",
            "A speedup needs a stock baseline on the same workload, engine and hardware, and clears the improvement contract.",
        ),
        Rule(
            "SK107",
            "accuracy-recovery",
            "Accuracy recovery and delta only when both a baseline and an optimized score exist, and they match them.",
        ),
        Rule(
            "SK108",
            "by-construction",
            "'By construction' only when no weight byte changed and no kernel or runtime stage is applied.",
        ),
        Rule(
            "SK109",
            "agreement-informational",
            "A cross-server agreement score is informational only when a same-server control shows the method unsound.",
        ),
        Rule(
            "SK110",
            "peak-memory-source",
            "Peak memory is never published from an engine's preallocation figure.",
        ),
        Rule(
            "SK111",
            "cost-basis",
            "A cost per token needs a sourced, dated node hourly rate over the whole node, and equals its recomputation.",
        ),
        Rule(
            "SK112",
            "modality-disclosure",
            "A modality the model has but no workload exercised has a disclosure.",
        ),
        Rule(
            "SK113",
            "context-disclosure",
            "A supported context longer than the workloads covered has a disclosure.",
        ),
        Rule(
            "SK114",
            "figure-attribution",
            "Every figure names the engine build, hardware and workload it was measured on, and they match the package.",
        ),
        Rule(
            "SK115",
            "grid-coverage",
            "A run holds exactly the workload's warmup and measured requests at the figure's concurrency, on the declared GPUs.",
        ),
        Rule(
            "SK116",
            "clean-runs",
            "Runs backing a measured figure have no failed requests and no output-length mismatches.",
        ),
        Rule(
            "SK117",
            "simulator-disclosure",
            "Figures measured against servekit's simulator are disclosed as such.",
        ),
    )
}


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

    @property
    def display(self) -> str:
        """The value as published: rounded to the figure's decimals, with its unit."""
        return f"{self.value:.{self.decimals}f} {self.unit}"


@dataclass(frozen=True)
class CheckReport:
    package_id: str
    version: str
    figures: tuple[FigureResult, ...]
    violations: tuple[ClaimViolation, ...]

    @property
    def ok(self) -> bool:
        return not self.violations

    def as_dict(self) -> dict[str, object]:
        return {
            "package": self.package_id,
            "version": self.version,
            "ok": self.ok,
            "figures": [
                {
                    "id": f.id,
                    "label": f.label,
                    "value": f.value,
                    "unit": f.unit,
                    "provenance": f.provenance.value,
                    "status": f.status,
                    "recomputed": f.recomputed,
                    "per_run": f.per_run,
                    "source": f.source,
                    "simulator": f.simulator,
                }
                for f in self.figures
            ],
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
        }


@dataclass
class _Context:
    loaded: LoadedPackage
    _evidence: dict[str, Evidence] = field(default_factory=dict)
    _summaries: dict[tuple[str, int], GroupSummary | None] = field(default_factory=dict)

    @property
    def package(self) -> Package:
        return self.loaded.package

    @cached_property
    def figure_fields(self) -> dict[str, str]:
        return {
            f.id: f"measurements.figures[{i}]"
            for i, f in enumerate(self.package.measurements.figures)
        }

    def evidence(self, run_id: str) -> Evidence | None:
        run = self.package.run(run_id)
        if run is None:
            return None
        if run_id not in self._evidence:
            self._evidence[run_id] = load_evidence(self.loaded.path(run.file))
        return self._evidence[run_id]

    def summary(self, run_id: str, concurrency: int) -> GroupSummary | None:
        """One summary per (run, concurrency), however many rules and figures ask for it."""
        key = (run_id, concurrency)
        if key not in self._summaries:
            ev = self.evidence(run_id)
            measured = ev is not None and ev.measured(concurrency)
            self._summaries[key] = summarize(ev.requests, concurrency) if ev and measured else None
        return self._summaries[key]

    def recompute(self, fig: Figure, run_id: str) -> float | None:
        summary = self.summary(run_id, fig.concurrency)
        ev = self.evidence(run_id)
        if summary is None or ev is None or summary.completed == 0:
            return None
        try:
            return figure_value(summary, fig.metric, fig.statistic, fig.scope, ev.header.gpus)
        except ValueError:
            return None


Violations = Iterator[ClaimViolation]
_RuleFn = Callable[[_Context], Violations]


def _v(rule: str, field_path: str, message: str, fix: str) -> ClaimViolation:
    return ClaimViolation(rule=rule, field=field_path, message=message, fix=fix)


def _within_rounding(value: float, recomputed: float, decimals: int) -> bool:
    return abs(value - recomputed) <= 0.5 * 10.0 ** (-decimals) + 1e-9


def _measured(ctx: _Context) -> Iterator[tuple[str, Figure]]:
    for f in ctx.package.published_figures:
        if f.provenance is Provenance.MEASURED:
            yield ctx.figure_fields[f.id], f


# --- figures ---------------------------------------------------------------------


def _sk101(ctx: _Context) -> Violations:
    for where, f in _measured(ctx):
        if not f.runs or ctx.package.run(f.runs[0]) is None:
            continue
        got = ctx.recompute(f, f.runs[0])
        if got is not None and not _within_rounding(f.value, got, f.decimals):
            yield _v(
                "SK101",
                f"{where}.value",
                f"'{f.label}' states {f.value:g} {f.unit} but run {f.runs[0]} recomputes to "
                f"{got:.{f.decimals}f} {f.unit} ({f.metric.value} {f.statistic.value}, "
                f"concurrency {f.concurrency})",
                f"set value to {round(got, f.decimals):g} or point the figure at the run that "
                "carries it",
            )


def _sk102(ctx: _Context) -> Violations:
    for where, f in _measured(ctx):
        if not f.runs:
            yield _v(
                "SK102",
                f"{where}.runs",
                f"'{f.label}' is marked measured but names no run",
                "add the raw per-request records as a run, or mark it reported with a source",
            )
            continue
        for run_id in f.runs:
            if ctx.package.run(run_id) is None:
                yield _v(
                    "SK102",
                    f"{where}.runs",
                    f"run '{run_id}' is not defined in measurements.runs",
                    "define the run with its evidence file, or remove it from the figure",
                )
            elif ctx.recompute(f, run_id) is None:
                yield _v(
                    "SK102",
                    f"{where}.runs",
                    f"run '{run_id}' has no successful measured requests at concurrency "
                    f"{f.concurrency} to compute {f.metric.value} {f.statistic.value} from",
                    "measure this concurrency, or correct the figure's concurrency/statistic",
                )


def _sk103(ctx: _Context) -> Violations:
    for f in ctx.package.published_figures:
        if f.provenance is not Provenance.REPORTED:
            continue
        where = ctx.figure_fields[f.id]
        if f.source is None:
            yield _v(
                "SK103",
                f"{where}.source",
                f"reported figure '{f.label}' names no source",
                "add source: {name, reference, date} for the publisher it was reported by",
            )
        if f.runs:
            yield _v(
                "SK103",
                f"{where}.runs",
                f"reported figure '{f.label}' names runs; a figure with raw records here is measured",
                "set provenance: measured (the rules will recompute it) or remove the runs",
            )


def _sk104(ctx: _Context) -> Violations:
    tol = ctx.package.measurements.tolerance_pct
    for where, f in _measured(ctx):
        values = {r: ctx.recompute(f, r) for r in f.runs if ctx.package.run(r) is not None}
        primary = values.get(f.runs[0]) if f.runs else None
        if primary is None:
            continue
        for run_id, got in values.items():
            if got is None or run_id == f.runs[0]:
                continue
            diff = abs(got - primary) / abs(primary) * 100 if primary else math.inf
            if diff > tol:
                yield _v(
                    "SK104",
                    f"{where}.runs",
                    f"'{f.label}': run {run_id} gives {got:.3f} against {primary:.3f} from "
                    f"{f.runs[0]}, a {diff:.2f} % difference over the {tol:g} % tolerance",
                    "find why the runs disagree and re-run; do not widen the tolerance to fit",
                )


def _sk105(ctx: _Context) -> Violations:
    gpus = ctx.package.hardware.target.count
    by_key: dict[tuple[Metric, Statistic, int, Scope], Figure] = {}
    for f in ctx.package.published_figures:
        where = ctx.figure_fields[f.id]
        if f.metric.is_throughput and f.scope is None:
            yield _v(
                "SK105",
                f"{where}.scope",
                f"throughput '{f.label}' does not say per GPU or node",
                "set scope: per_gpu or scope: node",
            )
        elif not f.metric.is_throughput and f.scope is not None:
            yield _v(
                "SK105",
                f"{where}.scope",
                f"'{f.label}' is a latency and cannot have a scope",
                "remove scope",
            )
        elif f.scope is not None:
            by_key[(f.metric, f.statistic, f.concurrency, f.scope)] = f
    for (metric, stat, conc, scope), per_gpu in by_key.items():
        node = by_key.get((metric, stat, conc, Scope.NODE))
        if scope is not Scope.PER_GPU or node is None:
            continue
        decimals = max(node.decimals, per_gpu.decimals)
        if not _within_rounding(node.value, per_gpu.value * gpus, max(decimals - 1, 0)):
            yield _v(
                "SK105",
                f"{ctx.figure_fields[node.id]}.value",
                f"node aggregate {node.value:g} is not {gpus} x per-GPU {per_gpu.value:g} "
                f"= {per_gpu.value * gpus:g}",
                "recompute both from the same run; aggregate = per GPU x GPU count",
            )


def _sk106(ctx: _Context) -> Violations:
    contract = ctx.package.measurements.improvement_contract_pct
    for i, s in enumerate(ctx.package.measurements.speedups):
        where = f"measurements.speedups[{i}]"
        fig, base = ctx.package.figure(s.figure), ctx.package.figure(s.baseline)
        if fig is None or base is None:
            yield _v(
                "SK106",
                where,
                f"speedup '{s.id}' names a figure or baseline that does not exist",
                "point figure and baseline at figure ids",
            )
            continue
        if not s.baseline_is_stock or base.provenance is not Provenance.MEASURED:
            yield _v(
                "SK106",
                where,
                f"speedup '{s.id}' has no measured stock baseline",
                "measure the stock configuration on the same grid, or drop the speedup",
            )
            continue
        same = (fig.measured_on, fig.metric, fig.statistic, fig.concurrency, fig.scope) == (
            base.measured_on,
            base.metric,
            base.statistic,
            base.concurrency,
            base.scope,
        )
        if not same:
            yield _v(
                "SK106",
                where,
                f"speedup '{s.id}' compares figures from different workloads, engines, "
                "hardware or metrics",
                "compare the same metric on the same workload, engine build and hardware",
            )
            continue
        lower_better = not fig.metric.is_throughput
        gain = (base.value / fig.value - 1) if lower_better else (fig.value / base.value - 1)
        if abs(gain * 100 - s.value_pct) > 0.05:
            yield _v(
                "SK106",
                f"{where}.value_pct",
                f"speedup '{s.id}' states {s.value_pct:g} % but the figures give {gain * 100:.2f} %",
                f"set value_pct to {gain * 100:.1f}",
            )
        elif s.value_pct < contract:
            yield _v(
                "SK106",
                f"{where}.value_pct",
                f"speedup '{s.id}' of {s.value_pct:g} % is below the {contract:g} % improvement contract",
                "do not claim a speedup below the contract",
            )


# --- accuracy ---------------------------------------------------------------------


def _sk107(ctx: _Context) -> Violations:
    acc = ctx.package.accuracy
    both = acc.baseline is not None and acc.optimized is not None
    if (acc.recovery_pct is not None or acc.delta is not None) and not both:
        yield _v(
            "SK107",
            "accuracy.recovery_pct",
            "a recovery or delta is stated without both a baseline and an optimized score",
            "publish both scores, or remove recovery_pct/delta and state absent_reason",
        )
    if both and acc.baseline and acc.optimized is not None:
        if (
            acc.recovery_pct is not None
            and abs(acc.optimized / acc.baseline * 100 - acc.recovery_pct) > 0.05
        ):
            yield _v(
                "SK107",
                "accuracy.recovery_pct",
                f"recovery {acc.recovery_pct:g} % is not optimized/baseline = "
                f"{acc.optimized / acc.baseline * 100:.2f} %",
                "recompute recovery_pct",
            )
        if acc.delta is not None and abs(acc.optimized - acc.baseline - acc.delta) > 1e-6:
            yield _v(
                "SK107",
                "accuracy.delta",
                f"delta {acc.delta:g} is not optimized - baseline",
                "recompute delta",
            )
    if not both and not acc.absent_reason:
        yield _v(
            "SK107",
            "accuracy.absent_reason",
            "no baseline/optimized pair and no reason given",
            "state absent_reason: why there is no recovery figure",
        )


def _sk108(ctx: _Context) -> Violations:
    acc = ctx.package.accuracy
    if acc.method is not AccuracyMethod.BY_CONSTRUCTION:
        return
    if acc.weights_modified or ctx.package.model.quantized_by_publisher:
        yield _v(
            "SK108",
            "accuracy.method",
            "'by construction' is claimed but weights were modified",
            "measure accuracy against the upstream build instead",
        )
    if acc.runtime_stages_applied:
        yield _v(
            "SK108",
            "accuracy.runtime_stages_applied",
            f"'by construction' is claimed but stages are applied: {', '.join(acc.runtime_stages_applied)}",
            "measure accuracy, or remove the stages",
        )


def _sk109(ctx: _Context) -> Violations:
    acc = ctx.package.accuracy
    unsound = any(c.shows_method_unsound for c in acc.controls)
    if acc.cross_server_agreement and unsound and not acc.cross_server_agreement.informational:
        yield _v(
            "SK109",
            "accuracy.cross_server_agreement.informational",
            "a cross-server agreement score is presented as accuracy evidence although a "
            "same-server control shows the method cannot tell a server from itself",
            "mark it informational: true, or drop it",
        )


# --- memory, cost, disclosures ------------------------------------------------------------


def _sk110(ctx: _Context) -> Violations:
    pm = ctx.package.peak_memory
    if pm.published and (pm.source is None or pm.source is MemorySource.ENGINE_PREALLOCATION):
        yield _v(
            "SK110",
            "peak_memory.source",
            "peak memory is published from the engine's preallocation, which measures the "
            "memory-utilization setting, not the serving stack",
            "set published: false, or measure with a memory profile (source: measured_profile)",
        )
    if pm.published and pm.value_gib is None:
        yield _v(
            "SK110",
            "peak_memory.value_gib",
            "peak memory is published without a value",
            "give value_gib or set published: false",
        )


def _sk111(ctx: _Context) -> Violations:
    cost = ctx.package.cost
    if cost.usd_per_million_output_tokens is None:
        return
    rate = cost.node_hourly_rate
    if rate is None or not rate.covers_whole_node:
        yield _v(
            "SK111",
            "cost.node_hourly_rate",
            "a cost per token is published without a sourced hourly rate for the whole node",
            "record node_hourly_rate {usd_per_node_hour, source, date, covers_whole_node: true}",
        )
        return
    fig = ctx.package.figure(cost.throughput_figure or "")
    if (
        fig is None
        or fig.metric is not Metric.OUTPUT_THROUGHPUT
        or fig.provenance is not Provenance.MEASURED
    ):
        yield _v(
            "SK111",
            "cost.throughput_figure",
            "the cost must divide by a measured output-throughput figure",
            "name a measured output_throughput figure in throughput_figure",
        )
        return
    node_tps = fig.value * (ctx.package.hardware.target.count if fig.scope is Scope.PER_GPU else 1)
    expected = rate.usd_per_node_hour / (node_tps * 3600) * 1e6
    if abs(expected - cost.usd_per_million_output_tokens) > max(0.005 * expected, 0.005):
        yield _v(
            "SK111",
            "cost.usd_per_million_output_tokens",
            f"states {cost.usd_per_million_output_tokens:g} USD but the node rate over the node's "
            f"throughput gives {expected:.4f} USD per million output tokens",
            f"set it to {expected:.4f}",
        )


def _disclosed(pkg: Package, topic: DisclosureTopic, subject: str | None = None) -> bool:
    return any(
        d.topic is topic and (subject is None or d.subject == subject) for d in pkg.disclosures
    )


def _sk112(ctx: _Context) -> Violations:
    pkg = ctx.package
    exercised = {m for w in pkg.workloads for m in w.modalities}
    for comp in pkg.model.modalities:
        if comp.modality not in exercised and not _disclosed(
            pkg, DisclosureTopic.MODALITY, comp.modality.value
        ):
            yield _v(
                "SK112",
                "disclosures",
                f"the model has a {comp.modality.value} path ({comp.component or 'no component named'}) "
                "that no workload exercised",
                f"add a disclosure with topic: modality, subject: {comp.modality.value}",
            )


def _sk113(ctx: _Context) -> Violations:
    pkg = ctx.package
    covered = max(
        min(w.prompt_tokens.max + w.output_tokens, w.context_length) for w in pkg.workloads
    )
    if pkg.model.context_length > covered and not _disclosed(pkg, DisclosureTopic.CONTEXT):
        yield _v(
            "SK113",
            "disclosures",
            f"the model supports {pkg.model.context_length} tokens of context; the workloads "
            f"covered at most {covered}",
            "add a disclosure with topic: context saying what was not measured",
        )
    if Modality.TEXT not in {m for w in pkg.workloads for m in w.modalities}:
        yield _v(
            "SK113", "workloads", "no workload exercises text", "declare the workload's modalities"
        )


def _sk114(ctx: _Context) -> Violations:
    pkg = ctx.package
    for f in pkg.published_figures:
        where = ctx.figure_fields[f.id]
        on = f.measured_on
        if on is None:
            yield _v(
                "SK114",
                f"{where}.measured_on",
                f"'{f.label}' does not name its engine, hardware and workload",
                "add measured_on: {engine, hardware, workload}",
            )
            continue
        if f.provenance is Provenance.MEASURED and on.engine != pkg.engine.version:
            yield _v(
                "SK114",
                f"{where}.measured_on.engine",
                f"'{on.engine}' is not the pinned engine '{pkg.engine.version}'",
                "measure on the pinned engine build, or pin the build it was measured on",
            )
        if on.hardware != pkg.hardware.target.label:
            yield _v(
                "SK114",
                f"{where}.measured_on.hardware",
                f"'{on.hardware}' is not the target '{pkg.hardware.target.label}'",
                "publish figures for the target hardware only",
            )
        workload = pkg.workload(on.workload)
        if workload is None:
            yield _v(
                "SK114",
                f"{where}.measured_on.workload",
                f"workload '{on.workload}' is not defined",
                "define it under workloads",
            )
        elif f.concurrency not in workload.concurrencies:
            yield _v(
                "SK114",
                f"{where}.concurrency",
                f"concurrency {f.concurrency} is not in workload '{on.workload}'",
                "add it to the workload's grid or correct the figure",
            )
        for run_id in f.runs:
            run = pkg.run(run_id)
            if run is not None and run.workload != on.workload:
                yield _v(
                    "SK114",
                    f"{where}.runs",
                    f"run '{run_id}' measured workload '{run.workload}', not '{on.workload}'",
                    "point the figure at runs of its own workload",
                )


def _sk115(ctx: _Context) -> Violations:
    pkg = ctx.package
    for i, run in enumerate(pkg.measurements.runs):
        where = f"measurements.runs[{i}]"
        ev, workload = ctx.evidence(run.id), pkg.workload(run.workload)
        if ev is None or workload is None:
            if workload is None:
                yield _v(
                    "SK115",
                    f"{where}.workload",
                    f"workload '{run.workload}' is not defined",
                    "define it",
                )
            continue
        if ev.header.gpus != pkg.hardware.target.count:
            yield _v(
                "SK115",
                f"{where}.file",
                f"{run.file} was run on {ev.header.gpus} GPUs, the target has "
                f"{pkg.hardware.target.count}",
                "measure on the target hardware",
            )
        if ev.header.simulator != run.simulator:
            yield _v(
                "SK115",
                f"{where}.simulator",
                f"{run.file} says simulator={ev.header.simulator}",
                f"set simulator: {str(ev.header.simulator).lower()}",
            )
        for conc in workload.concurrencies:
            measured, warm = len(ev.measured(conc)), len(ev.warmups(conc))
            if (measured, warm) != (workload.measured_requests, workload.warmup_requests):
                yield _v(
                    "SK115",
                    f"{where}.file",
                    f"{run.file} holds {measured} measured and {warm} warmup requests at concurrency "
                    f"{conc}; workload '{workload.id}' declares {workload.measured_requests} and "
                    f"{workload.warmup_requests}",
                    "re-run the grid, or declare what was run",
                )


def _sk116(ctx: _Context) -> Violations:
    for where, f in _measured(ctx):
        for run_id in f.runs:
            summary = ctx.summary(run_id, f.concurrency) if ctx.package.run(run_id) else None
            if summary and (summary.failed or summary.length_mismatches):
                yield _v(
                    "SK116",
                    f"{where}.runs",
                    f"run {run_id} at concurrency {f.concurrency} has {summary.failed} failed requests "
                    f"and {summary.length_mismatches} output-length mismatches",
                    "re-run until every measured request succeeds at the requested length",
                )


def _sk117(ctx: _Context) -> Violations:
    if ctx.package.uses_simulator and not _disclosed(ctx.package, DisclosureTopic.SIMULATOR):
        yield _v(
            "SK117",
            "disclosures",
            "runs were measured against servekit's simulator, not a real engine",
            "add a disclosure with topic: simulator; never present these as engine measurements",
        )


_RULE_FUNCS: tuple[_RuleFn, ...] = (
    _sk101,
    _sk102,
    _sk103,
    _sk104,
    _sk105,
    _sk106,
    _sk107,
    _sk108,
    _sk109,
    _sk110,
    _sk111,
    _sk112,
    _sk113,
    _sk114,
    _sk115,
    _sk116,
    _sk117,
)


def _figure_results(ctx: _Context) -> tuple[FigureResult, ...]:
    out = []
    for f in ctx.package.measurements.figures:
        per_run: dict[str, float] = {}
        if f.provenance is Provenance.MEASURED:
            for run_id in f.runs:
                got = ctx.recompute(f, run_id) if ctx.package.run(run_id) else None
                if got is not None:
                    per_run[run_id] = got
        runs = [ctx.package.run(r) for r in f.runs]
        out.append(
            FigureResult(
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
            )
        )
    return tuple(out)


def check(loaded: LoadedPackage) -> CheckReport:
    """Run every claim rule; evidence errors (missing/malformed files) raise."""
    ctx = _Context(loaded)
    violations = [v for rule in _RULE_FUNCS for v in rule(ctx)]
    return CheckReport(
        package_id=loaded.package.id,
        version=loaded.package.version,
        figures=_figure_results(ctx),
        violations=tuple(violations),
    )


def enforce(report: CheckReport) -> None:
    """Raise :class:`ClaimRuleError` if the report holds any violation."""
    if report.violations:
        raise ClaimRuleError(report.violations)
