"""Client fidelity: does servekit's harness measure what a server with known timing does?

The simulator (its own core) is set to a 120 ms time to first token and 15 ms per
output token; the harness (this process, one core) measures it at concurrency 1 to 256
and with 36K-token prompts. A case passes when the measured TTFT and ITL medians are
within 2 % (or 1 ms) of the configured values. Run: `python bench/client_fidelity.py`.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from _sim import pin_self, simulator

from servekit.bench.runner import RunConfig, run_benchmark
from servekit.bench.summary import summarize_path

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
    url: str, out: Path, concurrency: int, prompt: int, output: int, requests: int
) -> dict[str, object]:
    config = RunConfig(
        endpoint=url, model="servekit-sim", prompt_min=prompt, prompt_max=prompt,
        output_tokens=output, concurrencies=(concurrency,), requests=requests,
        warmup=concurrency, out=out, timeout_s=120,
    )  # fmt: skip
    run_benchmark(config, _Quiet())
    (row,) = summarize_path(out).as_json()
    return row


def main() -> int:
    pin_self()
    print(f"simulator: TTFT {TTFT_MS} ms, {ITL_MS} ms per token; client pinned to one core\n")
    print(
        f"{'case':<15} {'TTFT p50':>9} {'err %':>7} {'ITL p50':>8} {'err %':>7} {'TPOT p50':>9}  verdict"
    )
    failures = 0
    with (
        simulator("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS)) as url,
        tempfile.TemporaryDirectory() as tmp,
    ):
        for i, (label, conc, prompt, output, requests) in enumerate(CASES):
            started = time.perf_counter()
            row = measure(url, Path(tmp) / str(i), conc, prompt, output, requests)
            ttft, itl, tpot = (
                float(row[k]) for k in ("median_ttft_ms", "median_itl_ms", "median_tpot_ms")
            )  # type: ignore[arg-type]
            ok = _within(ttft, TTFT_MS) and _within(itl, ITL_MS) and row["failed"] == 0
            failures += not ok
            print(
                f"{label:<15} {ttft:9.2f} {100 * (ttft / TTFT_MS - 1):+7.2f} {itl:8.2f} "
                f"{100 * (itl / ITL_MS - 1):+7.2f} {tpot:9.2f}  {'PASS' if ok else 'FAIL'}"
                f"  ({time.perf_counter() - started:.0f} s)"
            )
    print(f"\n{len(CASES) - failures}/{len(CASES)} cases within 2 % (or 1 ms)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
