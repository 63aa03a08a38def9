"""Memory, cost and floor: no memory figure from a preallocating engine, no cost from a
throughput that was not measured on the priced hardware, no floor without proof."""

from __future__ import annotations

from servekit.package.files import LICENSES_DIR, PACKAGE_FILE
from servekit.package.models import Figure, Metric, Provenance, Scope
from servekit.package.rules.context import Context
from servekit.package.rules.disclosures import SIM_ENGINE, is_simulator
from servekit.package.rules.engines import engine_key, preallocates
from servekit.package.rules.registry import Findings, RuleId, finding, rule


@rule(
    RuleId.PEAK_MEMORY_SOURCE,
    "Peak memory is never published from an engine's preallocation figure, nor for an engine "
    "that preallocates (the documented list), whatever source is named.",
    "A preallocating engine's memory reading measures its memory-utilization setting, not the model.",
)
def peak_memory_source(ctx: Context) -> Findings:
    pm, engine = ctx.package.peak_memory, ctx.package.engine.name
    if not pm.published:
        return
    prealloc = any(preallocates(engine, argv) for _, argv in ctx.serve_argvs())
    if pm.source is None or pm.source.value == "engine_preallocation" or prealloc:
        yield finding(RuleId.PEAK_MEMORY_SOURCE, "peak_memory.source",
                      f"peak memory is published for {engine}, which preallocates, or from the "
                      "engine's preallocation: it measures the memory-utilization setting, not "
                      "the serving stack", "set published: false and size hardware from the "
                      "weight residency instead")  # fmt: skip
    if pm.value_gib is None:
        yield finding(RuleId.PEAK_MEMORY_SOURCE, "peak_memory.value_gib", "peak memory is published without a "
                      "value", "give value_gib or set published: false")  # fmt: skip


def _throughput_problem(ctx: Context, fig: Figure | None) -> str | None:
    if (
        fig is None
        or fig.metric is not Metric.OUTPUT_THROUGHPUT
        or fig.provenance is not Provenance.MEASURED
    ):
        return "the cost must divide by a measured output-throughput figure"
    target = ctx.package.hardware.target
    for run_id in fig.runs:
        run, ev = ctx.package.run(run_id), ctx.evidence(run_id)
        if run is None or ev is None:
            continue
        if run.simulator or is_simulator(ev) or engine_key(ctx.package.engine.name) == SIM_ENGINE:
            return f"run {run_id} measured a simulator, not an engine on the priced hardware"
        if ev.header.gpus != target.count or (ev.header.hardware not in (None, target.label)):
            return f"run {run_id} was not measured on the priced {target.label}"
    return None


@rule(
    RuleId.COST_BASIS,
    "A cost per token divides a sourced, dated node hourly rate by an output throughput measured on the priced hardware with a real engine, and equals its recomputation.",
    "No cost per token without a sourced rate and a throughput from that hardware.",
)
def cost_basis(ctx: Context) -> Findings:
    cost = ctx.package.cost
    if cost.usd_per_million_output_tokens is None:
        return
    rate = cost.node_hourly_rate
    if rate is None or not rate.covers_whole_node:
        yield finding(RuleId.COST_BASIS, "cost.node_hourly_rate", "a cost per token is published without "
                      "a sourced hourly rate for the whole node", "record node_hourly_rate "
                      "{usd_per_node_hour, source, date, covers_whole_node: true}")  # fmt: skip
        return
    fig = ctx.package.figure(cost.throughput_figure or "")
    problem = _throughput_problem(ctx, fig)
    if problem or fig is None:
        yield finding(RuleId.COST_BASIS, "cost.throughput_figure", problem or "", "name a measured "
                      "output_throughput figure of the priced hardware in throughput_figure")  # fmt: skip
        return
    node_tps = fig.value * (ctx.package.hardware.target.count if fig.scope is Scope.PER_GPU else 1)
    expected = rate.usd_per_node_hour / (node_tps * 3600) * 1e6 if node_tps > 0 else float("inf")
    if abs(expected - cost.usd_per_million_output_tokens) > max(0.005 * expected, 0.005):
        yield finding(RuleId.COST_BASIS, "cost.usd_per_million_output_tokens",
                      f"states {cost.usd_per_million_output_tokens:g} USD but the node rate over "
                      f"the node's throughput gives {expected:.4f} USD per million output tokens",
                      f"set it to {expected:.4f}")  # fmt: skip


@rule(
    RuleId.FLOOR_PROOF,
    "A hardware-floor claim needs a measured residency (weights per GPU and where it was "
    "measured) or at least one failed attempt with its evidence file.",
    "A floor is stated from what loaded or failed to load, not from arithmetic alone.",
)
def floor_proof(ctx: Context) -> Findings:
    floor = ctx.package.hardware.floor
    if floor is None or floor.requirement is None:
        return
    residency = floor.weights_per_gpu_gib is not None and bool((floor.measured_on or "").strip())
    proven = [a for a in floor.attempts if _failed(a.outcome) and _own_record(ctx, a.evidence)]
    if not residency and not proven:
        yield finding(RuleId.FLOOR_PROOF, "hardware.floor", f"the floor '{floor.requirement}' has no "
                      "measured residency and no failed attempt with evidence",
                      "record weights_per_gpu_gib with measured_on, or a failed attempt with "
                      "its log or record under evidence/")  # fmt: skip


FAILED_WORDS = ("fail", "out of memory", "oom", "error", "did not load", "could not")


def _failed(outcome: str) -> bool:
    """An attempt proves a floor only when it says it failed (a load that worked proves none)."""
    return any(word in outcome.lower() for word in FAILED_WORDS)


def _own_record(ctx: Context, relative: str | None) -> bool:
    """The attempt's evidence is a non-empty file of the package itself (symlinks resolved),
    not its definition or a licence standing in for a log."""
    if not relative:
        return False
    source = ctx.loaded.source
    inside = source.inside(relative)
    if inside is None or not source.is_file(relative) or source.size(relative) == 0:
        return False
    return inside.parts[0] not in (LICENSES_DIR, PACKAGE_FILE) and inside.name != PACKAGE_FILE
