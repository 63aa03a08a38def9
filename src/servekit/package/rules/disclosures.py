"""Disclosures: what the records did not exercise (modalities, context) and what they did
not measure (a simulator) is said, in the package, where a buyer reads it."""

from __future__ import annotations

from servekit.package.evidence import Evidence
from servekit.package.models import DisclosureTopic, Modality, Provenance
from servekit.package.rules.context import Context
from servekit.package.rules.engines import engine_key
from servekit.package.rules.registry import Findings, RuleId, finding, rule

SIM_ENGINE = "servekit-sim"  # what servekit's simulator calls itself on /version


def exercised_modalities(ctx: Context) -> set[str]:
    """Modalities the successful measured records sent: v2 content parts; v1 records are text
    only. A failed request or a warmup exercised no path that a figure measured."""
    out: set[str] = set()
    for _, _, ev in ctx.runs_with_evidence():
        for r in ev.requests:
            if not r.ok or r.warmup:
                continue
            out |= set(r.content_parts) if r.content_parts is not None else {Modality.TEXT.value}
    return out


def stated_modalities(ctx: Context) -> set[str]:
    """Modalities the sources of published reported figures state their requests carried (a
    source that states none characterizes none)."""
    return {
        m.value
        for f in ctx.package.published_figures
        if f.provenance is Provenance.REPORTED and f.source and f.source.workload
        for m in f.source.workload.modalities or ()
    }


@rule(
    RuleId.MODALITY_DISCLOSURE,
    "A modality the model has but no measured record carried, and no reported figure's "
    "source states, has a disclosure.",
    "The vision path that was never measured is disclosed (K3's MoonViT tower).",
)
def modality_disclosure(ctx: Context) -> Findings:
    pkg = ctx.package
    exercised = exercised_modalities(ctx) | stated_modalities(ctx)
    for comp in pkg.model.modalities:
        m = comp.modality.value
        if m not in exercised and not ctx.disclosed(DisclosureTopic.MODALITY, m):
            yield finding(
                RuleId.MODALITY_DISCLOSURE, "disclosures",
                f"the model has a {m} path ({comp.component or 'no component named'}) that no "
                "measured record carried and no reported figure's source states",
                f"add a disclosure with topic: modality, subject: {m} (not characterized), or "
                "state the modalities of a reported figure's source (source.workload.modalities)",
            )  # fmt: skip


def covered_context(ctx: Context) -> int:
    """Longest prompt + output the successful measured records carried (a warmup is in no
    figure); the declared workloads when there are no runs."""
    longest = 0
    for _, _, ev in ctx.runs_with_evidence():
        for r in ev.requests:
            if r.ok and not r.warmup:
                longest = max(longest, (r.prompt_tokens or 0) + (r.completion_tokens or 0))
    if longest or ctx.current_runs():
        return longest
    return max(
        min(w.prompt_tokens.max + w.output_tokens, w.context_length) for w in ctx.package.workloads
    )


@rule(
    RuleId.CONTEXT_DISCLOSURE,
    "A supported context longer than the longest prompt plus output the records carried has a disclosure.",
    "Long context that was not measured is disclosed (1M supported, 36K measured).",
)
def context_disclosure(ctx: Context) -> Findings:
    pkg = ctx.package
    covered = covered_context(ctx)
    if pkg.model.context_length > covered and not ctx.disclosed(DisclosureTopic.CONTEXT):
        yield finding(
            RuleId.CONTEXT_DISCLOSURE, "disclosures",
            f"the model supports {pkg.model.context_length} tokens of context; the records "
            f"covered at most {covered}",
            "add a disclosure with topic: context saying what was not measured",
        )  # fmt: skip
    if Modality.TEXT not in {m for w in pkg.workloads for m in w.modalities}:
        yield finding(
            RuleId.CONTEXT_DISCLOSURE,
            "workloads",
            "no workload exercises text",
            "declare the workload's modalities",
        )


def is_simulator(ev: Evidence) -> bool:
    """The header says so, or the engine it names is servekit's simulator."""
    named = f"{ev.header.engine_name or ''} {ev.header.engine_version or ''}"
    return ev.header.simulator or SIM_ENGINE in named.lower().replace("_", "-")


@rule(
    RuleId.SIMULATOR_DISCLOSURE,
    "Figures measured against servekit's simulator are disclosed as such.",
    "Simulator output is never presented as a measurement of a real engine.",
)
def simulator_disclosure(ctx: Context) -> Findings:
    pkg = ctx.package
    simulated = (
        any(r.simulator for r in ctx.current_runs())
        or engine_key(pkg.engine.name) == SIM_ENGINE
        or any(is_simulator(ev) for _, _, ev in ctx.runs_with_evidence())
    )
    if simulated and not ctx.disclosed(DisclosureTopic.SIMULATOR):
        yield finding(
            RuleId.SIMULATOR_DISCLOSURE, "disclosures", "runs were measured against servekit's simulator, not a real engine",
            "add a disclosure with topic: simulator; never present these as engine measurements",
        )  # fmt: skip
