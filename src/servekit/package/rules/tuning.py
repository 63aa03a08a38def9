"""Tuning: a figure or speedup of ``servekit tune`` rests on confirmation runs, never on the
search's selection runs (the best of N noisy measurements is mostly the luckiest); a tuned
configuration that changes numerics needs a measured accuracy check."""

from __future__ import annotations

from servekit.package.confirmation import verdict
from servekit.package.evidence import TuneRole
from servekit.package.models import AccuracyMethod, Figure, GateResult
from servekit.package.rules.context import Context
from servekit.package.rules.engines import numerics_changes
from servekit.package.rules.registry import Findings, RuleId, finding, rule


def _role(ctx: Context, run_id: str) -> TuneRole | None:
    ev = ctx.evidence(run_id)
    mark = ev.header.tune if ev is not None else None
    return mark.role if mark is not None else None


@rule(
    RuleId.CONFIRMATION_NOT_SELECTION,
    "A figure never rests on a tuning search's selection run; a speedup over stock from a "
    "tuning session rests on its confirmation runs only, and those clear the exact one-sided "
    "permutation test (alpha 0.05, 4 runs a side at least) and the improvement contract.",
    "The winner of a search is never published from its search runs.",
)
def confirmation_not_selection(ctx: Context) -> Findings:
    for where, f in ctx.measured_figures():
        for run_id in f.runs:
            if ctx.package.run(run_id) is not None and _role(ctx, run_id) is TuneRole.SELECTION:
                yield finding(
                    RuleId.CONFIRMATION_NOT_SELECTION, f"{where}.runs",
                    f"'{f.label}' rests on run {run_id}, a selection run of servekit tune: the "
                    "search picked it as the best of its candidates, which measures luck as much "
                    "as the configuration", "publish the figure from the confirmation runs",
                    (f.id,),
                )  # fmt: skip
    for i, s in enumerate(ctx.package.measurements.speedups):
        fig, base = ctx.package.figure(s.figure), ctx.package.figure(s.baseline)
        if fig is None or base is None:
            continue
        runs = [*fig.runs, *base.runs]
        roles = {_role(ctx, r) for r in runs if ctx.package.run(r) is not None}
        if roles == {None}:
            continue  # not a tuning session's speedup
        where = f"measurements.speedups[{i}]"
        if roles != {TuneRole.CONFIRMATION}:
            yield finding(RuleId.CONFIRMATION_NOT_SELECTION, where, f"speedup '{s.id}' mixes runs that are not confirmation runs "
                          "of servekit tune with its confirmation runs", "rest it on confirmation runs only",
                          (fig.id, base.id))  # fmt: skip
            continue
        yield from _confirmed(ctx, where, s.id, s.value_pct, fig, base)


def _confirmed(
    ctx: Context, where: str, sid: str, value_pct: float, fig: Figure, base: Figure
) -> Findings:
    tuned = [v for r in fig.runs if (v := ctx.recompute(fig, r)) is not None]
    stock = [v for r in base.runs if (v := ctx.recompute(base, r)) is not None]
    contract = ctx.package.measurements.improvement_contract_pct
    claimed, gain, _, why = verdict(
        stock, tuned, higher_is_better=fig.metric.is_throughput, contract_pct=contract
    )
    if not claimed:
        yield finding(RuleId.CONFIRMATION_NOT_SELECTION, where, f"speedup '{sid}' is not carried by its confirmation runs: {why}",
                      "do not claim it; the package says the tuned configuration is not shown to beat stock",
                      (fig.id, base.id))  # fmt: skip
    elif value_pct > gain + 0.05:
        yield finding(RuleId.CONFIRMATION_NOT_SELECTION, where, f"speedup '{sid}' states {value_pct:g} %, more than the {gain:.2f} % "
                      "its confirmation runs carry on average", "state the cautious pair's improvement",
                      (fig.id, base.id))  # fmt: skip


@rule(
    RuleId.TUNED_NUMERICS_MEASURED,
    "A run of servekit tune whose serve command changes numerics (a flag on the engine's "
    "numerics list, as `--allow-numerics` permits) beyond what the same session's stock runs "
    "ran with backs figures only when accuracy was measured against stock and its gate passed.",
    "A faster configuration that may change outputs is not published without an accuracy check.",
)
def tuned_numerics_measured(ctx: Context) -> Findings:
    acc = ctx.package.accuracy
    if acc.method is AccuracyMethod.MEASURED and acc.gate is GateResult.PASSED:
        return
    engine = ctx.package.engine.name
    stock: dict[str, set[str]] = {}  # session -> the numerics changes every stock run made
    for _, _, ev in ctx.runs_with_evidence():
        mark, serve = ev.header.tune, ev.header.serve
        if mark is not None and serve is not None and mark.candidate == "stock":
            made = set(numerics_changes(engine, serve.argv))
            stock[mark.session] = stock.get(mark.session, made) & made
    for where, run, ev in ctx.runs_with_evidence():
        figures = ctx.figures_using(run.id)
        if ev.header.tune is None or ev.header.serve is None or not figures:
            continue
        # what stock ran with too (the weights a session loads, --load-format dummy) is not
        # the tuned configuration's doing; the accuracy rules read it (SK108)
        shared = stock.get(ev.header.tune.session, set())
        changes = [c for c in numerics_changes(engine, ev.header.serve.argv) if c not in shared]
        if changes:
            yield finding(
                RuleId.TUNED_NUMERICS_MEASURED, f"{where}.file",
                f"run {run.id} of servekit tune ran {', '.join(changes)}, which can change "
                f"outputs; accuracy is {acc.method.value} with gate {acc.gate.value}",
                "measure accuracy against stock (accuracy.method: measured, gate: passed) "
                "before publishing this configuration's figures", figures,
            )  # fmt: skip
