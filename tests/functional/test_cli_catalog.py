"""`servekit catalog show` and `export`, run as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

from tests.functional.helpers import EXAMPLES, servekit

TINY = EXAMPLES / "tiny-sim"


def test_show_prints_every_figure_with_its_badge() -> None:
    text = servekit("catalog", "show", str(TINY))
    assert text.returncode == 0, text.stderr
    as_json = servekit("catalog", "show", str(TINY), "--json")
    assert as_json.returncode == 0, as_json.stderr
    card = json.loads(as_json.stdout)
    assert card["figures"], card
    for figure in card["figures"]:
        assert figure["label"] in text.stdout and f"[{figure['badge']}]" in text.stdout
    assert f"accuracy: {card['accuracy_claim']}" in " ".join(text.stdout.split())


def test_export_writes_the_static_catalog(tmp_path: Path) -> None:
    packages = tmp_path / "packages"
    packages.mkdir()
    (packages / "tiny-sim").symlink_to(TINY)
    result = servekit("catalog", "export", str(packages), "--out", str(tmp_path / "site"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("wrote ") and (tmp_path / "site" / "index.html").is_file()


def test_export_of_a_folder_without_packages_is_a_usage_error(tmp_path: Path) -> None:
    result = servekit("catalog", "export", str(tmp_path), "--out", str(tmp_path / "site"))
    assert result.returncode == 2 and "no package.yaml under" in result.stderr
