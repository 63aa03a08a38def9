"""Client fidelity: does servekit's harness measure what a server with known timing does?

The simulator (its own core) is set to a 120 ms time to first token and 15 ms per
output token; the harness (this process, the other core) measures it at concurrency
1 to 256 and with 36K-token prompts, each case with as many warmup requests as its
concurrency. A case passes when the measured TTFT and ITL medians are within 2 % (or
1 ms) of the configured values in every round. Rounds are interleaved (every case
once per round) and the load average is printed, because the machine is shared; the
simulator's own lateness (how late it wrote first tokens, from its /metrics) is shown
next to each case, since a client measures that too.

``--before SRC`` also measures ``servekit bench run`` from another checkout's ``src``
directory (an earlier transport), case by case in the same rounds; both versions then
run as CLI subprocesses, so they are measured the same way.

Run: ``python bench/client_fidelity.py [--rounds 3] [--api completions|chat] [--before SRC]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from _sim import load_average, pin_self, sim_lateness_ms, sim_metrics, simulator, source_env

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

    def phase(self, description: str, total: int | None) -> None:
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


def measure_cli(
    url: str, out: Path, case: tuple[str, int, int, int, int], api: Api, src: Path | None
) -> dict[str, object]:
    """The same case through ``servekit bench run`` (from the checkout at ``src``)."""
    _, concurrency, prompt, output, requests = case
    args = [sys.executable, "-m", "servekit.cli.main", "-q", "bench", "run", "--endpoint", url,
            "--model", "servekit-sim", "--api", api.value, "--input-tokens", f"{prompt}:{prompt}",
            "--output-tokens", str(output), "--concurrency", str(concurrency),
            "--requests", str(requests), "--warmup", str(concurrency), "--timeout", "120",
            "--out", str(out), "--force", "--json"]  # fmt: skip
    done = subprocess.run(args, env=source_env(src), capture_output=True, text=True, check=True)
    (row,) = json.loads(done.stdout[done.stdout.index("[") :])
    return dict(row)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--api", type=Api, default=Api.COMPLETIONS)
    parser.add_argument("--before", type=Path, help="src/ of an earlier checkout, measured too")
    options = parser.parse_args()
    pin_self()
    variants = ["now", "before"] if options.before is not None else ["now"]
    print(f"simulator: TTFT {TTFT_MS} ms, {ITL_MS} ms per token; client pinned to one core; "
          f"api {options.api.value}\n")  # fmt: skip
    print(f"{'round':>5} {'case':<24} {'TTFT p50':>9} {'err %':>7} {'ITL p50':>8} {'err %':>7} "
          f"{'TPOT p50':>9} {'sim late':>8}  verdict")  # fmt: skip
    results: dict[str, list[tuple[float, float, bool]]] = defaultdict(list)
    with (
        simulator("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS)) as url,
        tempfile.TemporaryDirectory() as tmp,
    ):
        for round_no in range(1, options.rounds + 1):
            print(f"-- round {round_no}, load average {load_average()}")
            for i, case in enumerate(CASES):
                for who in variants[round_no % 2 :] + variants[: round_no % 2]:  # rotate
                    before, started = sim_metrics(url), time.perf_counter()
                    where = Path(tmp) / f"{round_no}-{i}-{who}"
                    if options.before is None:
                        row = measure(url, where, case, options.api)
                    else:  # both through the CLI, in a subprocess, so they compare
                        src = options.before if who == "before" else None
                        row = measure_cli(url, where, case, options.api, src)
                    late_first, _ = sim_lateness_ms(before, sim_metrics(url))
                    ttft, itl, tpot = (
                        float(row[k]) for k in ("median_ttft_ms", "median_itl_ms", "median_tpot_ms")
                    )  # type: ignore[arg-type]
                    ok = _within(ttft, TTFT_MS) and _within(itl, ITL_MS) and row["failed"] == 0
                    label = case[0] if who == "now" else f"{case[0]} (before)"
                    results[label].append((ttft, itl, ok))
                    print(f"{round_no:>5} {label:<24} {ttft:9.2f} {100 * (ttft / TTFT_MS - 1):+7.2f} "
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
        print(f"{label:<24} TTFT p50 {ttft:7.2f} ({100 * (ttft / TTFT_MS - 1):+.2f} %)  ITL p50 "
              f"{itl:6.2f} ({100 * (itl / ITL_MS - 1):+.2f} %)  within in {good}/{len(rounds)} "
              "rounds")  # fmt: skip
    print(f"\n{passed}/{len(results)} cases within 2 % (or 1 ms) in every round")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
