"""Where one buyer's confirm spends its time: statements, round trips, client and server CPU.

Uses ``bench/store_checkout.py``'s setup (a priced version, a workspace and quote per
purchase) on a fresh database, then confirms them one after another in this thread:
  1. untimed warm-up of a few confirms (connection, statement caches, prepared statements);
  2. a plain pass: wall and client CPU (this process) per confirm, statements per confirm
     (an SQLAlchemy ``before_cursor_execute`` count) and, on PostgreSQL on this machine,
     the server backend's CPU per confirm (``/proc/PID/stat`` of ``pg_backend_pid()``);
  3. a pass under cProfile: the top functions by own time and the number of times a
     confirm waits on the server (psycopg's ``wait``: one per round trip).

Usage:
    .venv/bin/python bench/store_confirm_profile.py [--backend sqlite|postgresql]
        [--purchases 400] [--pg-url postgresql+psycopg://postgres@127.0.0.1:5432/test]
        [--sort tottime|cumulative] [--top 15]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import event, text
from store_checkout import _buy, fresh_url, setup

from servekit.store.db import Store, make_engine, migrate
from servekit.store.providers import SandboxProvider

WARM_UP = 20


def backend_cpu_s(pid: int | None) -> float:
    """User + system CPU seconds of a local PostgreSQL backend (0 when not local)."""
    if pid is None or not Path(f"/proc/{pid}/stat").exists():
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def plain_pass(store: Store, jobs: list[Callable[[], None]]) -> dict[str, float]:
    statements = 0

    def count(*_: Any) -> None:
        nonlocal statements
        statements += 1

    pid = None
    if store.engine.dialect.name == "postgresql":
        with store.engine.connect() as conn:  # the one pooled connection the jobs reuse
            pid = conn.execute(text("SELECT pg_backend_pid()")).scalar()
    event.listen(store.engine, "before_cursor_execute", count)
    server0, client0, wall0 = backend_cpu_s(pid), time.process_time(), time.perf_counter()
    for job in jobs:
        job()
    wall, client = time.perf_counter() - wall0, time.process_time() - client0
    server = backend_cpu_s(pid) - server0
    event.remove(store.engine, "before_cursor_execute", count)
    n = len(jobs)
    return {
        "wall_ms": wall / n * 1000,
        "client_ms": client / n * 1000,
        "server_ms": server / n * 1000,
        "statements": statements / n,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], default="postgresql")
    parser.add_argument("--purchases", type=int, default=400)
    parser.add_argument("--pg-url", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    parser.add_argument("--sort", default="tottime", help="cProfile order (tottime, cumulative)")
    parser.add_argument("--top", type=int, default=15, help="functions to list")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="store-profile-"))
    url, drop = fresh_url(args.backend, args.pg_url, root)
    store = Store(engine=make_engine(url), home=root / "home")
    try:
        migrate(store.engine)
        provider = SandboxProvider()
        jobs = [_buy(store, provider, who, q) for who, q in setup(store, root, args.purchases)]
        for job in jobs[:WARM_UP]:
            job()
        half = (len(jobs) + WARM_UP) // 2
        plain = plain_pass(store, jobs[WARM_UP:half])
        profile = cProfile.Profile()
        start = time.perf_counter()
        profile.enable()
        for job in jobs[half:]:
            job()
        profile.disable()
        profiled_ms = (time.perf_counter() - start) / (len(jobs) - half) * 1000
    finally:
        store.engine.dispose()
        drop()
        shutil.rmtree(root, ignore_errors=True)
    stats = pstats.Stats(profile)
    waits = sum(
        calls
        for (path, _, name), (calls, *_rest) in stats.stats.items()  # type: ignore[attr-defined]
        if name.startswith("wait") and "psycopg" in path
    )
    print(
        f"{args.backend}, one thread, load {os.getloadavg()[0]:.2f}: "
        f"{plain['wall_ms']:.2f} ms wall per confirm, {plain['client_ms']:.2f} ms client CPU, "
        f"{plain['server_ms']:.2f} ms server CPU (PostgreSQL backend), "
        f"{plain['statements']:.1f} statements (BEGIN and COMMIT not counted)"
    )
    print(
        f"under cProfile: {profiled_ms:.1f} ms per confirm, "
        f"{waits / (len(jobs) - half):.1f} waits on the server per confirm (psycopg)"
    )
    stats.sort_stats(args.sort).print_stats(args.top)


if __name__ == "__main__":
    main()
