"""The inventory: every package and kit path is named in ``servekit.package.files`` only."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import servekit
from servekit.errors import PackageFileError
from servekit.package import files
from servekit.package.files import Role, package_files
from servekit.package.load import load_package
from tests.package.factories import edit_definition, write_package

SRC = Path(servekit.__file__).parent
INVENTORY = Path(files.__file__)


def _inventory_paths() -> tuple[set[str], set[str]]:
    """(file paths, directory names) the inventory defines, read from its constants."""
    paths, dirs = set(), set()
    for name in dir(files):
        value = getattr(files, name)
        if not isinstance(value, str) or not name.isupper():
            continue
        if name.endswith("_DIR"):
            dirs.add(value)
        elif name.endswith(("_FILE", "_CONFIG")):
            paths.add(value)
    return paths, dirs


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, kinds) and node.body and isinstance(node.body[0], ast.Expr):
            value = node.body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                found.add(id(value))
    return found


def path_literals(source: str) -> list[tuple[int, str]]:
    """(line, text) of every string in ``source`` that spells an inventory path.

    A path is a string without whitespace (messages and docstrings may name files) that
    is an inventory file, ends in one (``*/package.yaml``), or starts with an inventory
    directory (``evidence/run.jsonl``).
    """
    paths, dirs = _inventory_paths()
    tree = ast.parse(source)
    skip = _docstrings(tree)
    hits = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
            continue
        text = node.value
        if id(node) in skip or not text or any(c.isspace() for c in text):
            continue
        named = text in paths or any(text.endswith(f"/{p}") for p in paths)
        if named or any(text.startswith(f"{d}/") for d in dirs):
            hits.append((node.lineno, text))
    return hits


def test_no_module_outside_the_inventory_spells_a_package_or_kit_path() -> None:
    found = [
        f"{path.relative_to(SRC)}:{line}: {text!r}"
        for path in sorted(SRC.rglob("*.py"))
        if path != INVENTORY
        for line, text in path_literals(path.read_text(encoding="utf-8"))
    ]
    assert found == [], "use the names in servekit/package/files.py:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "source",
    [
        'PIN = "model/pin.json"',
        'dirs = root.glob("*/package.yaml")',
        'f"evidence/{name}.jsonl"',
        'kit["receipt.dsse.json"]',
        'x = {"deploy/k8s/x.yaml": b""}',
    ],
)
def test_the_check_finds_a_path_literal(source: str) -> None:
    assert path_literals(source), source


@pytest.mark.parametrize(
    "source",
    [
        '"""Reads package.yaml and model/pin.json."""',
        'raise ValueError("no package.yaml under the folder")',
        'name = "config.json"  # a file of the upstream model repo, not of the package',
    ],
)
def test_messages_docstrings_and_hub_file_names_are_not_paths(source: str) -> None:
    assert path_literals(source) == []


def test_package_files_name_every_file_with_its_role_and_kit_path(tmp_path: Path) -> None:
    loaded = write_package(tmp_path)
    listed = {(f.role, f.path, f.kit_path) for f in package_files(loaded.package)}
    assert (Role.DEFINITION, "package.yaml", "package.yaml") in listed
    assert (Role.RUN_EVIDENCE, "evidence/run-a.jsonl", "evidence/run-a.jsonl") in listed
    assert (Role.RUN_EVIDENCE, "evidence/run-b.jsonl", "evidence/run-b.jsonl") in listed
    assert (Role.LICENSE, "licenses/PACKAGE_LICENSE.md", "licenses/PACKAGE_LICENSE.md") in listed
    roles = [f.role for f in package_files(loaded.package)]
    assert roles[0] is Role.DEFINITION and Role.MODEL_LICENSE in roles


def test_kit_paths_of_files_outside_their_folder() -> None:
    assert files.evidence_kit_path("run.jsonl") == "evidence/run.jsonl"
    assert files.license_kit_path("LICENSE") == "licenses/LICENSE"
    assert files.recipe_kit_path("Dockerfile") == "deploy/build/Dockerfile"
    assert files.recipe_kit_path("build/Dockerfile") == "deploy/build/Dockerfile"


def test_two_runs_sharing_one_file_are_refused(tmp_path: Path) -> None:
    write_package(tmp_path)

    def share(definition: dict[str, object]) -> None:
        runs = definition["measurements"]["runs"]  # type: ignore[index]
        runs[1]["file"] = runs[0]["file"]

    edit_definition(tmp_path, share)
    with pytest.raises(PackageFileError, match=r"runs\[1\]\.file names evidence/run-a\.jsonl"):
        load_package(tmp_path)
