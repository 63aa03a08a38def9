"""`servekit catalog export` as a careless user (or an attacker who can write into --out)
runs it: one page per id and version, and --force empties only an earlier export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from servekit.catalog.site import MARKER
from tests.cli.helpers import run_cli
from tests.functional.helpers import EXAMPLES
from tests.kit.helpers import PACKAGE_DIR


@pytest.fixture
def packages(tmp_path: Path) -> Path:
    """Two packages (the tiny simulator example and the kit fixture), as symbolic links."""
    root = tmp_path / "packages"
    root.mkdir()
    (root / "tiny-sim").symlink_to(EXAMPLES / "tiny-sim")
    (root / "fixture").symlink_to(PACKAGE_DIR)
    return root


def _export(packages: Path, out: Path, *more: str) -> tuple[int, str, str]:
    return run_cli(["catalog", "export", str(packages), "--out", str(out), *more])


@pytest.fixture
def site(packages: Path, tmp_path: Path) -> Path:
    """An earlier export of ``packages``."""
    out = tmp_path / "site"
    code, _, err = _export(packages, out)
    assert code == 0, err
    assert (out / MARKER).is_file() and (out / "kit-fixture-1.0.0.html").is_file()
    return out


def _precious(directory: Path, *names: str) -> Path:
    """``directory`` holding files that are not servekit's (each holds its own name)."""
    for name in names:
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(name)
    return directory


def test_two_directories_with_one_id_and_version_are_refused_by_name(
    packages: Path, tmp_path: Path
) -> None:
    (packages / "fixture-again").symlink_to(PACKAGE_DIR)
    code, out, _ = _export(packages, tmp_path / "site", "--json")
    error = json.loads(out)
    assert code == 3 and error["exit_code"] == 3 and error["error"] == "PackageError"
    assert "kit-fixture 1.0.0" in error["message"]
    assert str(packages / "fixture") in error["message"]
    assert str(packages / "fixture-again") in error["message"]
    assert not (tmp_path / "site").exists()


def test_force_replaces_an_earlier_export_and_lists_what_it_removed(
    packages: Path, site: Path
) -> None:
    (packages / "fixture").unlink()  # the kit fixture is no longer in the catalog
    code, _, err = _export(packages, site)
    assert code == 2 and "--force" in err
    code, out, err = _export(packages, site, "--force", "--json")
    assert code == 0, err
    removed = json.loads(out)["removed"]
    assert "kit-fixture-1.0.0.html" in removed
    assert not list(site.glob("kit-fixture-1.0.0*"))  # its page and any chart
    assert not (site / "files" / "kit-fixture-1.0.0").exists()
    assert "kit-fixture" not in (site / "index.html").read_text()
    assert (site / "tiny-sim-0.1.0.html").is_file() and (site / MARKER).is_file()


def test_force_never_empties_a_directory_that_is_not_an_export(
    packages: Path, tmp_path: Path
) -> None:
    mine = _precious(tmp_path / "mine", "thesis.tex")
    code, _, err = _export(packages, mine)
    assert code == 2 and "not even with --force" in err  # no hint that --force would do
    code, out, _ = _export(packages, mine, "--force", "--json")
    error = json.loads(out)
    assert (
        code == 2
        and error["error"] == "UsageError"
        and MARKER in error["message"]
        and "not a catalog export" in error["message"]
    )
    assert [p.name for p in mine.iterdir()] == ["thesis.tex"]


def test_a_marker_that_is_a_link_or_another_file_does_not_make_an_export(
    packages: Path, site: Path, tmp_path: Path
) -> None:
    elsewhere = _precious(tmp_path / "elsewhere", "keep.txt")
    (elsewhere / MARKER).symlink_to(site / MARKER)
    assert _export(packages, elsewhere, "--force")[0] == 2
    (elsewhere / MARKER).unlink()
    (elsewhere / MARKER).write_text("not servekit's\n")
    assert _export(packages, elsewhere, "--force")[0] == 2
    assert (elsewhere / "keep.txt").read_text() == "keep.txt"


def test_links_planted_in_an_export_are_removed_and_their_targets_left_alone(
    packages: Path, site: Path, tmp_path: Path
) -> None:
    outside = _precious(tmp_path / "outside", "bashrc", "dir/notes")
    (site / "index.html").unlink()
    (site / "index.html").symlink_to(outside / "bashrc")  # a page the export writes again
    (site / "files" / "tiny-sim-0.1.0" / "up").symlink_to(outside / "dir")
    (site / "stale-link").symlink_to(outside)
    code, out, err = _export(packages, site, "--force", "--json")
    assert code == 0, err
    assert (outside / "bashrc").read_text() == "bashrc"
    assert (outside / "dir" / "notes").read_text() == "dir/notes"
    assert (
        not (site / "index.html").is_symlink()
        and "<!doctype html>" in (site / "index.html").read_text()
    )
    assert {"stale-link", "files/tiny-sim-0.1.0/up"} <= set(json.loads(out)["removed"])
    assert not (site / "stale-link").exists() and not (site / "stale-link").is_symlink()
