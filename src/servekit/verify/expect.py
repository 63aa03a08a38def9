"""What the buyer asked for: ``--expect ID@VERSION`` or ``--expect ID@>=VERSION``.

A kit that verifies is still refused when it is another package, or an older version
than asked (a mirror serving a signed but superseded kit). Versions compare as
``MAJOR.MINOR.PATCH`` numbers; a ``-suffix`` is a pre-release (before the release), a
``.suffix`` comes after it; suffixes compare run by run, digits as numbers and letters
as text, so ``rc10`` comes after ``rc9`` (as text it would come before, and
``>=1.0.0-rc10`` would accept the older ``1.0.0-rc9``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypeAlias

from servekit.errors import UnexpectedKitError, UsageError
from servekit.package.files import PACKAGE_FILE

_EXPECT = re.compile(
    r"^(?P<id>[A-Za-z0-9._-]+)@(?P<op>>=)?(?P<version>\d+\.\d+\.\d+([.-][0-9A-Za-z.]+)?)$"
)
_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:([.-])([0-9A-Za-z.]+))?$")
_RUN = re.compile(r"\d+|\D+")
Run: TypeAlias = tuple[int, int, str]
"""A suffix run: ``(0, number, "")`` for digits, ``(1, 0, text)`` for anything else."""


def _runs(suffix: str) -> tuple[Run, ...]:
    return tuple(
        (0, int(run), "") if run.isdigit() else (1, 0, run) for run in _RUN.findall(suffix)
    )


def version_key(version: str) -> tuple[int, int, int, int, tuple[Run, ...]]:
    """A sort key for a package version (the pattern package.yaml allows)."""
    match = _VERSION.fullmatch(version)
    if match is None:
        raise UsageError(f"{version!r} is not a package version (MAJOR.MINOR.PATCH)")
    major, minor, patch, sep, suffix = match.groups()
    rank = {None: 0, "-": -1, ".": 1}[sep]
    return int(major), int(minor), int(patch), rank, _runs(suffix or "")


@dataclass(frozen=True)
class Expectation:
    """A package id and either an exact version or a lowest acceptable one."""

    package_id: str
    version: str
    at_least: bool

    @classmethod
    def parse(cls, text: str) -> Expectation:
        match = _EXPECT.fullmatch(text)  # `$` alone would let a trailing newline through
        if match is None:
            raise UsageError(
                f"--expect {text!r} is not ID@VERSION or ID@>=VERSION",
                hint="for example --expect kimi-k3-8xb300@1.2.0 or --expect kimi-k3-8xb300@>=1.2.0",
            )
        return cls(match["id"], match["version"], match["op"] == ">=")

    def describe(self) -> str:
        return f"{self.package_id}@{'>=' if self.at_least else ''}{self.version}"

    def check(self, package_id: str, version: str) -> None:
        """Refuse a kit that is not what was asked for."""
        if package_id == self.package_id and (
            version_key(version) >= version_key(self.version)
            if self.at_least
            else version == self.version
        ):
            return
        raise UnexpectedKitError(
            "the kit is not the package you asked for",
            file=PACKAGE_FILE,
            expected=self.describe(),
            actual=f"{package_id}@{version}",
            hint="a mirror may serve another signed kit; obtain the one you asked for",
        )
