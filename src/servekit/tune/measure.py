"""Measure one configuration: start its engine, run ``bench run`` once on the contract,
stop the engine, score the evidence the same way the claim rules recompute figures."""

from __future__ import annotations

import math
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from servekit.bench.runner import RunConfig, run_benchmark
from servekit.engines import EngineSpec, FlagValue, engine
from servekit.errors import BenchError, RunInterruptedError
from servekit.package.evidence import Evidence, ServeConfig, TuneMark, TuneRole, load_evidence
from servekit.package.stats import figure_value, summarize
from servekit.tune.launch import StartFailedError, free_port, running
from servekit.tune.models import TuneConfig


class StoppedError(Exception):
    """SIGTERM arrived (a ``timeout`` around the session): the engine running is stopped by
    its context, and the session writes the draft of what it measured. A SIGTERM while a
    benchmark runs reaches the session as this too (the benchmark's own handler turns it
    into :class:`RunInterruptedError`), not as one failed candidate."""


class _Quiet:
    """The harness's per-run progress is not shown: the tuner draws its own bar."""

    def advance(self, amount: float) -> None:
        return None

    def phase(self, description: str, total: int | None) -> None:
        return None


@dataclass(frozen=True)
class Measured:
    """One run of one configuration: its score, or why there is none."""

    score: float | None
    reason: str | None
    run_file: Path | None
    seconds: float


class Measurer:
    """Runs configurations of one tuning session, numbering engine starts."""

    def __init__(self, config: TuneConfig, session: str) -> None:
        self.config = config
        self.spec: EngineSpec = engine(config.engine)
        self.session = session
        self.starts = 0

    def served(self) -> str:
        """The model name clients send: the served name, or the model path for an engine
        without a served-name flag."""
        return self.config.served_name if self.spec.served_name_flag else str(self.config.model_dir)

    def argv(self, flags: dict[str, FlagValue], port: int) -> tuple[str, ...]:
        c = self.config
        return self.spec.serve_argv(str(c.model_dir), flags, port=port, served_name=c.served_name,
                                    extra=(*c.space.fixed, *c.space.shared))  # fmt: skip

    def _env(self) -> dict[str, str]:
        """The space's environment, recorded in each run; a simulated host also draws its
        noise per start (see servekit.engines.sim)."""
        name = self.spec.noise_seed_env
        return {
            **self.config.space.env,
            **({name: f"{self.config.seed}:{self.starts}"} if name else {}),
        }

    def measure(
        self, flags: dict[str, FlagValue], run_file: Path, role: TuneRole, candidate: str
    ) -> Measured:
        """Start, measure once, stop; the engine's log is kept beside the run file."""
        began, port = time.monotonic(), free_port()
        self.starts += 1
        argv, env = self.argv(flags, port), self._env()
        log = run_file.with_suffix(".engine.log")
        try:
            with running(self.spec, argv, env, port, log, self.config.startup_timeout_s) as url:
                mark = TuneMark(role=role, session=self.session, candidate=candidate)
                evidence = self._bench(
                    url, ServeConfig(argv=argv, env=env, source="servekit tune"), run_file, mark
                )
        except RunInterruptedError as exc:  # SIGTERM while measuring: the session stops
            raise StoppedError from exc
        except (StartFailedError, BenchError) as exc:
            return Measured(None, str(exc).splitlines()[0], None, time.monotonic() - began)
        score, reason = self.score(evidence)
        return Measured(score, reason, run_file, time.monotonic() - began)

    def _bench(self, url: str, serve: ServeConfig, run_file: Path, mark: TuneMark) -> Evidence:
        c, w = self.config, self.config.workload
        run = RunConfig(
            endpoint=url, model=self.served(), api=w.api, prompt_min=w.prompt_tokens[0],
            prompt_max=w.prompt_tokens[1], output_tokens=w.output_tokens,
            concurrencies=(w.concurrency,), requests=w.requests, warmup=w.warmup, seed=w.seed,
            gpus=c.gpus, out=run_file.parent / f".{run_file.stem}", hardware=c.hardware, serve=serve, tune=mark,
            timeout_s=max(60.0, w.output_tokens * 2.0), force=True,
        )  # fmt: skip
        written = run_benchmark(run, _Quiet())
        target = written[0].rename(run_file)
        shutil.rmtree(run.out)
        return load_evidence(target)

    def score(self, evidence: Evidence) -> tuple[float | None, str | None]:
        """The objective recomputed as a figure would be; failed requests fail the run."""
        w = self.config.workload
        records = evidence.measured(w.concurrency)
        failed = sum(1 for r in records if not r.ok)
        if not records or failed:
            return None, f"{failed} of {len(records)} measured requests failed"
        summary = summarize(records, w.concurrency)
        value = figure_value(
            summary, w.objective.metric, w.objective.statistic, None, evidence.header.gpus
        )
        return (
            (value, None) if math.isfinite(value) and value > 0 else (None, f"objective is {value}")
        )
