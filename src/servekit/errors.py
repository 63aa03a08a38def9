"""Every public servekit error, under one base class.

Each error carries a ``hint``: the next step a person should take. Front ends
render errors in one place (``servekit.cli.main``) and map each class to its
``exit_code``. Foreign exceptions are translated at the seam with
``raise ... from exc`` so callers only ever catch :class:`Error`.

Exit codes (documented in ``docs/errors.md``):

====  ==========================================================
0     success / verified
1     unexpected internal error (a bug: please report it)
2     usage error (bad option or argument)
3     the package definition or its files cannot be loaded
4     a claim rule refused a figure
5     signing or key problem
6     Hugging Face Hub problem (revision, token, network)
7     benchmark run problem
8     the command needs an optional part of servekit that is not installed (an extra)
10    verification failed: a file differs from the manifest/pin
11    verification failed: a file is missing
12    verification failed: an unexpected extra file
13    verification failed: bad or untrusted signature
14    verification failed: receipt subjects do not match
15    verification failed: unsafe or malformed archive
16    verification failed: a file could not be read
17-28 verification failed: a specific kit refusal (docs/errors.md lists each)
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
40    web: no such page, package or file
41    web: the server cannot start (port, state directory, packages)
42    web: too many failed sign-ins; wait and try again
45    fit: the model, its weights' headers or the layout cannot be sized
46    fit: config.json names no known architecture or lacks a field
47    fit: unknown GPU name
48    fit: the parallel layout does not suit the model
49    fit: a safetensors header is malformed
50    revocation feed: malformed
51    revocation feed: bad or untrusted signature
52    revocation feed: expired (freeze)
53    revocation feed: older than the last one seen (rollback)
54    revoked by the feed: package version, model commit or engine build
55    replay comparison: a figure is worse than the package's tolerance
56    replay: the replay directory or its kit cannot be used
57    reproduction: the signed reproduction does not match
60    benchmark: more requests failed than --max-error-rate allows
61    benchmark: interrupted (Ctrl-C, SIGTERM); what completed is kept
====  ==========================================================
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "AlreadyOwnedError",
    "ArchitectureError",
    "AuditError",
    "AuthenticationError",
    "BenchError",
    "ClaimRuleError",
    "ClaimViolation",
    "DownloadError",
    "Error",
    "ErrorRateError",
    "EvidenceError",
    "ExtraFileError",
    "FeedExpiredError",
    "FeedMalformedError",
    "FeedRollbackError",
    "FeedSignatureError",
    "FileChangedError",
    "FitError",
    "GpuNameError",
    "HeaderError",
    "HubError",
    "IdempotencyConflictError",
    "LicenceRequiredError",
    "MissingExtraError",
    "MissingFileError",
    "NotForSaleError",
    "NotFoundError",
    "PackageError",
    "PackageFileError",
    "PackageSchemaError",
    "ParallelLayoutError",
    "PaymentError",
    "PermissionDeniedError",
    "ReadError",
    "RegressionError",
    "ReplayError",
    "ReproductionError",
    "RevokedError",
    "RunInterruptedError",
    "ServeError",
    "SignatureError",
    "SigningKeyError",
    "StoreConflictError",
    "StoreError",
    "StoreNotFoundError",
    "SubjectMismatchError",
    "TooManySignInsError",
    "TuneError",
    "UnsafeArchiveError",
    "UntrustedKeyError",
    "UsageError",
    "VerificationError",
    "WebhookSignatureError",
]


def printable(text: str) -> str:
    """``text`` with every non-printable character (ESC, CR, newline...) escaped, so a
    name taken from a kit cannot move the cursor, recolour or fake a line of output."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


class Layout(str):
    """A message laid out over several lines by servekit itself.

    Built only by :func:`layout`, which escapes each line as it joins them: the
    newlines and indentation are servekit's, and a newline, ESC or bidi override inside
    a name taken from outside (a package field, a file or member name, a server's
    answer) is already shown escaped. The CLI prints a ``Layout`` as it is and escapes
    any other message whole (``servekit.cli.main``).
    """

    __slots__ = ()


def layout(*lines: str) -> Layout:
    """``lines`` joined by newlines, each escaped with :func:`printable`.

    A line that is itself a :class:`Layout` keeps its own lines (they were escaped when
    it was built), so a layout can nest another one.
    """
    flat: list[str] = []
    for line in lines:
        flat += line.split("\n") if isinstance(line, Layout) else [printable(line)]
    return Layout("\n".join(flat))


