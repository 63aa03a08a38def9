"""What every rule reads: the loaded package, its evidence (loaded once per run) and one
summary per (run, concurrency), with small helpers the rule families share."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property

from servekit.package.evidence import Evidence, ServeConfig, read_evidence
from servekit.package.load import LoadedPackage
from servekit.package.models import (
    DisclosureTopic,
    Figure,
    Package,
    Provenance,
    Run,
    Workload,
)
from servekit.package.rules.engines import ANSWERS_VERSION, engine_key
from servekit.package.stats import GroupSummary, achieved_concurrency, figure_value, summarize


@dataclass
class Context:
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

    def run_field(self, run_id: str) -> str:
        runs = self.package.measurements.runs
        return next((f"measurements.runs[{i}]" for i, r in enumerate(runs) if r.id == run_id), "")

    def evidence(self, run_id: str) -> Evidence | None:
        """A current run's evidence, loaded once. A retracted run is evidence for nothing,
        so no rule reads it: its file is never opened (docs/rules.md promises it, and
        tests/package/rules/test_registry.py holds every rule to it)."""
        run = self.package.run(run_id)
        if run is None or not run.current:
            return None
        if run_id not in self._evidence:
            self._evidence[run_id] = read_evidence(self.loaded.source, run.file)
        return self._evidence[run_id]

    def runs_with_evidence(self) -> Iterator[tuple[str, Run, Evidence]]:
        """(field path, run, evidence) of every current run (a retracted run is evidence
        for nothing, so no rule reads it)."""
        for i, run in enumerate(self.package.measurements.runs):
            ev = self.evidence(run.id)
            if ev is not None:
                yield f"measurements.runs[{i}]", run, ev

    @property
    def engine_answers(self) -> bool:
        """Whether the package's engine answers ``/version`` (rules/engines.py's list)."""
        return engine_key(self.package.engine.name) in ANSWERS_VERSION

    def current_runs(self) -> tuple[Run, ...]:
        """The runs any rule may read: every run not retracted."""
        return tuple(r for r in self.package.measurements.runs if r.current)

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
            got = figure_value(summary, fig.metric, fig.statistic, fig.scope, ev.header.gpus)
        except ValueError:
            return None
        return got if math.isfinite(got) else None

    def achieved(self, run_id: str, concurrency: int) -> float | None:
        ev = self.evidence(run_id) if self.package.run(run_id) else None
        return achieved_concurrency(ev.measured(concurrency), concurrency) if ev else None

    def measured_figures(self) -> Iterator[tuple[str, Figure]]:
        for f in self.package.published_figures:
            if f.provenance is Provenance.MEASURED:
                yield self.figure_fields[f.id], f

    def figures_using(self, run_id: str) -> tuple[str, ...]:
        return tuple(f.id for _, f in self.measured_figures() if run_id in f.runs)

    def disclosed(self, topic: DisclosureTopic, subject: str | None = None) -> bool:
        return any(
            d.topic is topic and (subject is None or d.subject == subject)
            for d in self.package.disclosures
        )

    def workload_of(self, run: Run) -> Workload | None:
        return self.package.workload(run.workload)

    def serve_argvs(self) -> list[tuple[str, tuple[str, ...]]]:
        """(where, argument vector) of the package's serve command (its environment as
        ``NAME=value`` words) and of every current run's recorded serve configuration."""
        pkg = self.package
        serve_env = tuple(f"{e.name}={e.value}" for e in pkg.serve.env)
        out = [("serve", (*pkg.serve.entrypoint, *pkg.serve.args, *serve_env))]
        for run in self.current_runs():
            recorded = self.serve_of(run)
            if recorded is not None:
                env = tuple(f"{k}={v}" for k, v in recorded.env.items())
                out.append((f"run {run.id}", (*recorded.argv, *env)))
        return out

    def serve_of(self, run: Run) -> ServeConfig | None:
        """The serve configuration a run recorded (v2 header); for a file that cannot record
        one (v1, or imported from another harness) the one the package declares for it
        (``runs[].serve``); else None. A v2 file ``bench run`` wrote with no serve
        configuration gets no stand-in: a declaration never replaces a recorded value."""
        ev = self.evidence(run.id)
        if ev is not None and ev.header.serve is not None:
            return ev.header.serve
        if ev is not None and ev.version >= 2 and ev.header.imported_from is None:
            return None
        if run.serve is not None:
            env = {e.name: e.value for e in run.serve.env}
            return ServeConfig(argv=run.serve.argv, env=env, source="package.yaml runs[].serve")
        return None
