"""Start-up time of the `servekit` command beside `python -c pass`, measured in one run.

Prints the median wall time of N runs of each: `servekit --help`, commands that fail
on their arguments (`bench run` without `--endpoint`, with `--concurrency 0`),
`servekit --version`, `verify weights --help` and a `verify weights` of a one-file tree
against its pin, and the interpreter doing nothing, each also as a ratio to
`python -c pass` measured in the same run. The targets (issues 15 and 24) are under 0.25 s
for `--help`, for an argument error and for the one-file verify on an idle machine.

    .venv/bin/python bench/cli_startup.py [RUNS]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CASES = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "servekit --help": [sys.executable, "-m", "servekit.cli.main", "--help"],
    "servekit bench run --no-such-option": [
        sys.executable, "-m", "servekit.cli.main", "bench", "run", "--no-such-option",
    ],
    "servekit bench run (no --endpoint)": [sys.executable, "-m", "servekit.cli.main", "bench", "run"],
    "servekit bench run --concurrency 0": [
        sys.executable, "-m", "servekit.cli.main", "bench", "run", "--endpoint",
        "http://127.0.0.1:9", "--model", "m", "--input-tokens", "8:8", "--output-tokens", "2",
        "--requests", "4", "--out", "/nonexistent/out", "--concurrency", "0",
    ],
    "servekit package check (no DIR)": [sys.executable, "-m", "servekit.cli.main", "package", "check"],
    "servekit --version": [sys.executable, "-m", "servekit.cli.main", "--version"],
    "servekit verify weights --help": [
        sys.executable, "-m", "servekit.cli.main", "verify", "weights", "--help",
    ],
}  # fmt: skip
SERVEKIT = [sys.executable, "-m", "servekit.cli.main", "-q"]


def _median(argv: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    base = _median(CASES["python -c pass"], runs)
    print(f"median of {runs} runs; python -c pass = {base * 1000:.0f} ms")
    with tempfile.TemporaryDirectory() as work:
        tree, pin = Path(work) / "model", Path(work) / "PIN.json"
        tree.mkdir()
        (tree / "config.json").write_text("{}")
        subprocess.run([*SERVEKIT, "model", "digest", str(tree), "-o", str(pin)], check=True)
        verify = [*SERVEKIT, "verify", "weights", str(tree), "--pin", str(pin)]
        for name, argv in {**CASES, "servekit verify weights (one file)": verify}.items():
            took = _median(argv, runs)
            print(f"{name:40} {took * 1000:6.0f} ms  ({took / base:5.1f}x python -c pass)")


if __name__ == "__main__":
    main()
