"""Verify a signed revocation feed, then hold a kit or a model against it.

Steps of :func:`verify_feed` (each failure raises its own error class):
  1. read the envelope, at most :data:`MAX_FEED_BYTES` of it, never more
     (:class:`~servekit.errors.FeedMalformedError`);
  2. its signature by a trusted key (:class:`~servekit.errors.FeedSignatureError`);
  3. the statement: in-toto v1, the feed predicate, signed by the key it names, and a
     subject digest that is the digest of its retractions (malformed otherwise);
  4. the feed is the named publisher's (the kit's own), and the key that signed it is
     granted for that publisher in the trust store (and for the package checked, when
     there is one); a bare key is scoped to that publisher first
     (:class:`~servekit.errors.FeedSignatureError`);
  5. not past ``expires`` (:class:`~servekit.errors.FeedExpiredError`, freeze);
  6. a serial no lower than the last one seen for this publisher, and the same content
     when the serial is the same (:class:`~servekit.errors.FeedRollbackError`);
  7. record the serial in the state file: only a feed that passed 1-6 moves it.

:func:`check_package` then refuses a revoked package version, model commit or engine
build (:class:`~servekit.errors.RevokedError`) and returns the retracted figures, which
are warnings: the rest of the package still stands.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from servekit.errors import (
    FeedExpiredError,
    FeedMalformedError,
    FeedRollbackError,
    FeedSignatureError,
    RevokedError,
    SignatureError,
    UsageError,
)
from servekit.feed.models import (
    FEED_PREDICATE_TYPE,
    FEED_SUBJECT_PREFIX,
    BadEngine,
    BadModel,
    Feed,
    FeedStatement,
    RetractedFigure,
    RevokedPackage,
)
from servekit.feed.state import Mark, read_state, write_state
from servekit.package.load import load_package
from servekit.package.models import EnginePin, Package
from servekit.receipts.canonical import canonical_json, sha256_hex
from servekit.receipts.dsse import MAX_RECEIPT_BYTES, decode_envelope
from servekit.receipts.formats import DIGEST_ALGORITHM, STATEMENT_TYPE
from servekit.receipts.keys import TrustStore
from servekit.receipts.signing import verify_envelope
from servekit.seams import ReadFailure, parsing, problem_text, reading

MAX_FEED_BYTES = MAX_RECEIPT_BYTES
"""A feed is read like a receipt: at most a megabyte, and never more than one byte past it."""


@dataclass(frozen=True)
class FeedCheck:
    """A verified feed and what it says about one package: the figures it retracts."""

    feed: Feed
    retracted: tuple[RetractedFigure, ...]


def _malformed(file: str, actual: str) -> FeedMalformedError:
    return FeedMalformedError(
        "the feed is not a signed servekit feed",
        file=file,
        expected=f"a DSSE envelope over an in-toto statement with predicate {FEED_PREDICATE_TYPE}",
        actual=actual,
        hint="obtain the feed again from the publisher; docs/feed.md describes the format",
    )


def _read(path: Path) -> bytes:
    """The feed's bytes, reading at most one byte past the limit (a huge file is refused)."""

    def unreadable(failure: ReadFailure) -> FeedMalformedError:
        return FeedMalformedError(
            "the feed cannot be read", file=str(path), actual=str(failure.exc)
        )

    with reading(path, unreadable), path.open("rb") as fh:
        data = fh.read(MAX_FEED_BYTES + 1)
    if len(data) > MAX_FEED_BYTES:
        raise FeedMalformedError(
            "the feed is larger than a feed may be",
            file=str(path),
            expected=f"at most {MAX_FEED_BYTES} bytes",
            actual=f"more than {MAX_FEED_BYTES} bytes",
            hint="a feed is a few kilobytes; this is not one (obtain it again from the publisher)",
        )
    return data


def _check_publisher(feed: Feed, publisher: str, trust: TrustStore, package_id: str | None) -> None:
    """Step 4: the named publisher's feed, signed by a key granted for that publisher (and
    for ``package_id``, the package checked against it, when there is one)."""
    named = feed.predicate.publisher
    if named != publisher:
        raise FeedSignatureError(
            "the feed is another publisher's: it cannot say whether this one revoked anything",
            file=feed.source,
            expected=f"a feed of {publisher!r} (the publisher of what is checked)",
            actual=f"a feed of {named!r}, serial {feed.predicate.serial}",
            hint=f"fetch {publisher}'s own feed; another publisher's feed proves nothing here",
        )
    grant = trust.grants.get(feed.key_id)
    if grant is None or not grant.speaks_for(publisher):
        raise FeedSignatureError(
            "the key that signed the feed may not speak for its publisher",
            file=feed.source,
            expected=f"a key granted for {publisher!r}: "
            + (", ".join(trust.speakers_for(publisher)) or "the trust store grants none"),
            actual=f"key {feed.key_id} ({grant.describe() if grant else 'no grant'})",
            hint=f"the trust store {trust.source} does not grant this key that publisher; "
            "one publisher's key cannot sign another's feed",
        )
    if package_id is not None and not grant.allows(publisher, package_id):
        raise FeedSignatureError(
            "the key that signed the feed may not speak for the package checked",
            file=feed.source,
            expected=f"a feed signed by a key granted {package_id} of {publisher!r}",
            actual=f"key {feed.key_id} ({grant.describe()})",
            hint="a key granted some of a publisher's packages cannot vouch that another of "
            "them is not revoked; fetch the feed signed by that package's key",
        )


