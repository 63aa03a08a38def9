"""Fixtures shared across test directories, registered once so that a session fixture runs
once per session (a fixture imported into several modules would run once per module).

Under pytest-xdist (`make test` runs ``-n auto --dist loadgroup``: docs/testing.md) a
session or module fixture runs once per worker that runs a test needing it, so the tests
sharing an expensive one are kept on one worker: every test of a module with a
module-scoped fixture of its own runs on one worker, and every test that reads the
simulator replays (two real replays of the grid) on one worker.
"""

from __future__ import annotations

import pytest

pytest_plugins = ["tests.replay.fixtures"]

# session fixtures whose set-up costs seconds of real time: their users share one worker
SHARED_SESSION_FIXTURES = ("replays",)


def _xdist_group(item: pytest.Item) -> str | None:
    names = getattr(item, "fixturenames", ())
    for name in SHARED_SESSION_FIXTURES:
        if name in names:
            return name
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    for defs in info.name2fixturedefs.values():
        if any(d.scope == "module" for d in defs):
            return item.nodeid.split("::", 1)[0]
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.pluginmanager.hasplugin("xdist"):
        return  # the marker is xdist's (and unregistered without it: --strict-markers)
    for item in items:
        group = _xdist_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
