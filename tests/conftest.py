"""Fixtures shared across test directories, registered once so that a session fixture runs
once per session (a fixture imported into several modules would run once per module).

Every account the suite creates is hashed at argon2's cheapest parameters (docs/settings.md,
``SERVEKIT_PASSWORD_HASHING``), in this process and in every server and CLI it starts: at
the production cost they took about half of the store tests' time. The tests of the
production cost itself set it back (the ``production_cost`` fixture)."""

import os

import pytest

os.environ.setdefault("SERVEKIT_PASSWORD_HASHING", "cheapest-for-tests")

pytest_plugins = ["tests.replay.fixtures"]


@pytest.fixture
def production_cost(monkeypatch: pytest.MonkeyPatch) -> None:
    """argon2 at the cost a store runs at, for the tests of that cost and of the timing it
    equalises."""
    monkeypatch.setenv("SERVEKIT_PASSWORD_HASHING", "rfc9106-low-memory")
