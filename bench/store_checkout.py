"""Confirmed purchases per second with concurrent buyers, beside plain inserts, same run.

For each database (SQLite in WAL mode, PostgreSQL), in a fresh database of its own:
  1. publish one priced version; create one workspace per purchase and its quote (untimed);
  2. BUYERS threads, split over WORKERS processes (each with its own connection pool, as
     ``uvicorn --workers`` runs a store), released together by a barrier, each confirm
     their quotes one after another, one transaction per confirm (lock, checks, order, sandbox charge, balanced
     journal entry, entitlement, outbox): purchases per second over the whole wall time;
  3. the baseline: the same processes and threads insert the same number of plain single-row
     transactions into a table of the same database;
  4. check the result: one order and one live entitlement per workspace, a sale entry of
     the price per order, revenue equal to orders x price, and ``audit`` clean.

Usage:
    .venv/bin/python bench/store_checkout.py [--backend sqlite|postgresql|both]
        [--buyers 16] [--workers 1] [--purchases 1600] [--pg-url postgresql+psycopg://postgres@127.0.0.1:5432/test]
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing as mp
import os
import re
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, func, select, text
from sqlalchemy.engine import make_url

from servekit.receipts.keys import generate, write_key_pair
from servekit.store import accounts, ledger
from servekit.store.audit import audit
from servekit.store.checkout import confirm, create_quote
from servekit.store.db import Store, make_engine, migrate
from servekit.store.models import Entitlement, Order, OrderKind, Role, Workspace
from servekit.store.providers import SandboxProvider
from servekit.store.publishing import MAX_USD, publish
from servekit.store.results import Principal

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "assets" / "kit_package"
PRICE_USD = 49


def priced_package(dest: Path) -> Path:
    """The kit fixture package, priced at PRICE_USD."""
    shutil.copytree(FIXTURE, dest)
    path = dest / "package.yaml"
    text_ = re.sub(r"^id: .*$", "id: bench-priced", path.read_text(), count=1, flags=re.M)
    path.write_text(
        text_[: text_.index("pricing:")] + f"pricing:\n  usd: {PRICE_USD}\n  tier: standard\n"
    )
    return dest


def fresh_url(backend: str, pg_url: str, root: Path) -> tuple[str, Callable[[], None]]:
    if backend == "sqlite":
        return f"sqlite:///{root / 'bench.db'}", lambda: None
    name = f"servekit_bench_{uuid.uuid4().hex[:10]}"
    admin = create_engine(pg_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()

    return make_url(pg_url).set(database=name).render_as_string(hide_password=False), drop


def setup(store: Store, root: Path, purchases: int) -> list[tuple[Principal, int]]:
    """Step 1: a priced version, and a workspace with a quote per purchase."""
    keys = write_key_pair(generate(), root / "keys")
    with store.transaction() as s:
        publish(
            priced_package(root / "pkg"),
            keys.private,
            kits_dir=store.kits_dir,
            threshold_usd=float(MAX_USD),  # never reached: no licence needed
            session=s,
        )
        uid = accounts.create_user("bench@example.com", "sturdy quiet lantern phrase", session=s)
    work = []
    with store.transaction() as s:
        for n in range(purchases):
            wid = accounts.create_workspace(f"ws-{n}", f"ws {n}", owner_id=uid, session=s)
            who = Principal(user_id=uid, workspace_id=wid, workspace=f"ws-{n}", role=Role.OWNER)
            work.append(
                (who, create_quote(who, "bench-priced", "1.0.0", OrderKind.PURCHASE, session=s).id)
            )
    return work


def race(buyers: int, jobs: list[Callable[[], None]], gate: Any = None) -> tuple[float, float]:
    """Run ``jobs`` on ``buyers`` threads released together (with the other workers, through
    ``gate``, when there are several); returns the monotonic start and end."""
    barrier = threading.Barrier(buyers + 1)
    errors: list[BaseException] = []

    def run(mine: list[Callable[[], None]]) -> None:
        barrier.wait()
        for job in mine:
            try:
                job()
            except BaseException as exc:  # reported after the run
                errors.append(exc)

    threads = [threading.Thread(target=run, args=(jobs[i::buyers],)) for i in range(buyers)]
    for t in threads:
        t.start()
    if gate is not None:
        gate.wait()
    barrier.wait()
    start = time.monotonic()
    for t in threads:
        t.join()
    end = time.monotonic()
    if errors:
        raise RuntimeError(f"{len(errors)} jobs failed; first: {errors[0]!r}")
    return start, end


def _buy(
    store: Store, provider: SandboxProvider, who: Principal, quote_id: int
) -> Callable[[], None]:
    def job() -> None:
        with store.transaction() as s:
            confirm(who, quote_id, f"bench-{quote_id}", provider=provider, session=s)

    return job


def _insert(store: Store, n: int) -> Callable[[], None]:
    def job() -> None:
        with store.engine.begin() as conn:
            conn.execute(
                text("INSERT INTO bench_plain (id, payload) VALUES (:i, :p)"),
                {"i": n, "p": "x" * 32},
            )

    return job


def worker(
    url: str, home: Path, phase: str, work: list[Any], buyers: int, gate: Any
) -> tuple[float, float]:
    """One server process: its own engine and pool, ``buyers`` threads (as a uvicorn worker
    has its own). ``phase`` is "confirm" (work: principal, quote id) or "plain" (row ids)."""
    logging.getLogger("servekit.store.providers").setLevel(logging.ERROR)
    store = Store(engine=make_engine(url), home=home)
    provider = SandboxProvider()
    try:
        jobs = (
            [_buy(store, provider, who, q) for who, q in work]
            if phase == "confirm"
            else [_insert(store, n) for n in work]
        )
        return race(buyers, jobs, gate)
    finally:
        store.engine.dispose()


def timed(url: str, home: Path, phase: str, work: list[Any], buyers: int, workers: int) -> float:
    """Wall seconds for ``work`` split over ``workers`` processes of ``buyers / workers``
    threads each, from the common release to the last buyer's end."""
    if workers == 1:
        start, end = worker(url, home, phase, work, buyers, None)
        return end - start
    ctx = mp.get_context("spawn")
    gate = ctx.Manager().Barrier(workers)
    per = max(1, buyers // workers)
    with ProcessPoolExecutor(workers, mp_context=ctx) as pool:
        spans = list(
            pool.map(
                worker,
                [url] * workers,
                [home] * workers,
                [phase] * workers,
                [work[i::workers] for i in range(workers)],
                [per] * workers,
                [gate] * workers,
            )
        )
    return max(e for _, e in spans) - min(s for s, _ in spans)


def check(store: Store, purchases: int) -> None:
    """Step 4: zero double charges, every sum right, audit clean."""
    with store.transaction() as s:
        orders = s.scalar(select(func.count(Order.id))) or 0
        live = s.execute(
            select(Entitlement.workspace_id).where(Entitlement.revoked_at.is_(None))
        ).all()
        revenue = sum(
            b.amount_cents for b in ledger.balances(session=s) if b.account == ledger.REVENUE
        )
        workspaces = s.scalar(select(func.count(Workspace.id))) or 0
        report = audit(session=s)
    assert orders == purchases == workspaces, (orders, purchases, workspaces)
    assert len(live) == len(set(live)) == purchases, "a workspace was charged twice"
    assert revenue == -purchases * PRICE_USD * 100, revenue
    assert report.ok, report.first_break


def measure(
    backend: str, buyers: int, workers: int, purchases: int, pg_url: str
) -> dict[str, float]:
    root = Path(tempfile.mkdtemp(prefix=f"store-bench-{backend}-"))
    url, drop = fresh_url(backend, pg_url, root)
    store = Store(engine=make_engine(url), home=root / "home")
    try:
        migrate(store.engine)
        work = setup(store, root, purchases)
        confirm_s = timed(url, store.home, "confirm", work, buyers, workers)  # 2
        check(store, purchases)  # 4
        with store.engine.begin() as conn:
            conn.execute(
                text("CREATE TABLE bench_plain (id INTEGER PRIMARY KEY, payload VARCHAR(64))")
            )
        plain_s = timed(url, store.home, "plain", list(range(purchases)), buyers, workers)  # 3
    finally:
        store.engine.dispose()
        drop()
        shutil.rmtree(root, ignore_errors=True)
    return {"confirm_per_s": purchases / confirm_s, "plain_per_s": purchases / plain_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--buyers", type=int, default=16)
    parser.add_argument(
        "--workers", type=int, default=1, help="processes the buyers are split over (uvicorn -w)"
    )
    parser.add_argument("--purchases", type=int, default=1600)
    parser.add_argument("--pg-url", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()
    backends = ["sqlite", "postgresql"] if args.backend == "both" else [args.backend]
    print(
        f"{args.buyers} concurrent buyers in {args.workers} process(es), "
        f"{args.purchases} purchases, sandbox provider; load average {os.getloadavg()[0]:.2f}"
    )
    print(
        f"{'database':<11} {'confirmed/s':>12} {'plain inserts/s':>16} {'ratio':>6}  double charges"
    )
    for backend in backends:
        r = measure(backend, args.buyers, args.workers, args.purchases, args.pg_url)
        ratio = r["confirm_per_s"] / r["plain_per_s"]
        print(
            f"{backend:<11} {r['confirm_per_s']:>12.0f} {r['plain_per_s']:>16.0f} {ratio:>6.2f}"
            f"  0 (checked)  load {os.getloadavg()[0]:.2f}"
        )


if __name__ == "__main__":
    main()
