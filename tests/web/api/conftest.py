"""The API tests use the store's fixtures: both databases, real commits, one world per module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from servekit.store.db import Store, make_engine
from tests.store.conftest import Backend, Packages, backend, key, packages
from tests.web.api.world import World, make_world

__all__ = ["backend", "key", "packages"]


@pytest.fixture(scope="module")
def world(
    backend: Backend, packages: Packages, key: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    """Alice (workspace alpha) holding three versions, and Bob (bravo) holding nothing yet."""
    store = Store(engine=make_engine(backend.new_url()), home=tmp_path_factory.mktemp("home"))
    made = make_world(store, packages, key)
    yield made
    made.client.close()
    store.engine.dispose()
