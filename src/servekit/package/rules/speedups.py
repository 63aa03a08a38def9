"""Speedups: a claimed improvement compares the same contract against a stock baseline
whose serve configuration is recorded and shown to be stock."""

from __future__ import annotations

from servekit.package.evidence import ServeConfig
from servekit.package.models import Figure, Provenance, Speedup
from servekit.package.rules.context import Context
from servekit.package.rules.engines import load_settings, not_stock
from servekit.package.rules.registry import Findings, RuleId, finding, rule

MIN_CONTRACT_PCT = 2.0  # the seeds' contract: smaller end-to-end gains are noise


def _pair(ctx: Context, s: Speedup) -> tuple[Figure, Figure] | None:
    fig, base = ctx.package.figure(s.figure), ctx.package.figure(s.baseline)
    return (fig, base) if fig is not None and base is not None else None


def _gain(fig: Figure, base: Figure) -> float | None:
    """Relative improvement (lower is better for latencies); None when undefined."""
    if fig.value <= 0 or base.value <= 0:
        return None
    return (
        (base.value / fig.value - 1)
        if not fig.metric.is_throughput
        else (fig.value / base.value - 1)
    )


@rule(
    RuleId.SPEEDUP_BASELINE,
    "A speedup needs a stock baseline on the same workload, engine and hardware, and clears the improvement contract.",
    "No speedup is claimed without a stock baseline that served the model (K3: none exists).",
)
def speedup_baseline(ctx: Context) -> Findings:
    contract = ctx.package.measurements.improvement_contract_pct
    for i, s in enumerate(ctx.package.measurements.speedups):
        where, pair = f"measurements.speedups[{i}]", _pair(ctx, s)
        if pair is None:
            yield finding(RuleId.SPEEDUP_BASELINE, where, f"speedup '{s.id}' names a figure or baseline that "
                          "does not exist", "point figure and baseline at figure ids")  # fmt: skip
            continue
        fig, base = pair
        problem, fix = _speedup_problem(s, fig, base, contract)
        if problem:
            yield finding(RuleId.SPEEDUP_BASELINE, where, problem, fix, (fig.id, base.id))


def _speedup_problem(s: Speedup, fig: Figure, base: Figure, contract: float) -> tuple[str, str]:
    if not s.baseline_is_stock or base.provenance is not Provenance.MEASURED:
        return (f"speedup '{s.id}' has no measured stock baseline",
                "measure the stock configuration on the same grid, or drop the speedup")  # fmt: skip
    if fig.provenance is not Provenance.MEASURED:
        return (f"speedup '{s.id}' compares a reported figure with a measurement",
                "measure the optimized configuration too, on the same grid")  # fmt: skip
    same = (fig.measured_on, fig.metric, fig.statistic, fig.concurrency, fig.scope)
    if same != (base.measured_on, base.metric, base.statistic, base.concurrency, base.scope):
        return (f"speedup '{s.id}' compares figures from different workloads, engines, "
                "hardware or metrics",
                "compare the same metric on the same workload, engine build and hardware")  # fmt: skip
    gain = _gain(fig, base)
    if gain is None:
        return (f"speedup '{s.id}' divides by a figure that is not positive",
                "a speedup needs two positive figures")  # fmt: skip
    if abs(gain * 100 - s.value_pct) > 0.05:
        return (f"speedup '{s.id}' states {s.value_pct:g} % but the figures give {gain * 100:.2f} %",
                f"set value_pct to {gain * 100:.1f}")  # fmt: skip
    if contract < MIN_CONTRACT_PCT:
        return (f"the improvement contract of {contract:g} % is below servekit's {MIN_CONTRACT_PCT:g} %",
                f"keep improvement_contract_pct at {MIN_CONTRACT_PCT:g} or above")  # fmt: skip
    if s.value_pct < contract:
        return (f"speedup '{s.id}' of {s.value_pct:g} % is below the {contract:g} % improvement "
                "contract", "do not claim a speedup below the contract")  # fmt: skip
    return "", ""


