"""Re-run the claim rules on a kit's own evidence and hold the receipt to the result.

The one call into the claim rules is :func:`servekit.package.check` (kept in this one
place). The rules read the kit's package files from the verified bytes in memory, at the
paths ``package.yaml`` names (the inverse of where ``kit build`` put them): nothing is
written to disk and nothing is read again. The receipt must record zero violations, the rules must find none
now, and each figure the receipt records must be the one recomputed here; the figures a
verifier prints are the recomputed ones.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from servekit.errors import ClaimRecheckError
from servekit.package import CheckReport, check
from servekit.package.files import RECEIPT_FILE
from servekit.package.models import Package
from servekit.receipts.models import FigureRecord, Statement
from servekit.receipts.statement import figure_records
from servekit.verify.contents import kit_loaded

HINT = "the receipt's figures are not carried by the kit's evidence; do not rely on them"


def _refuse(message: str, expected: str, actual: str) -> ClaimRecheckError:
    return ClaimRecheckError(
        message, file=RECEIPT_FILE, expected=expected, actual=actual, hint=HINT
    )


def run_rules(files: Mapping[str, bytes], package: Package) -> CheckReport:
    """The claim rules on the kit's package files (``files``: the verified bytes, by kit
    path), read in memory at the paths the package names."""
    return check(kit_loaded(files, package))


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _same_figure(signed: FigureRecord, now: FigureRecord) -> bool:
    exact = signed.model_copy(update={"recomputed": None, "per_run": {}})
    if exact != now.model_copy(update={"recomputed": None, "per_run": {}}):
        return False
    if set(signed.per_run) != set(now.per_run):
        return False
    pairs = [(signed.recomputed, now.recomputed)]
    pairs += [(signed.per_run[k], now.per_run[k]) for k in signed.per_run]
    return all(_same(a, b) for a, b in pairs)


def recheck_claims(
    files: Mapping[str, bytes], package: Package, statement: Statement
) -> tuple[FigureRecord, ...]:
    """The figures recomputed from the kit, once they agree with the receipt; else refuse."""
    recorded = statement.predicate.claim_rules.violations
    if recorded != 0:
        raise _refuse("the receipt records claim-rule violations", "0 violations", str(recorded))
    report = run_rules(files, package)
    if report.violations:
        first = report.violations[0]
        raise _refuse(
            "the claim rules refuse a figure of this kit",
            "no violation",
            f"{len(report.violations)}, first [{first.rule}] {first.field}: {first.message}",
        )
    figures = figure_records(package, report)
    for signed, now in zip(statement.predicate.figures, figures, strict=False):
        if not _same_figure(signed, now):
            raise _refuse(
                "a figure in the receipt is not the one the claim rules recompute",
                f"{now.id}: {now.value} (recomputed {now.recomputed})",
                f"{signed.id}: {signed.value} (recomputed {signed.recomputed})",
            )
    if len(figures) != len(statement.predicate.figures):
        raise _refuse(
            "the receipt lists other figures than the package",
            str(len(figures)),
            str(len(statement.predicate.figures)),
        )
    return figures
