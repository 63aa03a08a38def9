"""A catalog holds each package id and version once."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from servekit.catalog import load_catalog
from servekit.errors import PackageError
from tests.kit.helpers import PACKAGE_DIR
from tests.package.factories import edit_definition


def test_two_packages_with_one_id_and_version_are_refused(tmp_path: Path) -> None:
    shutil.copytree(PACKAGE_DIR, tmp_path / "a")
    assert [c.id for c in load_catalog(tmp_path).cards] == ["kit-fixture"]
    shutil.copytree(PACKAGE_DIR, tmp_path / "b")
    with pytest.raises(PackageError, match=r"are both kit-fixture 1\.0\.0") as info:
        load_catalog(tmp_path)
    assert str(tmp_path / "a") in info.value.message and str(tmp_path / "b") in info.value.message


def test_versions_of_a_package_come_in_version_order(tmp_path: Path) -> None:
    """The package page's history reads ``Catalog.versions`` (a lookup, not a scan)."""
    for version in ("1.10.0", "1.2.0", "1.9.1"):
        target = tmp_path / version
        shutil.copytree(PACKAGE_DIR, target)
        edit_definition(target, lambda d, v=version: d.update(version=v))
    catalog = load_catalog(tmp_path)
    versions = catalog.versions("kit-fixture")
    assert [e.card.version for e in versions] == ["1.2.0", "1.9.1", "1.10.0"]
    versions.clear()  # a copy: the caller cannot change the catalog
    assert len(catalog.versions("kit-fixture")) == 3
    assert catalog.versions("no-such-package") == []
