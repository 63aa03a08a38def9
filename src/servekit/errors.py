"""Every public servekit error, under one base class.

Each error carries a ``hint``: the next step a person should take. Front ends
render errors in one place (``servekit.cli.main``) and map each class to its
``exit_code``. Foreign exceptions are translated at the seam with
``raise ... from exc`` so callers only ever catch :class:`Error`.

Exit codes (documented in ``docs/cli.md``):

====  ==========================================================
0     success / verified
1     unexpected internal error (a bug: please report it)
2     usage error (bad option or argument)
3     the package definition or its files cannot be loaded
4     a claim rule refused a figure
5     signing or key problem
6     Hugging Face Hub problem (revision, token, network)
7     benchmark run problem
10    verification failed: a file differs from the manifest/pin
11    verification failed: a file is missing
12    verification failed: an unexpected extra file
13    verification failed: bad or untrusted signature
14    verification failed: receipt subjects do not match
15    verification failed: unsafe or malformed archive
16    verification failed: a file could not be read
30    store: the database cannot be opened or migrated
31    store: no such package, version, workspace or entitlement
32    store: conflicts with what is recorded (owned, republished, reused key)
33    store: a signed licence is required first
34    store: not signed in, or a bad token
35    store: signed in, but the role does not allow it
36    store: the payment provider refused, or a webhook is not genuine
37    store: the audit found a break in the chain or the ledger
38    store: the version is not for sale (retracted)
39    store: the download client could not fetch the kit
====  ==========================================================
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "AlreadyOwnedError",
    "AuditError",
    "AuthenticationError",
    "BenchError",
    "ClaimRuleError",
    "ClaimViolation",
    "DownloadError",
    "Error",
    "EvidenceError",
    "ExtraFileError",
    "FileChangedError",
    "HubError",
    "IdempotencyConflictError",
    "LicenceRequiredError",
    "MissingFileError",
    "NotForSaleError",
    "PackageError",
    "PackageFileError",
    "PackageSchemaError",
    "PaymentError",
    "PermissionDeniedError",
    "ReadError",
    "SignatureError",
    "SigningKeyError",
    "StoreConflictError",
    "StoreError",
    "StoreNotFoundError",
    "SubjectMismatchError",
    "UnsafeArchiveError",
    "UntrustedKeyError",
    "UsageError",
    "VerificationError",
    "WebhookSignatureError",
]


class Error(Exception):
    """Base class of every error servekit raises on purpose."""

    exit_code: int = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message}\nhint: {self.hint}"
        return self.message


class UsageError(Error):
    """An option or argument is wrong."""

    exit_code = 2


# --- package definition (loading) -------------------------------------------


class PackageError(Error):
    """The package definition or one of its files cannot be used."""

    exit_code = 3


class PackageFileError(PackageError):
    """A file of the package is missing, unreadable or not valid YAML/JSON."""

    def __init__(
        self,
        message: str,
        *,
        path: Path | str,
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}", hint=hint)
        self.path = str(path)
        self.line = line


@dataclass(frozen=True)
class SchemaProblem:
    """One problem found while validating ``package.yaml``."""

    field: str
    message: str
    line: int | None


class PackageSchemaError(PackageError):
    """``package.yaml`` does not match the package schema."""

    def __init__(self, *, path: Path | str, problems: Sequence[SchemaProblem]) -> None:
        lines = []
        for p in problems:
            where = f"{path}:{p.line}" if p.line is not None else str(path)
            lines.append(f"{where}: {p.field}: {p.message}")
        super().__init__(
            f"{path} does not match the package schema "
            f"({len(problems)} problem{'s' if len(problems) != 1 else ''}):\n  "
            + "\n  ".join(lines),
            hint="fix each field named above; `servekit package schema` prints every field "
            "with its type, and docs/package.md explains them",
        )
        self.path = str(path)
        self.problems = tuple(problems)


class EvidenceError(PackageError):
    """An evidence file is missing or its records are malformed."""

    def __init__(
        self,
        message: str,
        *,
        path: Path | str,
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}", hint=hint)
        self.path = str(path)
        self.line = line


# --- claim rules --------------------------------------------------------------


@dataclass(frozen=True)
class ClaimViolation:
    """A claim the evidence does not carry, with the rule it breaks."""

    rule: str
    field: str
    message: str
    fix: str


class ClaimRuleError(Error):
    """One or more claims in the package are not carried by its evidence."""

    exit_code = 4

    def __init__(self, violations: Sequence[ClaimViolation]) -> None:
        body = "\n".join(
            f"  [{v.rule}] {v.field}: {v.message}\n      fix: {v.fix}" for v in violations
        )
        super().__init__(
            f"{len(violations)} claim{'s' if len(violations) != 1 else ''} refused:\n{body}",
            hint="correct the figures or add the evidence; `servekit package check DIR` "
            "re-runs every rule",
        )
        self.violations = tuple(violations)


# --- keys and signing ---------------------------------------------------------


class SigningKeyError(Error):
    """A signing or verification key is missing, malformed or unsafe."""

    exit_code = 5


# --- Hugging Face Hub ---------------------------------------------------------


class HubError(Error):
    """The Hugging Face Hub could not answer what was asked."""

    exit_code = 6


# --- benchmark harness --------------------------------------------------------


class BenchError(Error):
    """A benchmark run could not be started or its files cannot be read."""

    exit_code = 7


# --- verification -------------------------------------------------------------


class VerificationError(Error):
    """Verification failed. Subclasses name the failure; never caught silently.

    ``file`` is the path that failed, ``expected`` and ``actual`` the values
    compared (``None`` where a side does not exist, e.g. a missing file).
    """

    exit_code = 10

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        expected: str | None = None,
        actual: str | None = None,
        hint: str | None = None,
    ) -> None:
        parts = [message]
        if file is not None:
            parts.append(f"  file:     {file}")
        if expected is not None:
            parts.append(f"  expected: {expected}")
        if actual is not None:
            parts.append(f"  actual:   {actual}")
        super().__init__("\n".join(parts), hint=hint)
        self.file = file
        self.expected = expected
        self.actual = actual


class FileChangedError(VerificationError):
    """A file's digest or size differs from the one recorded."""

    exit_code = 10


