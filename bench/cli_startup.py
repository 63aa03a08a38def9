"""Start-up time of every `servekit --help` and of argument errors, beside `python -c pass`.

Runs, each N times (median kept): `python -c pass`, `servekit --help`, `--version`, every
group's `--help` and the group alone, and for every command an unknown option and the
command without its required arguments (a command with none is not run bare: it would
do its work). Each row prints the median wall time, the median CPU time
(user + system of the child: less at the mercy of other processes on a shared machine)
and the wall time as a ratio to `python -c pass` measured in the same run; then the
slowest wall and CPU times, and the load average before and after. The target (issue
21) is under 0.25 s for each on an idle machine. One row does real work: `verify weights`
of a one-file tree against its pin (issue 24: under 0.25 s), in a temporary directory.

    .venv/bin/python bench/cli_startup.py [RUNS]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import typer.main

from servekit.cli.main import COMMANDS, app

SERVEKIT = [sys.executable, "-m", "servekit.cli.main"]


def _paths(command: Any, prefix: tuple[str, ...]) -> list[tuple[tuple[str, ...], Any]]:
    """(path, click command) of ``command`` and everything under it."""
    found = [(prefix, command)]
    for name, sub in (getattr(command, "commands", None) or {}).items():
        found += _paths(sub, (*prefix, name))
    return found


def cases() -> dict[str, list[str]]:
    root: Any = typer.main.get_command(app)
    out = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "servekit --help": [*SERVEKIT, "--help"],
        "servekit --version": [*SERVEKIT, "--version"],
    }
    for name in COMMANDS:
        for path, command in _paths(root.commands[name], (name,)):
            shown = " ".join(path)
            out[f"{shown} --help"] = [*SERVEKIT, *path, "--help"]
            if hasattr(command, "commands"):
                out[f"{shown} (bare)"] = [*SERVEKIT, *path]
                continue
            out[f"{shown} --no-such-option"] = [*SERVEKIT, *path, "--no-such-option"]
            if any(p.required for p in command.params):  # so it fails, doing nothing
                out[f"{shown} (missing argument)"] = [*SERVEKIT, *path]
    return out


def one_file_verify(scratch: Path) -> list[str]:
    """`verify weights` of a one-file tree (`{}` as config.json) against its pin."""
    tree, pin = scratch / "tree", scratch / "PIN.json"
    tree.mkdir()
    (tree / "config.json").write_text("{}")
    digest = [*SERVEKIT, "-q", "model", "digest", str(tree), "-o", str(pin)]
    subprocess.run(digest, check=True, stdout=subprocess.DEVNULL)
    argv = [*SERVEKIT, "-q", "verify", "weights", str(tree), "--pin", str(pin)]
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)  # it passes: timed doing work
    return argv


def _run(argv: list[str]) -> tuple[float, float]:
    """(wall, user + system CPU) seconds of one run."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0  # reaped by wait4
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def _median(argv: list[str], runs: int) -> tuple[float, float]:
    samples = [_run(argv) for _ in range(runs)]
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    load_before = os.getloadavg()
    scratch = tempfile.TemporaryDirectory(prefix="servekit-startup-")
    table = cases()
    table["verify weights DIR --pin PIN.json (one-file tree)"] = one_file_verify(Path(scratch.name))
    base, _ = _median(table["python -c pass"], runs)
    print(f"median of {runs} runs; load average {load_before[0]:.2f} at start")
    print(f"{'case':58} {'wall':>8} {'cpu':>8} {'x pass':>7}")
    worst_wall, worst_cpu = ("", 0.0), ("", 0.0)
    for name, argv in table.items():
        wall, cpu = _median(argv, runs)
        print(f"{name:58} {wall * 1000:6.0f}ms {cpu * 1000:6.0f}ms {wall / base:7.1f}")
        if name != "python -c pass":
            worst_wall = max(worst_wall, (name, wall), key=lambda t: t[1])
            worst_cpu = max(worst_cpu, (name, cpu), key=lambda t: t[1])
    print(f"slowest wall: {worst_wall[1] * 1000:.0f} ms ({worst_wall[0]})")
    print(f"slowest cpu:  {worst_cpu[1] * 1000:.0f} ms ({worst_cpu[0]})")
    print(f"load average {load_before[0]:.2f} at start, {os.getloadavg()[0]:.2f} at the end")
    scratch.cleanup()


if __name__ == "__main__":
    main()
