"""The statistics of a tuned speedup: read by ``servekit tune`` and recomputed by the claim
rule that checks it (SK140), so the two cannot disagree.

A speedup of a tuned configuration over stock is claimed only when the *confirmation* runs
(fresh runs after the search, stock and tuned interleaved, the engine restarted for each)
carry it: the exact one-sided permutation test of the difference of the two means rejects
"tuned is no better than stock" at :data:`ALPHA`, and the improvement of the means clears
the package's improvement contract. Exact: every relabelling of the pooled runs into two
groups of the same sizes is counted, so no distribution is assumed; with 4 runs a side the
smallest p-value is 1/70, with 5 it is 1/252.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence

ALPHA = 0.05
MIN_RUNS = 4
"""Runs per side: with 3 the smallest p-value (1/20) cannot be below ALPHA."""


def improvement_pct(
    stock: Sequence[float], tuned: Sequence[float], *, higher_is_better: bool
) -> float:
    """How much better tuned's mean is than stock's, in percent (latency: stock/tuned - 1)."""
    s, t = statistics.fmean(stock), statistics.fmean(tuned)
    if s <= 0 or t <= 0:
        return 0.0
    return ((t / s) if higher_is_better else (s / t)) * 100 - 100


def permutation_p(
    stock: Sequence[float], tuned: Sequence[float], *, higher_is_better: bool
) -> float:
    """One-sided exact permutation p-value of "tuned is better than stock" (difference of
    means); 1.0 when there is nothing to compare."""
    if not stock or not tuned:
        return 1.0
    sign = 1.0 if higher_is_better else -1.0
    pooled = [*stock, *tuned]
    total = sum(pooled)
    n = len(tuned)

    def stat(tuned_sum: float) -> float:
        return sign * (tuned_sum / n - (total - tuned_sum) / len(stock))

    observed = stat(sum(tuned))
    hits = count = 0
    for group in itertools.combinations(range(len(pooled)), n):
        count += 1
        if stat(sum(pooled[i] for i in group)) >= observed - 1e-12 * max(1.0, abs(observed)):
            hits += 1
    return hits / count if count else 1.0


def verdict(
    stock: Sequence[float], tuned: Sequence[float], *, higher_is_better: bool, contract_pct: float
) -> tuple[bool, float, float, str]:
    """(claimed, improvement %, p-value, the reason in words)."""
    gain = improvement_pct(stock, tuned, higher_is_better=higher_is_better)
    p = permutation_p(stock, tuned, higher_is_better=higher_is_better)
    sizes = f"{len(stock)} stock and {len(tuned)} tuned confirmation runs"
    if min(len(stock), len(tuned)) < MIN_RUNS:
        return False, gain, p, f"{sizes}: at least {MIN_RUNS} a side are needed"
    if p > ALPHA:
        return False, gain, p, (f"{sizes}: the improvement of {gain:.1f} % is not significant "
                                f"(one-sided exact permutation test, p = {p:.3f} > {ALPHA:g})")  # fmt: skip
    if gain < contract_pct:
        return False, gain, p, (f"{sizes}: p = {p:.3f}, but the improvement of {gain:.1f} % is "
                                f"below the {contract_pct:g} % improvement contract")  # fmt: skip
    return True, gain, p, (f"{sizes}: tuned is {gain:.1f} % better (one-sided exact permutation "
                           f"test, p = {p:.3f} <= {ALPHA:g}; contract {contract_pct:g} %)")  # fmt: skip


__all__ = ["ALPHA", "MIN_RUNS", "improvement_pct", "permutation_p", "verdict"]
