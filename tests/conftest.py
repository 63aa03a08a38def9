"""Fixtures shared across test directories, registered once so that a session fixture runs
once per session (a fixture imported into several modules would run once per module).

Every account the suite creates is hashed at argon2's cheapest parameters (docs/settings.md,
``SERVEKIT_PASSWORD_HASHING``), in this process and in every server and CLI it starts: at
the production cost they took about half of the store tests' time. The tests of the
production cost itself set it back (the ``production_cost`` fixture)."""

import os
import signal
from collections.abc import Iterator

import pytest

os.environ.setdefault("SERVEKIT_PASSWORD_HASHING", "cheapest-for-tests")

pytest_plugins = ["tests.replay.fixtures"]


@pytest.fixture
def production_cost(monkeypatch: pytest.MonkeyPatch) -> None:
    """argon2 at the cost a store runs at, for the tests of that cost and of the timing it
    equalises."""
    monkeypatch.setenv("SERVEKIT_PASSWORD_HASHING", "rfc9106-low-memory")


_WATCHED_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _handlers() -> dict[int, object]:
    return {signum: signal.getsignal(signum) for signum in _WATCHED_SIGNALS}


_AT_START = _handlers()


def _changed(before: dict[int, object], after: dict[int, object]) -> dict[str, object]:
    return {signal.Signals(s).name: (before[s], after[s]) for s in before if before[s] != after[s]}


@pytest.fixture(autouse=True)
def _signal_handlers_are_left_as_found(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test or fixture that leaves SIGINT ignored makes every CLI a later test of the same
    worker starts ignore Ctrl-C (an ignored signal is inherited through exec): the
    interrupted `bench run` test then waits out its timeout. It fails here, by name: the
    test itself, or the first test whose module or session fixtures changed them."""
    before = _handlers()
    set_up = _changed(_AT_START, before)
    if set_up:
        for signum, handler in _AT_START.items():
            signal.signal(signum, handler)
        pytest.fail(f"a fixture of {request.node.nodeid} changed signal handlers: {set_up}")
    yield
    after = _handlers()
    for signum, handler in before.items():
        signal.signal(signum, handler)
    changed = _changed(before, after)
    assert not changed, f"{request.node.nodeid} left signal handlers changed: {changed}"
