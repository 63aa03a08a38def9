"""The committed fixtures are exactly what tests/assets/make_kit_fixtures.py writes today."""

from __future__ import annotations

from pathlib import Path

from tests.assets.make_kit_fixtures import PACKAGE_DIR, write_fixtures, write_package
from tests.kit.helpers import ASSETS


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_fixture_package_is_up_to_date(tmp_path: Path) -> None:
    write_package(tmp_path)
    assert _tree(tmp_path) == _tree(PACKAGE_DIR), "run tests/assets/make_kit_fixtures.py"


def test_fixture_kits_are_up_to_date(tmp_path: Path) -> None:
    written = write_fixtures(tmp_path)
    assert len(written) == 28
    for path in written:
        committed = ASSETS / path.name
        assert committed.read_bytes() == path.read_bytes(), (
            f"{path.name} is stale: run make_kit_fixtures.py"
        )
