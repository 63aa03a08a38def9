"""Shared by the client benchmarks: a simulator process pinned to its own core."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

SIM_CPU, CLIENT_CPU = 1, 0


def pin_self() -> None:
    """Run this process (the client) on one core."""
    os.sched_setaffinity(0, {CLIENT_CPU})


@contextmanager
def simulator(*options: str) -> Iterator[str]:
    """`servekit sim serve` on a free loopback port, pinned to the other core."""
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
