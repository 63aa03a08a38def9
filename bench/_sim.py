"""Shared by the client benchmarks: a simulator pinned to its own core, its metrics,
and the CPU a client's whole process tree spends while tokens stream."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SIM_CPU, CLIENT_CPU = 1, 0
_TICKS = os.sysconf("SC_CLK_TCK")


def pin_self(cpu: int = CLIENT_CPU) -> None:
    """Run this process on one core."""
    os.sched_setaffinity(0, {cpu})


def load_average() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


@contextmanager
def simulator(*options: str) -> Iterator[str]:
    """`servekit sim serve` on a free loopback port, pinned to its own core."""
    args = [sys.executable, "-m", "servekit.cli.main", "sim", "serve", "--port", "0", *options]
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
    os.sched_setaffinity(proc.pid, {SIM_CPU})
    assert proc.stderr is not None
    line = proc.stderr.readline()
    match = re.search(r"(http://127\.0\.0\.1:\d+)", line)
    if not match:
        proc.kill()
        raise SystemExit(f"simulator did not start: {line}")
    try:
        yield match.group(1)
    finally:
        proc.terminate()
        proc.wait(10)


def sim_metrics(url: str) -> dict[str, float]:
    """The simulator's /metrics as {name: value}."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
        text = response.read().decode()
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.split()
            values[name.removeprefix("servekit_sim_")] = float(value)
    return values


def sim_lateness_ms(before: dict[str, float], after: dict[str, float]) -> tuple[float, float]:
    """Mean lateness of first tokens and of all tokens between two /metrics readings:
    the simulator's own error, which every client measures too."""
    firsts = after["first_tokens_total"] - before["first_tokens_total"]
    tokens = after["generation_tokens_total"] - before["generation_tokens_total"]
    first = after["first_token_late_seconds_total"] - before["first_token_late_seconds_total"]
    every = after["token_late_seconds_total"] - before["token_late_seconds_total"]
    return 1000 * first / max(firsts, 1), 1000 * every / max(tokens, 1)


def tree_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process and all its descendants (from /proc)."""
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        try:
            stat = Path(f"/proc/{current}/stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            total += (int(fields[11]) + int(fields[12])) / _TICKS
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


@dataclass(frozen=True)
class Window:
    """From the first to the last poll that saw new tokens: the streaming window."""

    events: float  # tokens the simulator sent = content events the client had to parse
    cpu_s: float  # the client's process tree
    wall_s: float
    late_first_ms: float
    late_token_ms: float

    @property
    def events_per_cpu_s(self) -> float:
        return self.events / self.cpu_s if self.cpu_s > 0 else float("nan")

    @property
    def events_per_s(self) -> float:
        return self.events / self.wall_s if self.wall_s > 0 else float("nan")


def source_env(src: Path | None) -> dict[str, str] | None:
    """The environment that runs servekit from another checkout's ``src`` (``--before``):
    an earlier version of the client, measured in the same run as this one."""
    if src is None:
        return None
    return {**os.environ, "PYTHONPATH": str(src.resolve())}


def run_client(
    args: Sequence[str],
    url: str,
    log: Path,
    poll_s: float = 0.05,
    skip_tokens: int = 16,
    env: dict[str, str] | None = None,
) -> Window:
    """Run a client command pinned to the client core; sample its CPU while tokens flow.

    The window opens after the first ``skip_tokens`` tokens, so a client's probe
    requests (servekit sends two 2-token probes, then builds its prompts) are not in it.
    The caller runs on the simulator's core, so polling costs the client nothing.
    Output goes to ``log`` (a full pipe would stall the client).
    """
    base = sim_metrics(url)
    first: tuple[float, float, float] | None = None
    last: tuple[float, float, float] | None = None
    with log.open("w") as out:
        proc = subprocess.Popen(
            list(args), stdout=out, stderr=subprocess.STDOUT, preexec_fn=_pin_client, env=env
        )
        while proc.poll() is None:
            time.sleep(poll_s)
            tokens = sim_metrics(url)["generation_tokens_total"] - base["generation_tokens_total"]
            sample = (time.perf_counter(), tokens, tree_cpu_s(proc.pid))
            if tokens > skip_tokens and first is None:
                first = sample
            if tokens > skip_tokens and (last is None or tokens > last[1]):
                last = sample
    if proc.returncode != 0:
        raise SystemExit(f"{args[0]} failed ({proc.returncode}); see {log}")
    late = sim_lateness_ms(base, sim_metrics(url))
    if first is None or last is None:
        return Window(0.0, 0.0, 0.0, *late)
    return Window(last[1] - first[1], last[2] - first[2], last[0] - first[0], *late)


def _pin_client() -> None:
    os.sched_setaffinity(0, {CLIENT_CPU})
