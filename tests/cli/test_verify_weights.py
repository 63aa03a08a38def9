"""`verify weights --package` and `--kit` apply one rule set: the same package, as a
directory and as the kit built from it, gives the same verdict on the same tree."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from servekit.kit.build import build_kit
from tests.cli.helpers import run_cli
from tests.functional.helpers import EXAMPLES
from tests.kit.helpers import KEYS, private_key

TINY = EXAMPLES / "tiny-sim"


def _extra(tree: Path) -> None:
    (tree / "notes.txt").write_text("not in the pin")


def _changed(tree: Path) -> None:
    data = bytearray((tree / "model.safetensors").read_bytes())
    data[len(data) // 2] ^= 1
    (tree / "model.safetensors").write_bytes(bytes(data))


def _missing(tree: Path) -> None:
    (tree / "config.json").unlink()


def _verdict(argv: list[str]) -> dict[str, Any]:
    code, out, _ = run_cli(["verify", "weights", *argv, "--json"])
    report = json.loads(out)
    kept = ("ok", "stage", "expected_tree_digest", "actual_tree_digest", "files", "bytes")
    return {"code": code, "problems": report.get("problems")} | {k: report.get(k) for k in kept}


@pytest.mark.parametrize(
    "damage",
    [None, _extra, _changed, _missing],
    ids=["intact", "extra-file", "changed-byte", "missing-file"],
)
def test_package_and_its_kit_give_one_verdict_on_one_tree(
    tmp_path: Path, damage: Callable[[Path], None] | None
) -> None:
    # tiny-sim's pin is a local digest (`servekit model digest`): it names no repository
    package = Path(shutil.copytree(TINY, tmp_path / "tiny-sim"))
    kit = tmp_path / "tiny-sim.tar.gz"
    kit.write_bytes(build_kit(package, private_key("publisher", tmp_path)).archive)
    tree = Path(shutil.copytree(package / "synthetic-model", tmp_path / "tree"))
    if damage is not None:
        damage(tree)
    by_package = _verdict([str(tree), "--package", str(package)])
    by_kit = _verdict([str(tree), "--kit", str(kit), "--trust", str(KEYS / "publisher.pub")])
    assert by_package == by_kit
    assert by_package["ok"] is (damage is None), by_package
    assert by_package["code"] == {None: 0, _extra: 12, _changed: 10, _missing: 11}[damage]