def _contract(ctx: Context, run_id: str, concurrency: int) -> tuple[object, ...] | None:
    ev = ctx.evidence(run_id) if ctx.package.run(run_id) else None
    if ev is None:
        return None
    measured = ev.measured(concurrency)
    prompts = tuple(sorted(r.requested_prompt_tokens or r.prompt_tokens or 0 for r in measured))
    outputs = tuple(sorted({r.requested_output_tokens for r in measured}, key=str))
    return ev.header.seed, prompts, outputs, ev.header.gpus


@rule(
    RuleId.SPEEDUP_SAME_CONTRACT,
    "Baseline and optimized records share the workload: same seed, same prompt lengths, same "
    "output tokens, same GPUs, and achieved concurrency within the tolerance of each other.",
    "A speedup is the same requests served two ways, not two different workloads.",
)
def speedup_same_contract(ctx: Context) -> Findings:
    tol = ctx.package.measurements.concurrency_tolerance_pct
    for i, s in enumerate(ctx.package.measurements.speedups):
        pair = _pair(ctx, s)
        if pair is None or not pair[0].runs or not pair[1].runs:
            continue
        fig, base = pair
        a, b = fig.runs[0], base.runs[0]
        ca, cb = _contract(ctx, a, fig.concurrency), _contract(ctx, b, base.concurrency)
        ka, kb = ctx.achieved(a, fig.concurrency), ctx.achieved(b, base.concurrency)
        loads_differ = ka is None or kb is None or abs(ka - kb) > max(ka, kb) * tol / 100
        if ca is None or cb is None or ca != cb or loads_differ:
            yield finding(
                RuleId.SPEEDUP_SAME_CONTRACT, f"measurements.speedups[{i}]",
                f"speedup '{s.id}': runs {a} and {b} did not send the same requests at the same "
                "load (seed, prompt lengths, output tokens, GPUs, achieved concurrency)",
                "measure baseline and optimized with the same `bench run` workload and seed",
                (fig.id, base.id),
            )  # fmt: skip


@rule(
    RuleId.STOCK_BASELINE,
    "A stock baseline's runs record their serve configuration (v2 header; runs[].serve for a "
    "v1 or imported file), "
    "and it differs from the engine's defaults only by the documented load-needed flags.",
    "`baseline_is_stock` is shown, not declared: a tuned baseline makes any speedup a fiction.",
)
def stock_baseline(ctx: Context) -> Findings:
    engine = ctx.package.engine.name
    for i, s in enumerate(ctx.package.measurements.speedups):
        pair = _pair(ctx, s)
        if pair is None or not s.baseline_is_stock:
            continue
        optimized = _serve_configs(ctx, pair[0].runs)
        for run_id in pair[1].runs:
            run = ctx.package.run(run_id)
            serve = ctx.serve_of(run) if run else None
            why = ["no serve configuration recorded"] if serve is None else not_stock(engine, serve)
            if serve is not None and not why:
                why = _load_differs(serve, optimized)
            if why:
                yield finding(
                    RuleId.STOCK_BASELINE, f"measurements.speedups[{i}].baseline_is_stock",
                    f"baseline run {run_id} is not shown to be stock {engine}: {', '.join(why)}",
                    "record the baseline's serve command (`bench run --serve-command`) and run "
                    "it with the engine's defaults", (pair[0].id, pair[1].id),
                )  # fmt: skip


def _serve_configs(ctx: Context, run_ids: tuple[str, ...]) -> list[ServeConfig | None]:
    return [ctx.serve_of(run) if (run := ctx.package.run(r)) else None for r in run_ids]


def _load_differs(baseline: ServeConfig, optimized: list[ServeConfig | None]) -> list[str]:
    """A load-needed setting the baseline gives must be the optimized runs' own: a stock
    baseline starved of memory, context or GPUs (``--gpu-memory-utilization 0.3``,
    ``-tp 1``) is not the engine's defaults on the same hardware."""
    if not optimized or any(o is None for o in optimized):
        return [
            "the optimized runs record no serve configuration to compare its load settings with"
        ]
    out = []
    for name, value in load_settings(baseline.argv).items():
        theirs = {load_settings(o.argv).get(name, "(unset)") for o in optimized if o is not None}
        if theirs != {value}:
            shown = ", ".join(sorted(str(t) for t in theirs))
            out.append(f"load setting {name} {value or ''} where the optimized runs have {shown}")
    return out
