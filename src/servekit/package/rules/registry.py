"""The rule registry: each rule is one function that carries its id, name, statement and
the seed refusal it enforces (``@rule(...)``), registered in :data:`RULES` by id."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from servekit.errors import ClaimViolation

if TYPE_CHECKING:
    from servekit.package.rules.context import Context


class RuleId(StrEnum):
    """Every rule's stable id, the one place an id is written (a test keeps it so): a rule
    and the code that names it use the member (``RuleId.SPEEDUP_BASELINE``), and the
    member's name, in lower case with dashes, is the rule's name (``speedup-baseline``)."""

    MEASURED_RECOMPUTES = "SK101"
    MEASURED_NEEDS_RECORDS = "SK102"
    REPORTED_NEEDS_SOURCE = "SK103"
    RUNS_AGREE = "SK104"
    THROUGHPUT_SCOPE = "SK105"
    SPEEDUP_BASELINE = "SK106"
    ACCURACY_RECOVERY = "SK107"
    BY_CONSTRUCTION = "SK108"
    AGREEMENT_INFORMATIONAL = "SK109"
    PEAK_MEMORY_SOURCE = "SK110"
    COST_BASIS = "SK111"
    MODALITY_DISCLOSURE = "SK112"
    CONTEXT_DISCLOSURE = "SK113"
    FIGURE_ATTRIBUTION = "SK114"
    GRID_COVERAGE = "SK115"
    CLEAN_RUNS = "SK116"
    SIMULATOR_DISCLOSURE = "SK117"
    FINITE_NUMBERS = "SK118"
    TIME_ORDER = "SK119"
    OUTPUT_TOKENS_COUNTED = "SK120"
    UNIQUE_REQUESTS = "SK121"
    ALL_REQUESTS_RECORDED = "SK122"
    WARMUP_FIRST = "SK123"
    RECORDS_BELONG = "SK124"
    WORKLOAD_RANGES = "SK125"
    ACHIEVED_CONCURRENCY = "SK126"
    RUN_IDENTITY = "SK127"
    ALL_RUNS_USED = "SK128"
    INDEPENDENT_REPLICATES = "SK129"
    SPEEDUP_SAME_CONTRACT = "SK130"
    STOCK_BASELINE = "SK131"
    FLOOR_PROOF = "SK132"
    PIN_IS_THE_PIN = "SK133"
    REPORTED_WORKLOAD = "SK134"
    SHIPPED_IS_MEASURED = "SK135"
    RECORDED_NOT_BLANK = "SK136"
    DATES_IN_ORDER = "SK137"
    PROMPTS_RECOMPUTED = "SK138"
    CONFIRMATION_NOT_SELECTION = "SK140"
    TUNED_NUMERICS_MEASURED = "SK141"

    @property
    def rule_name(self) -> str:
        return self.name.lower().replace("_", "-")


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


def rule(rule_id: RuleId, statement: str, seed_refusal: str) -> Callable[[RuleFn], RuleFn]:
    """Register a rule function under ``rule_id``, named by it (ids are unique; order is by
    id)."""

    def register(fn: RuleFn) -> RuleFn:
        if rule_id.value in RULES:
            raise ValueError(f"rule {rule_id.value} is registered twice")
        family = fn.__module__.rsplit(".", 1)[-1]
        entry = Rule(rule_id.value, rule_id.rule_name, statement, seed_refusal, family, fn)
        RULES[rule_id.value] = entry
        return fn

    return register


def finding(
    rule_id: RuleId, field: str, message: str, fix: str, figures: tuple[str, ...] = ()
) -> Finding:
    return Finding(rule=rule_id.value, field=field, message=message, fix=fix, figures=figures)
