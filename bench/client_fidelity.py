"""Client fidelity: does servekit's harness measure what a server with known timing does?

The simulator (its own core) is set to a 120 ms time to first token and 15 ms per
output token; the harness (this process, the other core) measures it at concurrency
1 to 256 and with 36K-token prompts, each case with as many warmup requests as its
concurrency. A case passes when the measured TTFT and ITL medians are within 2 % (or
1 ms) of the configured values in every round. Rounds are interleaved (every case
once per round) and the load average is printed, because the machine is shared; the
simulator's own lateness (how late it wrote first tokens, from its /metrics) is shown
next to each case, since a client measures that too.

Run: ``python bench/client_fidelity.py [--rounds 3] [--api completions|chat]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from _sim import load_average, pin_self, sim_lateness_ms, sim_metrics, simulator

from servekit.bench.runner import RunConfig, run_benchmark
from servekit.bench.summary import summarize_path
from servekit.package.models import Api

TTFT_MS, ITL_MS = 120.0, 15.0
CASES = (  # (label, concurrency, prompt tokens, output tokens, measured requests)
    ("c1", 1, 200, 32, 12),
    ("c16", 16, 200, 32, 32),
    ("c64", 64, 200, 32, 64),
    ("c256", 256, 200, 32, 256),
    ("c1 36K prompt", 1, 36000, 32, 6),
    ("c8 36K prompt", 8, 36000, 32, 16),
)


class _Quiet:
    def advance(self, amount: float) -> None:
        pass


def _within(measured: float, configured: float) -> bool:
    return abs(measured - configured) <= max(0.02 * configured, 1.0)


def measure(
    url: str, out: Path, case: tuple[str, int, int, int, int], api: Api
) -> dict[str, object]:
    _, concurrency, prompt, output, requests = case
    config = RunConfig(
        endpoint=url, model="servekit-sim", api=api, prompt_min=prompt, prompt_max=prompt,
        output_tokens=output, concurrencies=(concurrency,), requests=requests,
        warmup=concurrency, out=out, timeout_s=120,
    )  # fmt: skip
    run_benchmark(config, _Quiet())
    (row,) = summarize_path(out).as_json()
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--api", type=Api, default=Api.COMPLETIONS)
    options = parser.parse_args()
    pin_self()
    print(f"simulator: TTFT {TTFT_MS} ms, {ITL_MS} ms per token; client pinned to one core; "
          f"api {options.api.value}\n")  # fmt: skip
    print(f"{'round':>5} {'case':<15} {'TTFT p50':>9} {'err %':>7} {'ITL p50':>8} {'err %':>7} "
          f"{'TPOT p50':>9} {'sim late':>8}  verdict")  # fmt: skip
    results: dict[str, list[tuple[float, float, bool]]] = defaultdict(list)
    with (
        simulator("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS)) as url,
        tempfile.TemporaryDirectory() as tmp,
    ):
        for round_no in range(1, options.rounds + 1):
            print(f"-- round {round_no}, load average {load_average()}")
            for i, case in enumerate(CASES):
                before, started = sim_metrics(url), time.perf_counter()
                row = measure(url, Path(tmp) / f"{round_no}-{i}", case, options.api)
                late_first, _ = sim_lateness_ms(before, sim_metrics(url))
                ttft, itl, tpot = (
                    float(row[k]) for k in ("median_ttft_ms", "median_itl_ms", "median_tpot_ms")
                )  # type: ignore[arg-type]
                ok = _within(ttft, TTFT_MS) and _within(itl, ITL_MS) and row["failed"] == 0
                results[case[0]].append((ttft, itl, ok))
                print(f"{round_no:>5} {case[0]:<15} {ttft:9.2f} {100 * (ttft / TTFT_MS - 1):+7.2f} "
                      f"{itl:8.2f} {100 * (itl / ITL_MS - 1):+7.2f} {tpot:9.2f} {late_first:8.2f}  "
                      f"{'pass' if ok else 'FAIL'}  ({time.perf_counter() - started:.0f} s)",
                      flush=True)  # fmt: skip
        print(f"-- end, load average {load_average()}\n")
    return report(results)


def report(results: dict[str, list[tuple[float, float, bool]]]) -> int:
    passed = 0
    for label, rounds in results.items():
        ttft = statistics.median(r[0] for r in rounds)
        itl = statistics.median(r[1] for r in rounds)
        good = sum(r[2] for r in rounds)
        passed += good == len(rounds)
        print(f"{label:<15} TTFT p50 {ttft:7.2f} ({100 * (ttft / TTFT_MS - 1):+.2f} %)  ITL p50 "
              f"{itl:6.2f} ({100 * (itl / ITL_MS - 1):+.2f} %)  within in {good}/{len(rounds)} "
              "rounds")  # fmt: skip
    print(f"\n{passed}/{len(results)} cases within 2 % (or 1 ms) in every round")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
