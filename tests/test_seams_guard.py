"""Foreign exceptions are translated in one place: ``servekit.seams``.

A module outside the seams that catches ``FileNotFoundError`` (or another "cannot read"
``OSError``), pydantic's ``ValidationError`` or PyYAML's ``YAMLError`` is translating an
error by hand, the copy that ``seams.read_bytes``/``read_utf8``/``reading``,
``seams.validating``/``parsing`` and ``seams.parse_yaml`` exist to replace. The few catches that translate nothing are listed, each with why.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "servekit"
SEAMS = SRC / "seams"
CAUGHT = {
    "FileNotFoundError",
    "IsADirectoryError",
    "PermissionError",
    "ValidationError",
    "YAMLError",  # YAML is parsed by seams.parse_yaml (no aliases, no duplicate keys)
}

# (module, exception) -> how many catches, and why each is not a translation
ALLOWED: dict[tuple[str, str], int] = {
    # a stored catalog entry from another servekit version is rebuilt from its package
    # (a fallback, not an error to report)
    ("catalog/publish.py", "ValidationError"): 1,
}


def _names(node: ast.expr | None) -> list[str]:
    if node is None:
        return []
    if isinstance(node, ast.Tuple):
        return [name for element in node.elts for name in _names(element)]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    return [node.id] if isinstance(node, ast.Name) else []


def caught(path: Path) -> list[tuple[str, int]]:
    """Every (exception, line) in ``path`` that an ``except`` names from :data:`CAUGHT`."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        (name, node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.ExceptHandler)
        for name in _names(node.type)
        if name in CAUGHT
    ]


def _outside_seams() -> dict[tuple[str, str], list[int]]:
    found: dict[tuple[str, str], list[int]] = {}
    for path in sorted(SRC.rglob("*.py")):
        if path.is_relative_to(SEAMS):
            continue
        for name, line in caught(path):
            found.setdefault((path.relative_to(SRC).as_posix(), name), []).append(line)
    return found


def test_no_module_outside_the_seams_translates_read_or_validation_errors() -> None:
    found = _outside_seams()
    unexpected = {
        f"{module}:{lines} except {name}"
        for (module, name), lines in found.items()
        if len(lines) > ALLOWED.get((module, name), 0)
    }
    assert not unexpected, (
        "translate these through servekit.seams (read_bytes, read_utf8, reading, validating, "
        f"parsing), or allow them in ALLOWED with the reason: {sorted(unexpected)}"
    )


def test_the_allow_list_holds_no_stale_entry() -> None:
    counts = Counter({key: len(lines) for key, lines in _outside_seams().items()})
    stale = {key: n for key, n in ALLOWED.items() if counts[key] < n}
    assert not stale, f"remove or lower these ALLOWED entries: {stale}"


def test_the_guard_sees_each_form_of_catch(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "try:\n    pass\nexcept FileNotFoundError:\n    pass\n"
        "except (OSError, pydantic.ValidationError) as exc:\n    pass\n"
        "except PermissionError:\n    pass\nexcept OSError:\n    pass\n",
        encoding="utf-8",
    )
    assert caught(module) == [
        ("FileNotFoundError", 3),
        ("ValidationError", 5),
        ("PermissionError", 7),
    ]
