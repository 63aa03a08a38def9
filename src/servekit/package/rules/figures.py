"""Figures: a measured figure is its recomputation; a reported one names its source and
the workload that source states; every figure says what it was measured on."""

from __future__ import annotations

from collections.abc import Iterable

from servekit.package.models import DisclosureTopic, Figure, Metric, Provenance, Scope, Statistic
from servekit.package.rules.context import Context
from servekit.package.rules.registry import Findings, RuleId, finding, rule


def within_rounding(value: float, recomputed: float, decimals: int) -> bool:
    return abs(value - recomputed) <= 0.5 * 10.0 ** (-decimals) + 1e-9


@rule(
    RuleId.MEASURED_RECOMPUTES,
    "A measured figure equals its recomputation from the raw records, within its stated rounding.",
    "A headline number that its own raw file does not give is never shown as measured.",
)
def measured_recomputes(ctx: Context) -> Findings:
    for where, f in ctx.measured_figures():
        if not f.runs or ctx.package.run(f.runs[0]) is None:
            continue
        got = ctx.recompute(f, f.runs[0])
        if got is not None and not within_rounding(f.value, got, f.decimals):
            yield finding(
                RuleId.MEASURED_RECOMPUTES,
                f"{where}.value",
                f"'{f.label}' states {f.value:g} {f.unit} but run {f.runs[0]} recomputes to "
                f"{got:.{f.decimals}f} {f.unit} ({f.metric.value} {f.statistic.value}, "
                f"concurrency {f.concurrency})",
                f"set value to {round(got, f.decimals):g} or point the figure at the run that "
                "carries it",
                (f.id,),
            )


@rule(
    RuleId.MEASURED_NEEDS_RECORDS,
    "A figure with no raw per-request records cannot be published as measured.",
    "A number whose raw file was not kept is not published (the wider sweep with no raw file).",
)
def measured_needs_records(ctx: Context) -> Findings:
    for where, f in ctx.measured_figures():
        if not f.runs:
            yield finding(
                RuleId.MEASURED_NEEDS_RECORDS,
                f"{where}.runs",
                f"'{f.label}' is marked measured but names no run",
                "add the raw per-request records as a run, or mark it reported with a source",
                (f.id,),
            )
            continue
        for run_id in f.runs:
            yield from _run_carries(ctx, where, f, run_id)


def _run_carries(ctx: Context, where: str, f: Figure, run_id: str) -> Findings:
    run = ctx.package.run(run_id)
    if run is not None and not run.current:
        return  # a retracted run is read by no rule; SK128 refuses the figure that names it
    if run is None:
        yield finding(
            RuleId.MEASURED_NEEDS_RECORDS,
            f"{where}.runs",
            f"run '{run_id}' is not defined in measurements.runs",
            "define the run with its evidence file, or remove it from the figure",
            (f.id,),
        )
    elif ctx.recompute(f, run_id) is None:
        yield finding(
            RuleId.MEASURED_NEEDS_RECORDS,
            f"{where}.runs",
            f"run '{run_id}' has no successful measured requests at concurrency "
            f"{f.concurrency} to compute {f.metric.value} {f.statistic.value} from",
            "measure this concurrency, or correct the figure's concurrency/statistic",
            (f.id,),
        )


@rule(
    RuleId.REPORTED_NEEDS_SOURCE,
    "A reported figure names its external source and date, and carries no runs of its own.",
    "Figures from another publisher are shown as reported, with their source, never as measured.",
)
def reported_needs_source(ctx: Context) -> Findings:
    for f in ctx.package.published_figures:
        if f.provenance is not Provenance.REPORTED:
            continue
        where = ctx.figure_fields[f.id]
        if f.source is None:
            yield finding(
                RuleId.REPORTED_NEEDS_SOURCE,
                f"{where}.source",
                f"reported figure '{f.label}' names no source",
                "add source: {name, reference, date} for the publisher it was reported by",
                (f.id,),
            )
        if f.runs:
            yield finding(
                RuleId.REPORTED_NEEDS_SOURCE,
                f"{where}.runs",
                f"reported figure '{f.label}' names runs; a figure with raw records here is measured",
                "set provenance: measured (the rules will recompute it) or remove the runs",
                (f.id,),
            )


