"""How well ``servekit tune`` searches and how often its claims are false, on the simulator's
performance model.

Not a test: it prints three tables.

1. **Candidates to reach within 2 % of the optimum** (median and 90th percentile over seeds)
   for servekit's search (optuna TPE, as ``servekit tune`` configures it) and the two peers
   on the same budget, grid and random search, and the ratio of each peer to servekit.
2. **Best found within a fixed budget** (percent above the optimum), same three searches.
3. **False-speedup rate under noise**: a space whose every point performs exactly like
   stock, each engine start drawing the simulator's host noise (lognormal, sigma given):
   how often "best of N" looks at least the improvement contract faster than its stock
   run (what a best-of-N tool publishes), against how often the confirmation (4-5
   interleaved pairs, exact one-sided permutation test at 0.05, the 2 % contract) claims a
   speedup. Both are the rate of claiming a speedup that is not there.

Candidates are scored by the performance model's prediction (``expected_e2el_ms``) times a
noise draw, not by running engines: the proposers, the space and the verdict are
``servekit tune``'s own, and tests/bench/sim/test_perf.py checks the prediction against
measured runs of the simulator. The space is tests/tune's: batch limit, token budget, memory
share (with simulated out-of-memory failures), 8 closed-loop requests of 512 + 16 tokens.

Usage: ``.venv/bin/python bench/tune_search.py [--seeds 30] [--budget 12] [--noise 0.1]``
"""

from __future__ import annotations

import argparse
import math
import random
import statistics

from servekit.bench.sim.perf import PerfModel, expected_e2el_ms
from servekit.package.confirmation import verdict
from servekit.tune.models import Method, Space
from servekit.tune.search import points, proposer

WORKLOAD = {
    "ttft_ms": 5.0,
    "itl_ms": 2.0,
    "prompt_tokens": 512,
    "output_tokens": 16,
    "concurrency": 8,
}
MAX_MODEL_LEN = 1024
FIELDS = {"--max-num-seqs": "max_num_seqs", "--max-num-batched-tokens": "max_num_batched_tokens",
          "--gpu-memory-utilization": "gpu_memory_utilization", "--enable-chunked-prefill": "chunked_prefill"}  # fmt: skip
SPACE = Space(search={
    "--max-num-seqs": (4, 8, 16, 32, 64, 128, 256),
    "--max-num-batched-tokens": (256, 512, 1024, 2048, 4096),
    "--gpu-memory-utilization": (0.85, 0.9, 0.95, 0.99),
    "--enable-chunked-prefill": (True, False),
})  # fmt: skip


def score(point: dict[str, object]) -> float | None:
    """The model's E2EL for a point, or None when that engine would not start."""
    perf = PerfModel().model_copy(update={FIELDS[k]: v for k, v in point.items()})
    if perf.startup_problem(MAX_MODEL_LEN) is not None:
        return None
    return expected_e2el_ms(perf, **WORKLOAD)  # type: ignore[arg-type]


def optimum() -> float:
    return min(s for p in points(SPACE) if (s := score(p)) is not None)


def trace(method: Method, seed: int, budget: int) -> list[float]:
    """Best score after each candidate (stock first)."""
    stock = score({})
    assert stock is not None
    best, out = stock, [stock]
    search = proposer(method, SPACE, seed, maximize=False)
    for _ in range(budget - 1):
        point = search.propose()
        if point is None:
            break
        got = score(point)
        search.tell(point, got)
        best = min(best, got) if got is not None else best
        out.append(best)
    return out


def candidates_to_reach(method: Method, seeds: int, limit: int, target: float) -> list[int]:
    out = []
    for seed in range(seeds):
        t = trace(method, seed, limit)
        out.append(next((i + 1 for i, b in enumerate(t) if b <= target), limit + 1))
    return out


def false_speedups(n: int, noise: float, pairs: int, trials: int) -> tuple[float, float]:
    """(best-of-n rate, confirmation rate) of claiming a speedup when every point is stock."""
    rng = random.Random(0)

    def run() -> float:
        return 100.0 * math.exp(noise * rng.gauss(0.0, 1.0))

    best_of, confirmed = 0, 0
    for _ in range(trials):
        stock, best = run(), min(run() for _ in range(n - 1))
        best_of += (stock / best - 1) * 100 >= 2.0
        s, t = [run() for _ in range(pairs)], [run() for _ in range(pairs)]
        confirmed += verdict(s, t, higher_is_better=False, contract_pct=2.0)[0]
    return best_of / trials, confirmed / trials


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--budget", type=int, default=20, help="candidates, stock included")
    parser.add_argument("--noise", type=float, default=0.1)
    parser.add_argument("--trials", type=int, default=2000)
    args = parser.parse_args()
    best = optimum()
    target = best * 1.02
    limit = min(SPACE.size() + 1, 100)  # TPE slows with many trials; > limit = not reached
    print(f"space: {SPACE.size()} points; optimum E2EL {best:.2f} ms; stock {score({}):.2f} ms")
    print(
        f"\n1. candidates to reach within 2 % of the optimum (stock included; {limit + 1} = not within {limit})"
    )
    reach = {m: candidates_to_reach(m, args.seeds, limit, target) for m in Method}
    tpe = statistics.median(reach[Method.TPE])
    for m, got in reach.items():
        med, p90 = statistics.median(got), sorted(got)[int(0.9 * (len(got) - 1))]
        print(
            f"   {m.value:6}  median {med:5.1f}  p90 {p90:4d}  ratio to servekit (tpe) {med / tpe:4.2f}"
        )
    print(
        f"\n2. best found within {args.budget} candidates, % above the optimum (median over seeds)"
    )
    for m in Method:
        found = [trace(m, s, args.budget)[-1] for s in range(args.seeds)]
        print(f"   {m.value:6}  {statistics.median((f / best - 1) * 100 for f in found):6.2f} %")
    print(f"\n3. false-speedup rate, true difference 0, host noise sigma {args.noise:g}")
    for n, pairs in ((args.budget, 4), (args.budget, 5)):
        naive, confirmed = false_speedups(n, args.noise, pairs, args.trials)
        print(f"   best of {n}: {naive:6.1%}   confirmation ({pairs} pairs): {confirmed:6.1%}")


if __name__ == "__main__":
    main()
