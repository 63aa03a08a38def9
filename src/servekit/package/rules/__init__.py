"""Claim rules: every published figure must be carried by the package's evidence.

Each rule is one function that carries its stable id (``SK1xx``), name, statement and
the seed refusal it enforces (:func:`~servekit.package.rules.registry.rule`); rules live
one module per family (figures, records, runs, speedups, accuracy, memory_cost,
disclosures, pin, tuning) and docs/rules.md documents every one. :func:`check` (or
:func:`check_package` for a directory) runs them all and returns a
:class:`CheckReport`; :func:`enforce` raises :class:`~servekit.errors.ClaimRuleError`
when it holds any violation.
"""

from servekit.package.rules import (  # noqa: F401  (importing registers the rules)
    accuracy,
    disclosures,
    figures,
    memory_cost,
    pin,
    records,
    runs,
    speedups,
    tuning,
)
from servekit.package.rules.registry import RULES, Finding, Rule
from servekit.package.rules.report import (
    CheckReport,
    FigureResult,
    check,
    check_package,
    enforce,
)

__all__ = [
    "RULES",
    "CheckReport",
    "FigureResult",
    "Finding",
    "Rule",
    "check",
    "check_package",
    "enforce",
]