class MissingFileError(VerificationError):
    """A recorded file is absent."""

    exit_code = 11


class ExtraFileError(VerificationError):
    """A file is present that nothing recorded."""

    exit_code = 12


class SignatureError(VerificationError):
    """The signature is invalid, or made by a key that is not trusted."""

    exit_code = 13


class UntrustedKeyError(SignatureError):
    """The signature is valid for no trusted key: the signer is not in the trust store."""

    exit_code = 13


class SubjectMismatchError(VerificationError):
    """A receipt subject does not match the kit or the model pin."""

    exit_code = 14


class UnsafeArchiveError(VerificationError):
    """An archive member is unsafe (absolute path, ``..``, link, device) or malformed."""

    exit_code = 15


class ReadError(VerificationError):
    """A file could not be read while verifying (permissions, I/O error, loop)."""

    exit_code = 16


# --- store ---------------------------------------------------------------------


class StoreError(Error):
    """The store's database cannot be opened, migrated or written."""

    exit_code = 30


class StoreNotFoundError(StoreError):
    """No such package, version, workspace, quote or entitlement (or not visible to you)."""

    exit_code = 31


class StoreConflictError(StoreError):
    """The request conflicts with what the store has recorded."""

    exit_code = 32


class AlreadyOwnedError(StoreConflictError):
    """The workspace already holds this version (or an active subscription)."""

    exit_code = 32


class IdempotencyConflictError(StoreConflictError):
    """An idempotency key was reused for a different request."""

    exit_code = 32


class LicenceRequiredError(StoreError):
    """The version needs a signed enterprise licence before it can be bought."""

    exit_code = 33


class AuthenticationError(StoreError):
    """Not signed in, a wrong password, or an unknown or revoked token."""

    exit_code = 34


class PermissionDeniedError(StoreError):
    """Signed in, but the member's role does not allow this."""

    exit_code = 35


class PaymentError(StoreError):
    """The payment provider refused or failed."""

    exit_code = 36


class WebhookSignatureError(PaymentError):
    """A webhook's signature does not verify with the configured secret."""

    exit_code = 36


class AuditError(StoreError):
    """The audit found a break: a signature chain link or a ledger sum."""

    exit_code = 37


class NotForSaleError(StoreError):
    """The version was retracted (or its package is not published) and is not sold."""

    exit_code = 38


class DownloadError(StoreError):
    """The download client could not fetch or write the kit."""

    exit_code = 39
