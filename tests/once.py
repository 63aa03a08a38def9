"""A session's expensive directory built once for the whole run, not once per xdist worker.

Under `make test` each worker is its own process with its own session fixtures, so a
fixture that runs the simulator for 15 s runs it on every worker whose modules ask for it.
:func:`built_once` builds the directory in the run's shared temporary root (the parent of
the workers' own roots) under an exclusive lock: the first worker builds it, the others
wait for it and read it. Tests only read what it returns; one that edits copies it first.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest


def shared_root(factory: pytest.TempPathFactory) -> Path:
    """The temporary root every worker of this run sees (the session's own in one process)."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """``shared_root/name``, made by ``build(directory)`` unless a worker already made it.

    A build that raises leaves nothing behind: the next worker that asks builds it afresh
    (and most likely fails the same way, in its own test's report).
    """
    root = shared_root(factory)
    target, done = root / name, root / f"{name}.done"
    with (root / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir()
            try:
                build(target)
            except BaseException:
                shutil.rmtree(target, ignore_errors=True)
                raise
            done.touch()
    return target
