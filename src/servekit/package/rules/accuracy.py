"""Accuracy: recovery only from two scores; "by construction" only when nothing changes
numerics; a cross-server agreement score only beside its same-server control."""

from __future__ import annotations

from servekit.package.models import AccuracyMethod
from servekit.package.rules.context import Context
from servekit.package.rules.engines import numerics_changes
from servekit.package.rules.registry import Findings, RuleId, finding, rule

SAME_SERVER = "same_server_agreement"


@rule(
    RuleId.ACCURACY_RECOVERY,
    "Accuracy recovery and delta only when both a baseline and an optimized score exist, and they match them.",
    "No recovery percentage without the two scores it divides.",
)
def accuracy_recovery(ctx: Context) -> Findings:
    acc = ctx.package.accuracy
    both = acc.baseline is not None and acc.optimized is not None
    if (acc.recovery_pct is not None or acc.delta is not None) and not both:
        yield finding(RuleId.ACCURACY_RECOVERY, "accuracy.recovery_pct",
                      "a recovery or delta is stated without both a baseline and an optimized score",
                      "publish both scores, or remove recovery_pct/delta and state absent_reason")  # fmt: skip
    if both and acc.recovery_pct is not None and (acc.baseline or 0) <= 0:
        yield finding(RuleId.ACCURACY_RECOVERY, "accuracy.recovery_pct", f"a recovery is stated over a baseline "
                      f"score of {acc.baseline:g}, which nothing can be divided by",
                      "publish the two scores and a delta, without recovery_pct")  # fmt: skip
    if acc.baseline and acc.optimized is not None:
        recovery = acc.optimized / acc.baseline * 100
        if acc.recovery_pct is not None and abs(recovery - acc.recovery_pct) > 0.05:
            yield finding(RuleId.ACCURACY_RECOVERY, "accuracy.recovery_pct",
                          f"recovery {acc.recovery_pct:g} % is not optimized/baseline = {recovery:.2f} %",
                          "recompute recovery_pct")  # fmt: skip
        if acc.delta is not None and abs(acc.optimized - acc.baseline - acc.delta) > 1e-6:
            yield finding(RuleId.ACCURACY_RECOVERY, "accuracy.delta", f"delta {acc.delta:g} is not optimized - "
                          "baseline", "recompute delta")  # fmt: skip
    if not both and not acc.absent_reason:
        yield finding(RuleId.ACCURACY_RECOVERY, "accuracy.absent_reason", "no baseline/optimized pair and no "
                      "reason given", "state absent_reason: why there is no recovery figure")  # fmt: skip


@rule(
    RuleId.BY_CONSTRUCTION,
    "'By construction' only when no weight byte changed, no kernel or runtime stage is "
    "applied, and no serve flag changes numerics at runtime (the documented per-engine list).",
    "Parity by construction means the served numbers are upstream's own; an FP8 KV cache is not.",
)
def by_construction(ctx: Context) -> Findings:
    acc, engine = ctx.package.accuracy, ctx.package.engine.name
    if acc.method is not AccuracyMethod.BY_CONSTRUCTION:
        return
    if acc.weights_modified or ctx.package.model.quantized_by_publisher:
        yield finding(RuleId.BY_CONSTRUCTION, "accuracy.method", "'by construction' is claimed but weights "
                      "were modified", "measure accuracy against the upstream build instead")  # fmt: skip
    if acc.runtime_stages_applied:
        yield finding(RuleId.BY_CONSTRUCTION, "accuracy.runtime_stages_applied",
                      f"'by construction' is claimed but stages are applied: "
                      f"{', '.join(acc.runtime_stages_applied)}", "measure accuracy, or remove the stages")  # fmt: skip
    for where, argv in ctx.serve_argvs():
        changes = numerics_changes(engine, argv)
        if changes:
            yield finding(RuleId.BY_CONSTRUCTION, "accuracy.method",
                          f"'by construction' is claimed but the {where} configuration changes "
                          f"numerics at runtime: {', '.join(changes)}",
                          "measure accuracy against the upstream configuration")  # fmt: skip


@rule(
    RuleId.AGREEMENT_INFORMATIONAL,
    "A cross-server agreement score needs its same-server control, and is informational only when that control shows the method unsound.",
    "An agreement score is no accuracy evidence when two identical servers agree only 78 %.",
)
def agreement_informational(ctx: Context) -> Findings:
    acc = ctx.package.accuracy
    if acc.cross_server_agreement is None:
        return
    controls = [c for c in acc.controls if c.kind == SAME_SERVER and c.value_pct is not None]
    if not controls:
        yield finding(RuleId.AGREEMENT_INFORMATIONAL, "accuracy.controls",
                      "a cross-server agreement score is published without a same-server control",
                      f"add a control of kind {SAME_SERVER} with its value (two identical servers)")  # fmt: skip
    cross = acc.cross_server_agreement.value_pct
    # shown, not declared: a method that agrees with the same server no better than with
    # the other one cannot tell them apart, whatever shows_method_unsound says
    unsound = any(c.shows_method_unsound for c in acc.controls) or any(
        c.value_pct <= cross for c in controls if c.value_pct is not None
    )
    if unsound and not acc.cross_server_agreement.informational:
        yield finding(RuleId.AGREEMENT_INFORMATIONAL, "accuracy.cross_server_agreement.informational",
                      "a cross-server agreement score is presented as accuracy evidence although a "
                      "same-server control shows the method cannot tell a server from itself",
                      "mark it informational: true, or drop it")  # fmt: skip