def shown(text: str) -> str:
    """``text`` as the terminal should get it: a :class:`Layout` as built, anything else
    on one line with every non-printable character escaped."""
    return text if isinstance(text, Layout) else printable(text)


class Error(Exception):
    """Base class of every error servekit raises on purpose."""

    exit_code: int = 1
    status: int = 500
    """The HTTP status both web front ends answer with (the HTML pages and the API's
    problem+json read it): 500 unless a class says otherwise."""

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
    status = 422


# --- package definition (loading) -------------------------------------------


class PackageError(Error):
    """The package definition or one of its files cannot be used."""

    exit_code = 3
    status = 422


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
            lines.append(f"  {where}: {p.field}: {p.message}")
        count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
        super().__init__(
            layout(f"{path} does not match the package schema ({count}):", *lines),
            hint="fix each field named above; `servekit package schema` prints every field "
            "with its type, and docs/package.md explains them",
        )
        self.path = str(path)
        self.problems = tuple(problems)


class EvidenceError(PackageFileError):
    """An evidence file is missing or its records are malformed (a :class:`PackageFileError`:
    evidence is a file the package names, and ``except PackageFileError`` catches both)."""


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
    status = 422

    def __init__(self, violations: Sequence[ClaimViolation]) -> None:
        body = [
            line
            for v in violations
            for line in (f"  [{v.rule}] {v.field}: {v.message}", f"      fix: {v.fix}")
        ]
        count = f"{len(violations)} claim{'s' if len(violations) != 1 else ''}"
        super().__init__(
            layout(f"{count} refused:", *body),
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


class MissingExtraError(Error):
    """The command needs a library of an extra that is not installed (``servekit.extras``)."""

    exit_code = 8


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
        super().__init__(layout(*parts) if len(parts) > 1 else message, hint=hint)
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


# --- hardware fit ---------------------------------------------------------------


class FitError(Error):
    """A fit prediction cannot be made: the model, its headers or the layout cannot be sized."""

    exit_code = 45


class ArchitectureError(FitError):
    """``config.json`` is missing, names no known architecture, or lacks a field a fit needs."""

    exit_code = 46


class GpuNameError(FitError):
    """The GPU name is not in servekit's GPU table."""

    exit_code = 47


class ParallelLayoutError(FitError):
    """The parallel layout does not suit the model (TP vs heads, EP without MoE)."""

    exit_code = 48


class HeaderError(FitError):
    """A safetensors file's header is truncated or is not the JSON the format requires."""

    exit_code = 49


# --- replay, reproduction and the revocation feed ----------------------------------


class FeedMalformedError(VerificationError):
    """A revocation feed (``feed.yaml`` or a signed ``feed.json``) is not in the feed format."""

    exit_code = 50


class FeedSignatureError(SignatureError):
    """A feed's signature is invalid or untrusted, its key is not granted its publisher, or
    it is another publisher's feed than the one checked."""

    exit_code = 51


class FeedExpiredError(VerificationError):
    """A signed feed is past its ``expires`` time: someone may be freezing old news."""

    exit_code = 52


class FeedRollbackError(VerificationError):
    """A signed feed's serial is lower than the last one seen on this machine."""

    exit_code = 53


class RevokedError(VerificationError):
    """The feed revokes this package version, model commit or engine build."""

    exit_code = 54


class RegressionError(Error):
    """A replayed figure is worse than the published one beyond the package's tolerance."""

    exit_code = 55


class ReplayError(Error):
    """A replay cannot run, or its directory does not belong to the kit being compared."""

    exit_code = 56


class TuneError(Error):
    """``servekit tune`` cannot start: its workload or space file, or its output directory."""

    exit_code = 70


class ReproductionError(VerificationError):
    """A signed reproduction is not a servekit reproduction, or does not match its subjects."""

    exit_code = 57


# --- kits a hostile mirror cannot bend (docs/kit.md, threat model) -------------

__all__ += [
    "ArchiveLimitError",
    "ClaimRecheckError",
    "ExtendedHeaderError",
    "GzipStreamError",
    "KeyGrantError",
    "MemberMetadataError",
    "MemberOrderError",
    "NonCanonicalArchiveError",
    "NonCanonicalReceiptError",
    "ReceiptLimitError",
    "TarHeaderError",
    "UnexpectedKitError",
]


class GzipStreamError(UnsafeArchiveError):
    """The kit is not exactly one gzip member in servekit's header, ending the file."""

    exit_code = 17


class TarHeaderError(UnsafeArchiveError):
    """A raw tar header is malformed, or of a kind servekit never writes."""

    exit_code = 18


class ExtendedHeaderError(UnsafeArchiveError):
    """An extended tar header (pax ``x``/``g``, GNU ``L``/``K``) would rename or resize a member."""

    exit_code = 19


class MemberMetadataError(UnsafeArchiveError):
    """A member's mode, owner, names or mtime are not the canonical ones."""

    exit_code = 20


class NonCanonicalArchiveError(UnsafeArchiveError):
    """The archive's bytes differ from the canonical rendering of the members read."""

    exit_code = 21


class MemberOrderError(UnsafeArchiveError):
    """The first member is not ``MANIFEST``, or the members are not sorted by path."""

    exit_code = 22


class ArchiveLimitError(UnsafeArchiveError):
    """The kit exceeds a size or count limit (members, bytes, manifest)."""

    exit_code = 23


class NonCanonicalReceiptError(SignatureError):
    """The receipt's bytes are not the ones ``kit build`` writes for its content."""

    exit_code = 24


class ReceiptLimitError(SignatureError):
    """The receipt is too large or too deeply nested to parse safely."""

    exit_code = 25


class KeyGrantError(SignatureError):
    """A trusted key signed a package outside its grant in the trust store."""

    exit_code = 26


class UnexpectedKitError(VerificationError):
    """The kit verifies but is not the package or version the buyer asked for."""

    exit_code = 27


class ClaimRecheckError(VerificationError):
    """The receipt's figures or rule record disagree with the claim rules run on the kit."""

    exit_code = 28


# --- the web app ---------------------------------------------------------------


class NotFoundError(Error):
    """A page, package version or file the web app was asked for does not exist."""

    exit_code = 40
    status = 404


class ServeError(Error):
    """`servekit serve` cannot start: the state directory or the address is unusable."""

    exit_code = 41


class TooManySignInsError(Error):
    """Too many failed sign-ins for this account, or for many accounts from this address."""

    exit_code = 42
    status = 429

    def __init__(self, message: str, *, retry_after: int, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.retry_after = retry_after
        """Seconds until a sign-in is tried again (the ``Retry-After`` header)."""


# --- store ---------------------------------------------------------------------


class StoreError(Error):
    """The store's database cannot be opened, migrated or written."""

    exit_code = 30


class StoreNotFoundError(StoreError):
    """No such package, version, workspace, quote or entitlement (or not visible to you)."""

    exit_code = 31
    status = 404


class StoreConflictError(StoreError):
    """The request conflicts with what the store has recorded."""

    exit_code = 32
    status = 409


class AlreadyOwnedError(StoreConflictError):
    """The workspace already holds this version (or an active subscription)."""

    exit_code = 32


class IdempotencyConflictError(StoreConflictError):
    """An idempotency key was reused for a different request."""

    exit_code = 32
    status = 422


class LicenceRequiredError(StoreError):
    """The version needs a signed enterprise licence before it can be bought."""

    exit_code = 33
    status = 403


class AuthenticationError(StoreError):
    """Not signed in, a wrong password, or an unknown or revoked token."""

    exit_code = 34
    status = 401


class PermissionDeniedError(StoreError):
    """Signed in, but the member's role does not allow this."""

    exit_code = 35
    status = 403


class PaymentError(StoreError):
    """The payment provider refused or failed."""

    exit_code = 36
    status = 402


class WebhookSignatureError(PaymentError):
    """A webhook's signature does not verify with the configured secret."""

    exit_code = 36
    status = 400


class AuditError(StoreError):
    """The audit found a break: a signature chain link or a ledger sum."""

    exit_code = 37


class NotForSaleError(StoreError):
    """The version was retracted (or its package is not published) and is not sold; or
    ``store publish`` was given a draft, which is never sold."""

    exit_code = 38
    status = 410


class DownloadError(StoreError):
    """The download client could not fetch or write the kit."""

    exit_code = 39


# --- the user-facing surface (60-69) -------------------------------------------------


class ErrorRateError(BenchError):
    """A benchmark finished, but more of its requests failed than ``--max-error-rate``
    allows; the evidence is written, and the figures it would give are not trustworthy."""

    exit_code = 60


class RunInterruptedError(BenchError):
    """A benchmark was interrupted (Ctrl-C or SIGTERM); the requests that completed are
    kept in an evidence file whose header notes it as PARTIAL."""

    exit_code = 61
