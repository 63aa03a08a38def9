"""The rule registry: each rule is one function that carries its id, name, statement and
the seed refusal it enforces (``@rule(...)``), registered in :data:`RULES` by id."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from servekit.errors import ClaimViolation

if TYPE_CHECKING:
    from servekit.package.rules.context import Context


@dataclass(frozen=True)
class Finding(ClaimViolation):
    """A violation, with the figures it refuses (so every view can show them refused)."""

    figures: tuple[str, ...] = ()


Findings = Iterator[Finding]
RuleFn = Callable[["Context"], Findings]


@dataclass(frozen=True)
class Rule:
    id: str
    name: str
    statement: str
    seed_refusal: str
    family: str
    fn: RuleFn


RULES: dict[str, Rule] = {}


def rule(rule_id: str, name: str, statement: str, seed_refusal: str) -> Callable[[RuleFn], RuleFn]:
    """Register a rule function under ``rule_id`` (ids are unique; order is by id)."""

    def register(fn: RuleFn) -> RuleFn:
        if rule_id in RULES:
            raise ValueError(f"rule {rule_id} is registered twice")
        family = fn.__module__.rsplit(".", 1)[-1]
        RULES[rule_id] = Rule(rule_id, name, statement, seed_refusal, family, fn)
        return fn

    return register


def finding(
    rule_id: str, field: str, message: str, fix: str, figures: tuple[str, ...] = ()
) -> Finding:
    return Finding(rule=rule_id, field=field, message=message, fix=fix, figures=figures)
