"""Dependencies point one way: cli -> catalog -> tune -> domain packages -> package ->
engines -> errors.

A domain package never imports the CLI (or a web or store layer); the package layer
imports nothing but itself and the shared modules; the verifier never imports the kit
builder, so it stays usable on its own.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "servekit"
SHARED = {"errors", "config", "progress", "seams", "__init__"}
FRONT_ENDS = {"cli", "web", "store"}

# area -> servekit areas it must not import
DOMAIN = {"package", "weights", "receipts", "bench", "verify", "kit", "catalog", "fit"}
FORBIDDEN: dict[str, set[str]] = {
    # what each engine is: read by the kit writer, the claim rules, fit and the tuner
    "engines": FRONT_ENDS | DOMAIN | {"feed", "replay", "tune"},
    "package": FRONT_ENDS | {"weights", "receipts", "bench", "verify", "kit", "catalog", "fit"},
    "weights": FRONT_ENDS | {"receipts", "bench", "verify", "kit", "catalog"},
    "receipts": FRONT_ENDS | {"bench", "verify", "kit", "catalog"},
    "bench": FRONT_ENDS | {"receipts", "verify", "kit", "catalog", "weights"},
    "verify": FRONT_ENDS | {"kit", "bench", "catalog"},
    "kit": FRONT_ENDS | {"verify", "bench", "catalog"},
    "catalog": FRONT_ENDS,
    "fit": FRONT_ENDS | {"receipts", "bench", "verify", "kit", "catalog"},
    "feed": FRONT_ENDS | {"bench", "kit", "catalog", "replay"},
    "replay": FRONT_ENDS | {"kit", "catalog", "feed"},
    # the tuner starts engines, measures with the harness and writes a package draft
    "tune": FRONT_ENDS | {"verify", "kit", "catalog", "feed", "replay"},
    # the store is imported by the CLI and the web layer, never the other way
    "store": {"cli", "web"},
    "web": {"cli"},
}
for _area_name in DOMAIN | {"feed", "replay"}:
    FORBIDDEN[_area_name] |= {"tune"}  # the tuner reads the domain packages, never the reverse


def _area(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _imported_areas(path: Path) -> set[str]:
    areas = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        areas |= {n.split(".")[1] for n in names if n.startswith("servekit.") and "." in n}
    return areas


MODULES = sorted(p for p in SRC.rglob("*.py") if _area(p) not in SHARED | {"cli"})


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_imports_point_one_way(path: Path) -> None:
    area = _area(path)
    bad = _imported_areas(path) & FORBIDDEN.get(area, FRONT_ENDS)
    assert not bad, f"{path.relative_to(SRC)} ({area}) must not import servekit.{sorted(bad)}"


def test_shared_modules_import_no_area() -> None:
    for name in SHARED - {"__init__"}:
        paths = sorted((SRC / name).rglob("*.py")) if (SRC / name).is_dir() else []
        for path in paths or [SRC / f"{name}.py"]:
            areas = _imported_areas(path) - SHARED
            assert not areas, f"{path.relative_to(SRC)} imports {areas}"


def test_every_area_has_a_rule() -> None:
    areas = {p.name for p in SRC.iterdir() if p.is_dir() and not p.name.startswith("_")} - SHARED
    assert areas - FRONT_ENDS <= set(FORBIDDEN), f"add rules for {areas - set(FORBIDDEN)}"