def _verified_payload(data: bytes, trust: TrustStore, file: str) -> tuple[bytes, str]:
    try:
        decode_envelope(data, file=file)
    except SignatureError as exc:  # 1: not an envelope at all
        raise _malformed(file, exc.actual or "not a DSSE envelope") from exc
    try:  # 2
        verified = verify_envelope(data, trust, file=file)
    except SignatureError as exc:
        raise FeedSignatureError(
            "the feed's signature does not verify against the trust store",
            file=file,
            expected=exc.expected,
            actual=exc.actual,
            hint="a feed must be signed by the publisher's key; do not trust this one",
        ) from exc
    return verified.payload, verified.key_id


def _statement(payload: bytes, key_id: str, file: str) -> FeedStatement:
    with parsing(lambda exc: _malformed(file, problem_text(exc)), ValueError, KeyError, TypeError):
        obj: Any = json.loads(payload)
        raw_retractions = obj["predicate"]["retractions"]
        statement = FeedStatement.model_validate(obj)
    if (statement.type, statement.predicate_type) != (STATEMENT_TYPE, FEED_PREDICATE_TYPE):
        raise _malformed(file, f"{statement.type} / {statement.predicate_type}")
    subject = statement.subject[0]
    want = f"{FEED_SUBJECT_PREFIX}{statement.predicate.publisher}"
    digest = sha256_hex(canonical_json(raw_retractions))
    if (subject.name, subject.digest.get(DIGEST_ALGORITHM)) != (want, digest):
        raise _malformed(file, f"subject {subject.name} does not name its retractions' digest")
    if statement.predicate.publisher_key_id != key_id:
        raise FeedSignatureError(
            "the feed names another publisher key than the one that signed it",
            file=file,
            expected=key_id,
            actual=statement.predicate.publisher_key_id,
        )
    return statement


def _check_fresh(feed: Feed, now: dt.datetime) -> None:
    expires = feed.predicate.expires
    if now >= expires:
        raise FeedExpiredError(
            "the feed has expired: an attacker may be replaying an old feed to hide a revocation",
            file=feed.source,
            expected=f"a feed that expires after {now.isoformat()}",
            actual=f"serial {feed.predicate.serial}, expired {expires.isoformat()}",
            hint="fetch the publisher's current feed; a publisher re-signs before expiry",
        )


def _check_serial(feed: Feed, last: Mark | None, state_path: Path) -> None:
    serial = feed.predicate.serial
    if last is None or serial > last.serial:
        return
    if serial < last.serial or feed.sha256 != last.sha256:
        what = "an older serial" if serial < last.serial else "the same serial with other content"
        raise FeedRollbackError(
            f"the feed is rolled back: {what} than the last one seen on this machine",
            file=feed.source,
            expected=f"serial {last.serial} or higher (last seen, recorded in {state_path})",
            actual=f"serial {serial}",
            hint="fetch the publisher's current feed; an older one may hide a revocation",
        )


def verify_feed(
    path: Path,
    trust: TrustStore,
    *,
    publisher: str,
    state_path: Path,
    now: dt.datetime | None = None,
    package_id: str | None = None,
) -> Feed:
    """Verify ``publisher``'s feed at ``path`` and record its serial (see the module doc).

    With ``package_id`` (the package held against it), the signing key must be granted
    that package too, before any serial is recorded.
    """
    file = str(path)
    data = _read(path)  # 1
    payload, key_id = _verified_payload(data, trust, file)  # 2
    statement = _statement(payload, key_id, file)  # 3
    feed = Feed(
        source=file, key_id=key_id, sha256=sha256_hex(payload), predicate=statement.predicate
    )
    _check_publisher(feed, publisher, trust.scoped(publisher), package_id)  # 4
    _check_fresh(feed, now or dt.datetime.now(dt.UTC))  # 5
    state = read_state(state_path)
    _check_serial(feed, state.last("seen", publisher), state_path)  # 6
    mark = Mark(serial=feed.predicate.serial, sha256=feed.sha256)
    write_state(state_path, state.with_mark("seen", publisher, mark))  # 7
    return feed


# --- holding a package or a model against the feed -------------------------------------


