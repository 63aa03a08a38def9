"""Sign a revocation feed: ``feed.yaml`` in, a DSSE-signed ``feed.json`` out.

Steps of :func:`sign_feed_file`:
  1. load ``feed.yaml`` (:class:`~servekit.feed.models.FeedSource`);
  2. the serial is one higher than the last this publisher signed: the higher of the
     state file's record and the serial of the feed already at ``out``;
  3. :func:`build_feed` canonicalizes the statement and signs it;
  4. write ``out``, then record the serial in the state file.

:func:`build_feed` takes a plain list of retractions so the store can serve its own
feed from its database without a ``feed.yaml``.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from servekit.errors import FeedMalformedError, UsageError
from servekit.feed.models import (
    FEED_PREDICATE_TYPE,
    FEED_SUBJECT_PREFIX,
    FeedPredicate,
    FeedSource,
    Retraction,
)
from servekit.feed.state import Mark, read_state, write_state
from servekit.receipts.canonical import canonical_json, sha256_hex
from servekit.receipts.dsse import b64decode
from servekit.receipts.formats import DIGEST_ALGORITHM, STATEMENT_TYPE
from servekit.receipts.keys import SigningKey, load_signing_key
from servekit.receipts.signing import sign_payload
from servekit.seams import (
    parse_yaml,
    parsing,
    read_optional,
    read_text,
    validating,
    validation_problems,
)

_DURATION = re.compile(r"^(\d+)([smhd])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_RETRACTIONS: TypeAdapter[tuple[Retraction, ...]] = TypeAdapter(tuple[Retraction, ...])


@dataclass(frozen=True)
class SignedFeed:
    path: Path
    publisher: str
    serial: int
    expires: dt.datetime
    entries: int
    key_id: str


def parse_duration(text: str) -> dt.timedelta:
    """``30s``, ``15m``, ``12h`` or ``7d`` as a positive duration."""
    match = _DURATION.match(text.strip())
    if match is None or int(match.group(1)) == 0:
        raise UsageError(f"'{text}' is not a duration", hint="e.g. 7d, 12h, 30m (more than zero)")
    return dt.timedelta(seconds=int(match.group(1)) * _UNIT_SECONDS[match.group(2)])


def retractions_digest(retractions: Sequence[Retraction]) -> str:
    """Hex sha256 of the retractions as canonical JSON: the feed statement's subject."""
    return sha256_hex(canonical_json(_RETRACTIONS.dump_python(tuple(retractions), mode="json")))


def feed_statement(predicate: FeedPredicate) -> dict[str, Any]:
    """The in-toto statement of a feed, as JSON data (not yet canonical bytes)."""
    name = f"{FEED_SUBJECT_PREFIX}{predicate.publisher}"
    return {
        "_type": STATEMENT_TYPE,
        "subject": [
            {"name": name, "digest": {DIGEST_ALGORITHM: retractions_digest(predicate.retractions)}}
        ],
        "predicateType": FEED_PREDICATE_TYPE,
        "predicate": predicate.model_dump(mode="json"),
    }


def build_feed(
    retractions: Sequence[Retraction],
    *,
    publisher: str,
    serial: int,
    issued: dt.datetime,
    expires: dt.datetime,
    key: SigningKey,
) -> bytes:
    """The signed feed (DSSE envelope bytes) of ``retractions``."""
    if expires <= issued:
        raise UsageError("a feed must expire after it is issued", hint="pass --expires-in 7d")
    predicate = FeedPredicate(
        publisher=publisher,
        publisher_key_id=key.public.key_id,
        serial=serial,
        issued=issued,
        expires=expires,
        retractions=tuple(retractions),
    )
    return sign_payload(canonical_json(feed_statement(predicate)), key)


def load_feed_source(path: Path) -> FeedSource:
    """Read and validate ``feed.yaml`` (file and YAML errors through :mod:`servekit.seams`)."""
    expected = "publisher, revoked_packages, retracted_figures, bad_engines, bad_models"

    def malformed(message: str, line: int | None = None, hint: str = "") -> FeedMalformedError:
        where = f"line {line}: " if line is not None else ""
        return FeedMalformedError(
            "the feed source is not a servekit feed.yaml",
            file=str(path),
            expected=expected,
            actual=where + message,
            hint=hint or "docs/feed.md lists every field",
        )

    text = read_text(path, lambda message: malformed(message, None, "check the path"))
    data, _ = parse_yaml(text, malformed)
    with validating(lambda exc: malformed(validation_problems(exc))):
        return FeedSource.model_validate(data)


def _serial_in(path: Path) -> int:
    """The serial of a feed already written at ``path`` (0 when there is none)."""

    def unknown(exc: object) -> UsageError:
        return UsageError(
            f"{path} exists and is not a signed feed, so its serial is unknown",
            hint="choose another -o, or move the file aside",
        )

    data = read_optional(path, unknown)
    if data is None:
        return 0
    with parsing(unknown, ValueError, KeyError, TypeError):
        envelope = json.loads(data)
        statement = json.loads(b64decode(envelope["payload"]))
        return int(statement["predicate"]["serial"])


def sign_feed_file(
    source: Path,
    key_path: Path,
    out: Path,
    *,
    expires_in: dt.timedelta,
    state_path: Path,
    now: dt.datetime | None = None,
) -> SignedFeed:
    """Sign ``source`` into ``out`` with the next serial (see the module docstring)."""
    feed = load_feed_source(source)  # 1
    key = load_signing_key(key_path)
    state = read_state(state_path)  # 2
    last = state.last("signed", feed.publisher)
    serial = max(last.serial if last else 0, _serial_in(out)) + 1
    issued = (now or dt.datetime.now(dt.UTC)).replace(microsecond=0)
    data = build_feed(  # 3
        feed.retractions,
        publisher=feed.publisher,
        serial=serial,
        issued=issued,
        expires=issued + expires_in,
        key=key,
    )
    out.write_bytes(data)  # 4
    write_state(
        state_path,
        state.with_mark("signed", feed.publisher, Mark(serial=serial, sha256=sha256_hex(data))),
    )
    return SignedFeed(
        out, feed.publisher, serial, issued + expires_in, len(feed.retractions), key.public.key_id
    )
