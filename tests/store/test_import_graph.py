"""The store's modules import each other one way, counting type-only imports.

A cycle hidden behind ``if TYPE_CHECKING:`` still ties two modules together (neither can
move or be read alone), so the graph is built from every import statement in the source,
wherever it stands, and must have no cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import servekit.store

PACKAGE = "servekit.store"


def _modules(root: Path) -> dict[str, Path]:
    """Every module of the package under ``root``, by dotted name (a package by its own)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join((PACKAGE, *parts))] = path
    return found


def _imported(node: ast.AST, here: str, is_package: bool, known: set[str]) -> Iterator[str]:
    """The store modules one import statement names (``from P import m``: ``P.m`` when it
    is a module, else ``P``)."""
    if isinstance(node, ast.Import):
        yield from (a.name for a in node.names if a.name in known)
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:  # relative: from the importing module's package
            anchor = here.split(".")
            anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
            base = ".".join([*anchor, *([base] if base else [])])
        for alias in node.names:
            if f"{base}.{alias.name}" in known:
                yield f"{base}.{alias.name}"
            elif base in known:
                yield base


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the store modules it imports, from every import statement in it
    (``TYPE_CHECKING`` blocks and function bodies included)."""
    modules = _modules(root)
    known = set(modules)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        is_package = path.name == "__init__.py"
        edges = {m for node in ast.walk(tree) for m in _imported(node, name, is_package, known)}
        graph[name] = edges - {name}
    return graph


def find_cycle(graph: Mapping[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as the path around it, or None (depth-first, three colours)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)) is not None:
            return cycle
    return None


def test_the_store_import_graph_has_no_cycle_even_counting_type_only_imports() -> None:
    graph = import_graph(Path(servekit.store.__file__).parent)
    assert len(graph) > 20 and "servekit.store.checkout" in graph
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])


def test_a_type_only_cycle_is_found(tmp_path: Path) -> None:
    """The checker itself: a cycle closed only under ``if TYPE_CHECKING:`` is one."""
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "a.py").write_text("from servekit.store.b import f\n")
    (tmp_path / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from servekit.store import a\n"
    )
    (tmp_path / "c.py").write_text("from . import a\n")
    graph = import_graph(tmp_path)
    assert graph["servekit.store.c"] == {"servekit.store.a"}
    assert find_cycle(graph) == ["servekit.store.a", "servekit.store.b", "servekit.store.a"]
