"""Rule ids are written once, in the registry's ``RuleId``: a rule and the code that names
it use the member, so an id cannot be mistyped in one place and missed by its tests."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from servekit.package.rules import RULES
from servekit.package.rules.registry import RuleId

SRC = Path(__file__).resolve().parents[3] / "src" / "servekit"
REGISTRY = SRC / "package" / "rules" / "registry.py"
RULE_ID = re.compile(r"SK\d{3}")


def id_literals(path: Path) -> list[tuple[str, int]]:
    """Every string constant in ``path`` that is a rule id and nothing else."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        (node.value, node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and RULE_ID.fullmatch(node.value.strip())
    ]


def test_no_rule_id_is_written_outside_the_registry() -> None:
    found = [
        f"{path.relative_to(SRC)}:{line} {value!r}"
        for path in sorted(SRC.rglob("*.py"))
        if path != REGISTRY
        for value, line in id_literals(path)
    ]
    assert not found, f"name these rules by RuleId (package/rules/registry.py): {found}"


def test_the_check_sees_a_literal(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('x = finding("SK101", "f", "m", "fix")\ny = "SK101 in prose"\n')
    assert id_literals(module) == [("SK101", 1)]


def test_every_id_names_one_registered_rule_by_its_member_name() -> None:
    assert sorted(RULES) == sorted(member.value for member in RuleId)
    for member in RuleId:
        assert RULES[member.value].name == member.name.lower().replace("_", "-")
        assert RULE_ID.fullmatch(member.value)