def _pair_key(f: Figure) -> tuple[Metric, Statistic, int, tuple[str, ...], str]:
    """Per-GPU and node figures pair only when they come from the same runs (in any order);
    reported ones pair on their workload, whatever their sources are called (two sources
    that disagree about one workload are disclosed, SK134, not left unpaired)."""
    origin = f"reported {f.measured_on.workload if f.measured_on else ''}" if not f.runs else ""
    return f.metric, f.statistic, f.concurrency, tuple(sorted(set(f.runs))), origin


@rule(
    RuleId.THROUGHPUT_SCOPE,
    "A throughput says per GPU or node aggregate, and aggregate = per GPU x GPU count.",
    "Per-GPU and whole-node throughputs are never mixed up on a card.",
)
def throughput_scope(ctx: Context) -> Findings:
    pairs: dict[tuple[Metric, Statistic, int, tuple[str, ...], str], dict[Scope, Figure]] = {}
    for f in ctx.package.published_figures:
        where = ctx.figure_fields[f.id]
        if f.metric.is_throughput and f.scope is None:
            yield finding(
                RuleId.THROUGHPUT_SCOPE,
                f"{where}.scope",
                f"throughput '{f.label}' does not say per GPU or node",
                "set scope: per_gpu or scope: node",
                (f.id,),
            )
        elif not f.metric.is_throughput and f.scope is not None:
            yield finding(
                RuleId.THROUGHPUT_SCOPE, f"{where}.scope", f"'{f.label}' is a latency and cannot have a scope",
                "remove scope", (f.id,),
            )  # fmt: skip
        elif f.scope is not None:
            pairs.setdefault(_pair_key(f), {})[f.scope] = f
    yield from _aggregates(ctx, pairs.values())


def _aggregates(ctx: Context, pairs: Iterable[dict[Scope, Figure]]) -> Findings:
    gpus = ctx.package.hardware.target.count
    for pair in pairs:
        per_gpu, node = pair.get(Scope.PER_GPU), pair.get(Scope.NODE)
        if per_gpu is None or node is None:
            continue
        decimals = max(node.decimals, per_gpu.decimals)
        if not within_rounding(node.value, per_gpu.value * gpus, max(decimals - 1, 0)):
            yield finding(
                RuleId.THROUGHPUT_SCOPE,
                f"{ctx.figure_fields[node.id]}.value",
                f"node aggregate {node.value:g} is not {gpus} x per-GPU {per_gpu.value:g} "
                f"= {per_gpu.value * gpus:g}",
                "recompute both from the same run; aggregate = per GPU x GPU count",
                (node.id, per_gpu.id),
            )


@rule(
    RuleId.FIGURE_ATTRIBUTION,
    "Every figure names the engine build, hardware and workload it was measured on, and they match the package.",
    "A figure measured on other hardware or another build is not sold as this configuration's.",
)
def figure_attribution(ctx: Context) -> Findings:
    for f in ctx.package.published_figures:
        yield from _attribution(ctx, ctx.figure_fields[f.id], f)


def _attribution(ctx: Context, where: str, f: Figure) -> Findings:
    pkg, on, ids = ctx.package, f.measured_on, (f.id,)
    if on is None:
        yield finding(
            RuleId.FIGURE_ATTRIBUTION, f"{where}.measured_on",
            f"'{f.label}' does not name its engine, hardware and workload",
            "add measured_on: {engine, hardware, workload}", ids,
        )  # fmt: skip
        return
    if f.provenance is Provenance.MEASURED and on.engine != pkg.engine.version:
        yield finding(
            RuleId.FIGURE_ATTRIBUTION, f"{where}.measured_on.engine",
            f"'{on.engine}' is not the pinned engine '{pkg.engine.version}'",
            "measure on the pinned engine build, or pin the build it was measured on", ids,
        )  # fmt: skip
    if on.hardware != pkg.hardware.target.label:
        yield finding(
            RuleId.FIGURE_ATTRIBUTION, f"{where}.measured_on.hardware",
            f"'{on.hardware}' is not the target '{pkg.hardware.target.label}'",
            "publish figures for the target hardware only", ids,
        )  # fmt: skip
    workload = pkg.workload(on.workload)
    if workload is None:
        yield finding(
            RuleId.FIGURE_ATTRIBUTION, f"{where}.measured_on.workload", f"workload '{on.workload}' is not defined",
            "define it under workloads", ids,
        )  # fmt: skip
    elif f.concurrency not in workload.concurrencies:
        yield finding(
            RuleId.FIGURE_ATTRIBUTION, f"{where}.concurrency",
            f"concurrency {f.concurrency} is not in workload '{on.workload}'",
            "add it to the workload's grid or correct the figure", ids,
        )  # fmt: skip
    for run_id in f.runs:
        run = pkg.run(run_id)
        if run is not None and run.workload != on.workload:
            yield finding(
                RuleId.FIGURE_ATTRIBUTION, f"{where}.runs",
                f"run '{run_id}' measured workload '{run.workload}', not '{on.workload}'",
                "point the figure at runs of its own workload", ids,
            )  # fmt: skip


