"""A catalog holds each package id and version once."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from servekit.catalog import load_catalog
from servekit.errors import PackageError
from tests.kit.helpers import PACKAGE_DIR


def test_two_packages_with_one_id_and_version_are_refused(tmp_path: Path) -> None:
    shutil.copytree(PACKAGE_DIR, tmp_path / "a")
    assert [c.id for c in load_catalog(tmp_path).cards] == ["kit-fixture"]
    shutil.copytree(PACKAGE_DIR, tmp_path / "b")
    with pytest.raises(PackageError, match=r"are both kit-fixture 1\.0\.0") as info:
        load_catalog(tmp_path)
    assert str(tmp_path / "a") in info.value.message and str(tmp_path / "b") in info.value.message
