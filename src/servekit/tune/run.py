"""One tuning session, start to finish.

1. check the request: every searched flag is in the engine's schema and each value in its
   range; no flag that can change outputs unless ``allow_numerics``; every fixed argument
   a load-needed flag (so stock stays stock); the output directory is new;
2. measure stock first (``c000``), then candidates from the proposer while the budget
   leaves room for the confirmation (each engine start counts against it);
3. confirm: the best candidate and stock re-measured in fresh runs, interleaved (stock,
   tuned, stock, tuned...), the engine restarted for each; the verdict is the exact
   permutation test of :mod:`servekit.package.confirmation`;
4. write the draft package (:mod:`servekit.tune.draft`): selection runs and confirmation
   runs kept apart, the search log, the disclosures.
"""

from __future__ import annotations

import signal
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from servekit.engines import FlagValue, engine
from servekit.errors import TuneError
from servekit.package.confirmation import ALPHA, verdict
from servekit.package.evidence import TuneRole
from servekit.package.rules.engines import NEUTRAL_ENV, numerics_changes
from servekit.progress import Tracker
from servekit.tune.draft import write_search_log
from servekit.tune.measure import Measured, Measurer, StoppedError
from servekit.tune.models import CONTRACT_PCT, Candidate, Confirmation, Status, TuneConfig
from servekit.tune.search import proposer

Notify = Callable[[str], None]
OVERRUN = 1.25
"""The confirmation starts no new pair once this share of the budget is spent: starts that
take longer than the search's slowest one must not run a session past what was given."""


@dataclass(frozen=True)
class Outcome:
    """What the session found, and where the draft package is."""

    candidates: tuple[Candidate, ...]
    confirmation: Confirmation | None
    best: Candidate | None
    package_dir: Path
    seconds: float


def check_request(config: TuneConfig) -> None:
    """Step 1 (see the module docstring); raises :class:`TuneError` naming what is wrong."""
    spec = engine(config.engine)
    for name, values in config.space.search.items():
        flag = spec.flag(name)
        for value in values:
            flag.check(value)
        if flag.changes_outputs and not config.allow_numerics:
            raise TuneError(
                f"space.yaml searches {name}, which can change the model's outputs",
                hint="remove it from search:, or pass --allow-numerics (the package then "
                "needs a measured accuracy check before it can claim anything)",
            )
    words = [w for w in config.space.fixed if w.startswith("-")]
    bad = [w for w in words if w.split("=")[0] not in spec.load_flags]
    if bad:
        raise TuneError(
            f"space.yaml fixed: {', '.join(bad)} are not load-needed flags of {spec.name}: stock "
            "would not be stock",
            hint=f"fixed: may hold only {spec.name}'s load-needed flags; put others under "
            "shared: (the baseline is then not stock) or search them",
        )
    searched = [w for w in config.space.shared if w.split("=")[0] in config.space.search]
    if searched:
        raise TuneError(
            f"space.yaml shared: {', '.join(searched)} also searched",
            hint="a flag is either shared by every candidate or searched, not both",
        )
    if numerics_changes(spec.name, config.space.shared) and not config.allow_numerics:
        raise TuneError(
            "space.yaml shared: "
            + ", ".join(numerics_changes(spec.name, config.space.shared))
            + " can change the model's outputs",
            hint="remove it, or pass --allow-numerics",
        )
    env = [n for n in config.space.env if n not in NEUTRAL_ENV | spec.neutral_env]
    if env:
        raise TuneError(
            f"space.yaml env: {', '.join(env)} are not neutral for {spec.name}: stock would not "
            "be stock",
            hint="env: may hold only the variables docs/rules.md lists as neutral",
        )
    if config.out.exists():
        raise TuneError(f"{config.out} already exists", hint="choose a new --out directory")


def _higher_is_better(config: TuneConfig) -> bool:
    return config.workload.objective.metric.is_throughput


