"""Where one buyer's confirm spends its time: cProfile around N confirms, one thread.

Uses ``bench/store_checkout.py``'s setup (a priced version, a workspace and quote per
purchase) on a fresh database, then confirms them one after another in this thread and
prints the milliseconds per confirm and the top functions by own time.

Usage:
    .venv/bin/python bench/store_confirm_profile.py [--backend sqlite|postgresql]
        [--purchases 400] [--pg-url postgresql+psycopg://postgres@127.0.0.1:5432/test]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import tempfile
import time
from pathlib import Path

from store_checkout import _buy, fresh_url, setup

from servekit.store.db import Store, make_engine, migrate
from servekit.store.payments import SandboxProvider


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], default="postgresql")
    parser.add_argument("--purchases", type=int, default=400)
    parser.add_argument("--pg-url", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="store-profile-"))
    url, drop = fresh_url(args.backend, args.pg_url, root)
    store = Store(engine=make_engine(url), home=root / "home")
    try:
        migrate(store.engine)
        provider = SandboxProvider()
        jobs = [_buy(store, provider, who, q) for who, q in setup(store, root, args.purchases)]
        profile = cProfile.Profile()
        start = time.perf_counter()
        profile.enable()
        for job in jobs:
            job()
        profile.disable()
        per_ms = (time.perf_counter() - start) / len(jobs) * 1000
    finally:
        store.engine.dispose()
        drop()
        shutil.rmtree(root, ignore_errors=True)
    print(f"{per_ms:.1f} ms per confirm (one thread, under cProfile)")
    pstats.Stats(profile).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
