"""Dependencies point one way: the verifier stands without the kit builder, and the domain
packages (receipts, kit, verify) never import a front end or the store."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kit.helpers import ROOT

SRC = ROOT / "src" / "servekit"
FRONT_ENDS = ("servekit.cli", "servekit.web", "servekit.store", "servekit.catalog")


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def _modules(*areas: str) -> list[Path]:
    return [p for area in areas for p in sorted((SRC / area).rglob("*.py"))]


@pytest.mark.parametrize(
    "path", _modules("receipts", "kit", "verify"), ids=lambda p: str(p.relative_to(SRC))
)
def test_domain_packages_never_import_front_ends(path: Path) -> None:
    bad = {m for m in _imports(path) if m.startswith(FRONT_ENDS)}
    assert not bad, f"{path.name} imports {bad}"


@pytest.mark.parametrize(
    "path",
    [*_modules("receipts"), SRC / "verify" / "kit.py", SRC / "verify" / "archive.py"],
    ids=lambda p: str(p.relative_to(SRC)),
)
def test_verifier_and_receipts_never_import_the_builder(path: Path) -> None:
    bad = {m for m in _imports(path) if m.startswith("servekit.kit")}
    assert not bad, f"{path.name} imports {bad}"


def test_importing_the_verifier_loads_no_builder_module() -> None:
    code = "import sys, servekit.verify.kit; print([m for m in sys.modules if m.startswith('servekit.kit')])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