def _revoked(feed: Feed, what: str, entry: RevokedPackage | BadEngine | BadModel) -> RevokedError:
    link = f" ({entry.link})" if entry.link else ""
    return RevokedError(
        f"the publisher's feed (serial {feed.predicate.serial}) revokes {what}: {entry.reason}",
        file=feed.source,
        expected=f"{what} not revoked",
        actual=f"revoked on {entry.date.isoformat()}{link}",
        hint="do not deploy it; the link explains what to use instead",
    )


def _commit_matches(a: str, b: str) -> bool:
    short = min(len(a), len(b))
    return short >= 7 and a[:short] == b[:short]


def _engine_matches(entry: BadEngine, engine: EnginePin) -> bool:
    if entry.name != engine.name:
        return False
    by_version = entry.version is not None and entry.version == engine.version
    by_commit = bool(
        entry.commit
        and engine.source_commit
        and _commit_matches(entry.commit, engine.source_commit)
    )
    return by_version or by_commit


def check_model(feed: Feed, repo: str, commit: str) -> None:
    """Raise :class:`RevokedError` when the feed names this model commit as bad."""
    for entry in feed.predicate.retractions:
        if isinstance(entry, BadModel) and (entry.repo, entry.commit) == (repo, commit):
            raise _revoked(feed, f"model {repo}@{commit}", entry)


def check_package(feed: Feed, package: Package) -> tuple[RetractedFigure, ...]:
    """Refuse a revoked version, model commit or engine build; return retracted figures."""
    for entry in feed.predicate.retractions:
        if isinstance(entry, RevokedPackage) and (entry.package, entry.version) == (
            package.id,
            package.version,
        ):
            raise _revoked(feed, f"package {package.id} {package.version}", entry)
        if isinstance(entry, BadEngine) and _engine_matches(entry, package.engine):
            raise _revoked(feed, f"engine build {package.engine.version}", entry)
    check_model(feed, package.model.repo, package.model.commit)
    figures = {f.id for f in package.measurements.figures}
    return tuple(
        e
        for e in feed.predicate.retractions
        if isinstance(e, RetractedFigure)
        and (e.package, e.version) == (package.id, package.version)
        and e.figure in figures
    )


def check_kit_feed(
    package: Package,
    feed: Path,
    trust: TrustStore,
    *,
    state_path: Path,
    now: dt.datetime | None = None,
) -> FeedCheck:
    """Verify the kit publisher's ``feed`` and hold the kit's package against it
    (``verify kit --feed``): a feed of another publisher is refused, not read as "nothing
    revoked". ``package`` is the one ``verify_kit`` parsed from the verified bytes
    (:attr:`~servekit.verify.kit.KitVerification.package`), never the kit read again."""
    verified = verify_feed(
        feed,
        trust,
        publisher=package.publisher,
        state_path=state_path,
        now=now,
        package_id=package.id,
    )
    return FeedCheck(verified, check_package(verified, package))


def _weights_publisher(package: Package | None, publisher: str | None) -> str:
    if package is None:
        if publisher is None:
            raise UsageError(
                "a pin names no publisher, so no feed can be known to be its publisher's",
                hint="pass --kit or --package with the pin, or --publisher NAME (the publisher "
                "whose feed it is, as the trust file names it)",
            )
        return publisher
    if publisher is not None and publisher != package.publisher:
        raise UsageError(
            f"--publisher {publisher!r} is not the publisher of {package.id} "
            f"({package.publisher!r})",
            hint="leave --publisher out: the kit or package names its publisher",
        )
    return package.publisher


def check_weights_feed(
    feed: Path,
    trust: TrustStore,
    *,
    state_path: Path,
    model: tuple[str | None, str | None],
    kit: Package | None = None,
    package_dir: Path | None = None,
    publisher: str | None = None,
    now: dt.datetime | None = None,
) -> FeedCheck:
    """Verify ``feed`` and hold a model commit against it (``verify weights --feed``).

    The feed must be the publisher's of the kit or package the pin came from (their
    version and engine build are held against it too), or of ``publisher`` for a bare pin.
    ``kit`` is a verified kit's package (:attr:`~servekit.verify.kit.KitVerification.package`).
    """
    package = kit
    if package_dir is not None:
        package = load_package(package_dir).package
    repo, commit = model
    if package is None and (repo is None or commit is None):
        raise UsageError(
            "the pin names no repository and commit, so the feed has nothing to check",
            hint="pass --kit or --package, or a pin made by `servekit model pin`",
        )
    owner = _weights_publisher(package, publisher)
    package_id = package.id if package is not None else None
    verified = verify_feed(
        feed, trust, publisher=owner, state_path=state_path, now=now, package_id=package_id
    )
    if package is not None:
        return FeedCheck(verified, check_package(verified, package))
    assert repo is not None and commit is not None
    check_model(verified, repo, commit)
    return FeedCheck(verified, ())
