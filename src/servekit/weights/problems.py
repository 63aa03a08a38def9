"""Turn the problems found in a tree into the one error to raise.

All problems are reported together. The class raised is the most specific one that
covers them: when every problem is of one kind, that kind's class; when kinds are
mixed, the first class present in this order (the reason: what stops a check from
being complete comes first, then what is absent, then what is surplus, then what
differs):

1. :class:`~servekit.errors.ReadError` (unreadable or unsafe: the check is incomplete)
2. :class:`~servekit.errors.MissingFileError` (in the pin, not on disk)
3. :class:`~servekit.errors.ExtraFileError` (on disk, not in the pin)
4. :class:`~servekit.errors.FileChangedError` (size or sha256 differs, or changed while hashed)

The error's ``file``, ``expected`` and ``actual`` are those of the first problem of
the class raised; its message lists every problem.
"""

from __future__ import annotations

from collections.abc import Sequence

from servekit.errors import (
    ExtraFileError,
    FileChangedError,
    MissingFileError,
    ReadError,
    VerificationError,
    layout,
)
from servekit.weights.models import FileProblem, ProblemKind

ERROR_CLASS: dict[ProblemKind, type[VerificationError]] = {
    ProblemKind.UNREADABLE: ReadError,
    ProblemKind.UNSAFE: ReadError,
    ProblemKind.MISSING: MissingFileError,
    ProblemKind.EXTRA: ExtraFileError,
    ProblemKind.SIZE: FileChangedError,
    ProblemKind.DIGEST: FileChangedError,
    ProblemKind.CHANGED: FileChangedError,
}
PRECEDENCE: tuple[type[VerificationError], ...] = (
    ReadError,
    MissingFileError,
    ExtraFileError,
    FileChangedError,
)
HINTS: dict[type[VerificationError], str] = {
    ReadError: "make every file a readable regular file inside the tree, then run again",
    MissingFileError: "download the missing files at the pinned commit (e.g. with --fetch)",
    ExtraFileError: "remove the extra files, or pin the tree again if they belong to it",
    FileChangedError: "download the model again at the pinned commit; the bytes differ",
}


def problems_error(problems: Sequence[FileProblem], headline: str) -> VerificationError:
    """The error for ``problems`` (at least one), by the rule above."""
    if not problems:
        raise ValueError("problems_error needs at least one problem")
    present = {ERROR_CLASS[p.kind] for p in problems}
    cls = next(c for c in PRECEDENCE if c in present)
    first = next(p for p in problems if ERROR_CLASS[p.kind] is cls)
    count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
    return cls(
        layout(f"{headline} ({count}):", *(f"  {p.line()}" for p in problems)),
        file=first.path,
        expected=first.expected,
        actual=first.actual,
        hint=HINTS[cls],
    )