@rule(
    RuleId.REPORTED_WORKLOAD,
    "A reported figure records the workload its source states (output tokens, concurrency, "
    "requests, warmup); where the package's sources disagree about it, a disclosure says so.",
    "A reported number is shown with the workload it was measured on, and disagreeing sources "
    "are disclosed, not averaged away.",
)
def reported_workload(ctx: Context) -> Findings:
    stated: dict[tuple[str, int], set[tuple[object, ...]]] = {}
    for f in ctx.package.published_figures:
        if f.provenance is not Provenance.REPORTED or f.source is None:
            continue
        where, sw = ctx.figure_fields[f.id], f.source.workload
        if sw is None or sw.output_tokens is None or sw.concurrency is None:
            yield finding(
                RuleId.REPORTED_WORKLOAD, f"{where}.source.workload",
                f"reported figure '{f.label}' does not record the workload its source states",
                "add source.workload: {output_tokens, concurrency, requests, warmup} as the "
                "source states them", (f.id,),
            )  # fmt: skip
            continue
        if sw.concurrency != f.concurrency:
            yield finding(
                RuleId.REPORTED_WORKLOAD, f"{where}.concurrency",
                f"'{f.label}' is labelled concurrency {f.concurrency}; its source states "
                f"{sw.concurrency}", "label the figure with the source's concurrency", (f.id,),
            )  # fmt: skip
        key = (f.measured_on.workload if f.measured_on else "", f.concurrency)
        stated.setdefault(key, set()).add((sw.output_tokens, sw.requests, sw.warmup))
        differs = _differs_from_declared(ctx, f)
        if differs and not ctx.disclosed(DisclosureTopic.REPORTED_WORKLOAD):
            yield finding(
                RuleId.REPORTED_WORKLOAD, f"{where}.source.workload",
                f"'{f.label}': its source states {differs}, not what workload "
                f"'{key[0]}' declares", "label the figure with a workload that states what the "
                "source ran, or disclose the difference (topic: reported_workload)", (f.id,),
            )  # fmt: skip
    yield from _sources_disagree(ctx, stated)


def _differs_from_declared(ctx: Context, f: Figure) -> str:
    """Where the source's stated workload departs from the workload the figure is shown on."""
    w = ctx.package.workload(f.measured_on.workload) if f.measured_on else None
    sw = f.source.workload if f.source else None
    if w is None or sw is None:
        return ""
    pairs = [("output tokens", sw.output_tokens, w.output_tokens),
             ("measured requests", sw.requests, w.measured_requests),
             ("warmup requests", sw.warmup, w.warmup_requests)]  # fmt: skip
    out = [
        f"{what} {said}" for what, said, declared in pairs if said is not None and said != declared
    ]
    if sw.prompt_tokens is not None and (sw.prompt_tokens.min, sw.prompt_tokens.max) != (
        w.prompt_tokens.min, w.prompt_tokens.max,
    ):  # fmt: skip
        out.append(f"prompts of {sw.prompt_tokens.min}-{sw.prompt_tokens.max} tokens")
    return ", ".join(out)


def _sources_disagree(
    ctx: Context, stated: dict[tuple[str, int], set[tuple[object, ...]]]
) -> Findings:
    for (workload, conc), variants in stated.items():
        if len(variants) > 1 and not ctx.disclosed(DisclosureTopic.REPORTED_WORKLOAD):
            yield finding(
                RuleId.REPORTED_WORKLOAD,
                "disclosures",
                f"the sources of reported figures on workload '{workload}' at concurrency "
                f"{conc} state different workloads: {sorted(map(str, variants))}",
                "add a disclosure with topic: reported_workload saying how they differ",
                tuple(
                    f.id
                    for f in ctx.package.published_figures
                    if f.provenance is Provenance.REPORTED and f.concurrency == conc
                ),
            )
