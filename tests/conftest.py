"""Fixtures shared across test directories, registered once so that a session fixture runs
once per session (a fixture imported into several modules would run once per module).

Every account the suite creates is hashed at argon2's cheapest parameters (docs/settings.md,
``SERVEKIT_PASSWORD_HASHING``), in this process and in every server and CLI it starts: at
the production cost they took about half of the store tests' time. The tests of the
production cost itself set it back (tests/store/test_accounts.py)."""

import os

import pytest

os.environ.setdefault("SERVEKIT_PASSWORD_HASHING", "cheapest-for-tests")

pytest_plugins = ["tests.replay.fixtures"]

LONGEST_FIRST = (
    "tests/tune/test_acceptance.py",
    "tests/packaging/test_core_install.py",
    "tests/functional/test_browser_store.py",
    "tests/functional/test_cli_weights.py",
    "tests/replay/test_reproduction.py",
    "tests/cli/test_layout.py",
    "tests/functional/test_cli_kit.py",
    "tests/functional/test_cli_bench_outcomes.py",
    "tests/store/test_state_machine.py",
    "tests/functional/test_cli_bench.py",
    "tests/functional/test_browser_catalog.py",
    "tests/feed/test_cli_feed.py",
)
"""The modules that took longest on one worker (`--durations=0`, 2026-12-02), run first:
`make test`'s workers take whole modules in collection order, and one of these collected
last kept one worker busy for a minute or more after the other had finished."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {module: i for i, module in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.partition("::")[0], len(rank)))
