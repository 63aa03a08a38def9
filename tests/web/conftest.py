"""Fixtures: a home with the example packages published, and a server reading it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from servekit.catalog.pages import package_dirs
from tests.web.server import serving, store_publish

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "packages"


@pytest.fixture(scope="session")
def examples_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("home")
    store_publish(package_dirs(EXAMPLES), home)
    return home


@pytest.fixture(scope="session")
def base_url(examples_home: Path) -> Iterator[str]:
    with serving(examples_home) as url:
        yield url
