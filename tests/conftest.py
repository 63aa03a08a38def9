"""Fixtures shared across test directories, registered once so that a session fixture runs
once per session (a fixture imported into several modules would run once per module)."""

pytest_plugins = ["tests.replay.fixtures"]
