"""``servekit bench summary``: every metric per (run, concurrency), with vLLM's key names.

The numbers come from :mod:`servekit.package.stats`, the same code the claim rules
recompute figures with; this module only arranges them, counts flags (failures,
length mismatches, prompt-length drift, client-counted tokens, simulator) and checks
that repeated runs agree within a tolerance.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from servekit.bench.manifest import select_evidence
from servekit.errors import UsageError
from servekit.package.evidence import Evidence, RequestRecord, load_evidence
from servekit.package.models import Metric, Scope, Statistic
from servekit.package.stats import (
    GroupSummary,
    figure_value,
    request_metrics,
    statistic,
    summarize,
)

DRIFT_PCT = 2.0  # server-counted prompt length this far from the requested one is flagged
_LATENCIES = (Metric.TTFT, Metric.TPOT, Metric.ITL, Metric.E2EL)
_STATS = (("mean", Statistic.MEAN), ("median", Statistic.MEDIAN), ("p99", Statistic.P99))
AGREEMENT_KEYS = (
    "median_ttft_ms",
    "median_tpot_ms",
    "median_itl_ms",
    "median_e2el_ms",
    "output_throughput",
    "request_throughput",
)
SLO_METRICS = ("ttft", "tpot", "e2el")


@dataclass(frozen=True)
class GroupReport:
    """One (run, concurrency) group of one evidence file."""

    file: str
    run: str
    concurrency: int
    gpus: int
    simulator: bool
    usage_source: str
    summary: GroupSummary
    prompt_drift: int
    goodput: float | None

    def metrics(self) -> dict[str, float | int | None]:
        """vLLM ``bench serve`` key names, plus the per-GPU output throughput."""
        s = self.summary
        out: dict[str, float | int | None] = {
            "completed": s.completed,
            "failed": s.failed,
            "duration": s.duration_s,
            "total_input_tokens": s.total_input_tokens,
            "total_output_tokens": s.total_output_tokens,
        }
        for metric in (
            Metric.REQUEST_THROUGHPUT,
            Metric.OUTPUT_THROUGHPUT,
            Metric.TOTAL_TOKEN_THROUGHPUT,
        ):
            out[metric.value] = figure_value(s, metric, Statistic.VALUE, Scope.NODE, self.gpus)
        out["output_throughput_per_gpu"] = figure_value(
            s, Metric.OUTPUT_THROUGHPUT, Statistic.VALUE, Scope.PER_GPU, self.gpus
        )
        if self.goodput is not None:
            out["request_goodput"] = self.goodput
        for metric in _LATENCIES:
            samples = s.samples(metric)
            for name, stat in _STATS:
                out[f"{name}_{metric.value}_ms"] = statistic(samples, stat) if samples else None
        return out

    @property
    def flags(self) -> tuple[str, ...]:
        s = self.summary
        found = []
        if self.simulator:
            found.append("simulator")
        if s.failed:
            found.append(f"{s.failed} failed")
        if s.length_mismatches:
            found.append(f"{s.length_mismatches} output-length mismatches")
        if self.prompt_drift:
            found.append(f"{self.prompt_drift} prompt-length drifts over {DRIFT_PCT:g} %")
        if self.usage_source != "server":
            found.append(f"token counts: {self.usage_source}")
        return tuple(found)


@dataclass(frozen=True)
class Agreement:
    """How far each run is from the first run at one concurrency."""

    concurrency: int
    runs: tuple[str, ...]
    max_difference_pct: dict[str, float]
    tolerance_pct: float

    @property
    def agree(self) -> bool:
        return all(v <= self.tolerance_pct for v in self.max_difference_pct.values())


@dataclass(frozen=True)
class SummaryReport:
    groups: tuple[GroupReport, ...]
    agreements: tuple[Agreement, ...]
    notes: tuple[str, ...] = ()
    """What was left out of the summary and why (stale files, unfinished runs)."""

    def agreement(self, concurrency: int) -> Agreement | None:
        return next((a for a in self.agreements if a.concurrency == concurrency), None)

    def failed_share(self) -> tuple[int, int]:
        """(failed, all) measured requests over every group."""
        failed = sum(g.summary.failed for g in self.groups)
        return failed, failed + sum(g.summary.completed for g in self.groups)

    def as_json(self) -> list[dict[str, object]]:
        """One object per (run, concurrency)."""
        out = []
        for g in self.groups:
            agreement = self.agreement(g.concurrency)
            obj: dict[str, object] = {"run": g.run, "concurrency": g.concurrency, "gpus": g.gpus}
            obj |= {"simulator": g.simulator, "file": g.file}
            obj |= g.metrics()
            obj |= {"length_mismatches": g.summary.length_mismatches}
            obj |= {"prompt_length_drifts": g.prompt_drift, "usage_source": g.usage_source}
            obj["runs_agree"] = agreement.agree if agreement else None
            obj["flags"] = list(g.flags)
            out.append(obj)
        return out


def parse_slos(text: str | None) -> dict[str, float]:
    """``ttft:500,tpot:50`` as a mapping of milliseconds (vLLM's --goodput form)."""
    if not text:
        return {}
    slos = {}
    for part in text.replace(" ", ",").split(","):
        if not part:
            continue
        name, _, value = part.partition(":")
        try:
            slos[name] = float(value)
        except ValueError:
            slos[name] = -1.0
        if name not in SLO_METRICS or slos[name] < 0:
            raise UsageError(
                f"bad SLO '{part}'", hint="use ttft:MS, tpot:MS or e2el:MS, comma-separated"
            )
    return slos


def goodput(
    records: Sequence[RequestRecord], summary: GroupSummary, slos: Mapping[str, float]
) -> float:
    """Requests per second that completed within every SLO (vLLM's ``request_goodput``)."""
    good = 0
    for r in records:
        if not r.ok:
            continue
        ttft, tpot, e2el = request_metrics(r)
        values = {"ttft": ttft, "tpot": tpot if tpot is not None else 0.0, "e2el": e2el}
        good += all(values[name] <= limit for name, limit in slos.items())
    return good / summary.duration_s if summary.duration_s > 0 else 0.0


def _drift(records: Sequence[RequestRecord]) -> int:
    count = 0
    for r in records:
        if r.ok and r.usage_source == "server" and r.requested_prompt_tokens and r.prompt_tokens:
            gap = abs(r.prompt_tokens - r.requested_prompt_tokens)
            count += gap > max(1.0, r.requested_prompt_tokens * DRIFT_PCT / 100)
    return count


def group_report(ev: Evidence, concurrency: int, slos: Mapping[str, float]) -> GroupReport:
    summary = summarize(ev.requests, concurrency)
    measured = ev.measured(concurrency)
    return GroupReport(
        file=ev.path,
        run=ev.header.run,
        concurrency=concurrency,
        gpus=ev.header.gpus,
        simulator=ev.header.simulator,
        usage_source=ev.header.usage_source,
        summary=summary,
        prompt_drift=_drift(measured),
        goodput=goodput(measured, summary, slos) if slos else None,
    )


def _agreements(groups: Sequence[GroupReport], tolerance_pct: float) -> tuple[Agreement, ...]:
    out = []
    for concurrency in sorted({g.concurrency for g in groups}):
        same = [g for g in groups if g.concurrency == concurrency]
        if len(same) < 2:
            continue
        first = same[0].metrics()
        worst: dict[str, float] = {}
        for key in AGREEMENT_KEYS:
            base = first[key]
            for other in same[1:]:
                value = other.metrics()[key]
                if base is None or value is None:
                    continue
                diff = abs(value - base) / abs(base) * 100 if base else float("inf")
                worst[key] = max(worst.get(key, 0.0), diff)
        runs = tuple(g.run for g in same)
        out.append(Agreement(concurrency, runs, worst, tolerance_pct))
    return tuple(out)


def summarize_path(
    path: Path | Sequence[Path],
    *,
    tolerance_pct: float = 2.0,
    slos: Mapping[str, float] | None = None,
) -> SummaryReport:
    """Summarize evidence files, or the files each directory's manifest names
    (:func:`servekit.bench.manifest.select_evidence`); the report's notes say what was
    left out."""
    selection = select_evidence([path] if isinstance(path, Path) else path)
    report = summarize_files(selection.files, tolerance_pct=tolerance_pct, slos=slos)
    return replace(report, notes=selection.notes)


def summarize_files(
    files: Sequence[Path], *, tolerance_pct: float = 2.0, slos: Mapping[str, float] | None = None
) -> SummaryReport:
    """Summarize exactly ``files`` (``bench run`` passes the files it wrote, never others
    that happen to lie in ``--out``)."""
    groups: list[GroupReport] = []
    for file in files:
        ev = load_evidence(file)
        groups.extend(group_report(ev, c, slos or {}) for c in ev.concurrencies if ev.measured(c))
    return SummaryReport(tuple(groups), _agreements(groups, tolerance_pct))
