"""Where the next candidate comes from: optuna's TPE, or the baselines (random, grid).

Every proposer walks the same discrete space (each searched flag's listed values), never
proposes a point twice, and is told each result: a score, or a failure (optuna records a
failed trial as failed, so TPE learns to avoid its region). Stock is not a point of the
space: the tuner measures it first, before any proposal.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

from servekit.engines import FlagValue
from servekit.tune.models import Method, Space

if TYPE_CHECKING:
    import optuna

Point = dict[str, FlagValue]
MAX_REPEATS = 20
"""TPE proposals of already-measured points answered from the log before a random new one."""


def _key(point: Point) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, repr(v)) for k, v in point.items()))


def points(space: Space) -> Iterator[Point]:
    """Every point of the space, in the order the flags and values are listed."""
    names = list(space.search)
    for combo in itertools.product(*space.search.values()):
        yield dict(zip(names, combo, strict=True))


class Proposer(Protocol):
    def propose(self) -> Point | None: ...

    def tell(self, point: Point, score: float | None) -> None: ...


class Grid:
    def __init__(self, space: Space) -> None:
        self.rest = points(space)

    def propose(self) -> Point | None:
        return next(self.rest, None)

    def tell(self, point: Point, score: float | None) -> None:
        return None


class Random:
    def __init__(self, space: Space, seed: int) -> None:
        self.order = list(points(space))
        random.Random(seed).shuffle(self.order)

    def propose(self) -> Point | None:
        return self.order.pop(0) if self.order else None

    def tell(self, point: Point, score: float | None) -> None:
        return None


class Tpe:
    """optuna's TPE over the space's values, seeded: a flag's listed values as an ordered
    index (a boolean flag as a category); its random start is a quarter of the space (3 to
    10 points) so small budgets still search."""

    def __init__(self, space: Space, seed: int, *, maximize: bool) -> None:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        startup = max(3, min(10, space.size() // 4))
        sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup)
        self.study = optuna.create_study(
            sampler=sampler, direction="maximize" if maximize else "minimize"
        )
        self.space = space
        self.maximize = maximize
        self.rng = random.Random(seed)
        self.size = space.size()
        self.known: dict[tuple[tuple[str, str], ...], float | None] = {}
        self.pending: dict[tuple[tuple[str, str], ...], optuna.trial.Trial] = {}

    def _ask(self) -> tuple[optuna.trial.Trial, Point]:
        trial = self.study.ask()
        point: Point = {}
        for name, values in self.space.search.items():
            if all(isinstance(v, bool) for v in values):
                point[name] = values[
                    int(trial.suggest_categorical(name, list(range(len(values)))) or 0)
                ]
            else:  # listed values are ordered (batch sizes, budgets): TPE models the order
                point[name] = values[trial.suggest_int(name, 0, len(values) - 1)]
        return trial, point

    def propose(self) -> Point | None:
        for _ in range(MAX_REPEATS):
            if len(self.known) >= self.size:
                return None
            trial, point = self._ask()
            key = _key(point)
            if key not in self.known:
                self.pending[key] = trial
                return point
            self._finish(trial, self.known[key])  # a repeat: answered from the log
        return self._unmeasured()

    def _unmeasured(self) -> Point | None:
        """TPE keeps proposing measured points (it has converged): hand it a random point
        not yet measured, so the budget is spent on new candidates."""
        rest = [p for p in points(self.space) if _key(p) not in self.known]
        if not rest:
            return None
        point = self.rng.choice(rest)
        self.study.enqueue_trial({n: list(v).index(point[n]) for n, v in self.space.search.items()})
        trial, asked = self._ask()
        self.pending[_key(asked)] = trial
        return asked

    def _finish(self, trial: optuna.trial.Trial, score: float | None) -> None:
        """A failed candidate is told as the worst score so far made twice as bad: optuna's
        samplers ignore failed trials, so TPE would keep proposing the region that fails."""
        scores = [v for v in self.known.values() if v is not None]
        if score is None and scores:
            score = min(scores) / 2 if self.maximize else max(scores) * 2
        if score is None:
            import optuna

            self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
        else:
            self.study.tell(trial, score)

    def tell(self, point: Point, score: float | None) -> None:
        key = _key(point)
        self.known[key] = score
        self._finish(self.pending.pop(key), score)


def proposer(method: Method, space: Space, seed: int, *, maximize: bool) -> Proposer:
    match method:
        case Method.TPE:
            return Tpe(space, seed, maximize=maximize)
        case Method.RANDOM:
            return Random(space, seed)
        case Method.GRID:
            return Grid(space)