class Session:
    def __init__(self, config: TuneConfig, tracker: Tracker, notify: Notify) -> None:
        self.config, self.tracker, self.notify = config, tracker, notify
        self.id = uuid.uuid4().hex[:12]
        self.measurer = Measurer(config, self.id)
        self.began = time.monotonic()
        self.candidates: list[Candidate] = []
        self.confirm_runs: list[tuple[str, str, float]] = []
        self.stopped_by = ""
        """Why the search stopped proposing candidates."""

    def elapsed(self) -> float:
        return time.monotonic() - self.began

    def _record(self, cid: str, flags: dict[str, FlagValue], got: Measured) -> Candidate:
        root = self.config.out
        cand = Candidate(
            id=cid, flags=flags, status=Status.OK if got.score is not None else Status.FAILED,
            reason=got.reason, score=got.score, seconds=round(got.seconds, 3),
            run_file=str(got.run_file.relative_to(root)) if got.run_file and got.score is not None else None,
        )  # fmt: skip
        self.candidates.append(cand)
        write_search_log(self.config, self.id, tuple(self.candidates))
        self.tracker.advance(1)
        shown = f"{got.score:.3f}" if got.score is not None else f"failed: {got.reason}"
        self.notify(f"{cid} {flags or 'stock'}: {shown}")
        return cand

    def _room(self) -> str | None:
        """Why no further candidate fits (the count, or the budget once the confirmation has
        its share), or None when one does."""
        c = self.config
        if c.max_candidates is not None and len(self.candidates) >= c.max_candidates:
            return f"--max-candidates {c.max_candidates} reached"
        cost = max((x.seconds for x in self.candidates), default=0.0)
        need = cost * (1 + 2 * c.confirm_pairs)
        if self.elapsed() + need > c.budget_s:
            return (f"the budget: {self.elapsed():.0f} s spent, and one more candidate and the "
                    f"confirmation ({1 + 2 * c.confirm_pairs} engine starts at {cost:.0f} s, the "
                    f"slowest so far) need {need:.0f} s of the {c.budget_s:g} s")  # fmt: skip
        return None

    def search(self) -> None:
        """Step 2: stock first, then the proposer's points while the budget allows."""
        search_dir = self.config.out / "evidence" / "search"
        stock = self.measurer.measure({}, search_dir / "c000.jsonl", TuneRole.SELECTION, "stock")
        if self._record("c000", {}, stock).score is None:
            raise TuneError(
                f"stock {self.config.engine} could not be measured: {stock.reason}",
                hint=f"see {search_dir}/c000.engine.log; without stock there is no baseline",
            )
        propose = proposer(self.config.method, self.config.space, self.config.seed,
                           maximize=_higher_is_better(self.config))  # fmt: skip
        while (full := self._room()) is None:
            point = propose.propose()
            if point is None:
                self.stopped_by = "every point of the space was measured"
                break
            cid = f"c{len(self.candidates):03d}"
            got = self.measurer.measure(point, search_dir / f"{cid}.jsonl", TuneRole.SELECTION, cid)
            propose.tell(point, self._record(cid, point, got).score)
        if full is not None:
            self.stopped_by = full
        self.notify(f"search stopped: {self.stopped_by}")

    def best(self) -> Candidate | None:
        """The best-scoring candidate other than stock (what a best-of-N tool would publish)."""
        ok = [c for c in self.candidates if c.score is not None and c.id != "c000"]
        sign = -1.0 if _higher_is_better(self.config) else 1.0
        return min(ok, key=lambda c: sign * (c.score or 0.0), default=None)

    def confirm(self, best: Candidate) -> None:
        """Step 3: interleaved fresh runs, kept in ``confirm_runs`` as (run file, side, score)
        as they come, so a session stopped meanwhile still has them."""
        folder, runs = self.config.out / "evidence" / "confirm", self.confirm_runs
        for i in range(1, self.config.confirm_pairs + 1):
            if self.elapsed() >= self.config.budget_s * OVERRUN:
                self.notify(f"the budget ran out: confirmation stopped after {i - 1} pairs")
                break
            for side, flags, cand in (("stock", {}, "stock"), ("tuned", best.flags, best.id)):
                got = self.measurer.measure(
                    dict(flags), folder / f"{side}-{i}.jsonl", TuneRole.CONFIRMATION, cand
                )
                self.tracker.advance(1)
                if got.score is not None and got.run_file is not None:
                    runs.append((str(got.run_file.relative_to(self.config.out)), side, got.score))
                else:
                    self.notify(f"confirmation {side}-{i} failed: {got.reason}")

    def verdict(self, best: Candidate) -> Confirmation:
        """The test on the confirmation runs there are."""
        runs = self.confirm_runs
        stock = [s for _, side, s in runs if side == "stock"]
        tuned = [s for _, side, s in runs if side == "tuned"]
        claimed, gain, p, why = verdict(stock, tuned, higher_is_better=_higher_is_better(self.config),
                                        contract_pct=CONTRACT_PCT)  # fmt: skip
        conf = Confirmation(candidate=best.id, stock_scores=tuple(stock), tuned_scores=tuple(tuned),
                            improvement_pct=round(gain, 3), p_value=round(p, 6), alpha=ALPHA,
                            contract_pct=CONTRACT_PCT, claimed=claimed, verdict=why)  # fmt: skip
        return conf


def tune(config: TuneConfig, tracker: Tracker, notify: Notify | None = None) -> Outcome:
    """Run every step (see the module docstring)."""
    from servekit.tune.draft import write_draft

    check_request(config)
    say = notify or (lambda message: None)
    session, stopped = Session(config, tracker, say), False
    with _terminable():
        try:
            session.search()
            if (chosen := session.best()) is not None:
                session.confirm(chosen)
        except StoppedError:
            stopped = True
            say("stopped (SIGTERM): writing the draft of what was measured")
    best = session.best()
    confirmation = session.verdict(best) if best is not None and session.confirm_runs else None
    write_draft(config, session.id, tuple(session.candidates), confirmation,
                session.confirm_runs, session.elapsed(), stopped=stopped,
                search_stopped=session.stopped_by)  # fmt: skip
    return Outcome(tuple(session.candidates), confirmation, best, config.out, session.elapsed())


@contextmanager
def _terminable() -> Iterator[None]:
    def stop(signum: int, frame: object) -> None:
        raise StoppedError

    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread: the default applies
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
