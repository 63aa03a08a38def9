"""The revocation feed: signing with a growing serial, and every way a feed is refused."""

from __future__ import annotations

import datetime as dt
import functools
import json
import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from servekit.errors import (
    FeedExpiredError,
    FeedMalformedError,
    FeedRollbackError,
    FeedSignatureError,
    RevokedError,
    UsageError,
)
from servekit.feed import (
    build_feed,
    check_kit_feed,
    check_weights_feed,
    sign_feed_file,
    verify_feed,
)
from servekit.feed.models import BadEngine, BadModel, RetractedFigure, Retraction, RevokedPackage
from servekit.feed.sign import load_feed_source, parse_duration
from servekit.feed.state import read_state
from servekit.package.models import Package
from servekit.receipts.canonical import canonical_json
from servekit.receipts.dsse import b64decode, b64encode
from servekit.receipts.keys import load_public_key, load_signing_key, load_trust_store
from servekit.receipts.signing import sign_payload
from servekit.receipts.trust import Scope, render_trust_file
from servekit.verify.kit import verify_kit
from tests.assets.make_kit_fixtures import private_key
from tests.functional.helpers import ROOT

KIT = ROOT / "tests" / "assets" / "kit_valid.tar.gz"  # kit-fixture 1.0.0, vllm 0.11.0
PUB = ROOT / "tests" / "assets" / "keys" / "publisher.pub"
MODEL = ("servekit-test/tiny-model", "3b1f6c0e2d9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c")
DAY = dt.date(2026, 11, 30)
PUBLISHER = "servekit tests"  # kit_valid's publisher
NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)
TRUST = load_trust_store(PUB, bare_key=True)
# publisher.pub speaks for "servekit tests" (kit-fixture), untrusted.pub for "Someone Else"
GRANTS = load_trust_store(ROOT / "tests" / "assets" / "keys" / "trust.toml")


@functools.cache
def kit_pkg() -> Package:
    """KIT's package as ``verify kit`` hands it to the feed check: parsed once, verified."""
    return verify_kit(KIT, TRUST).package


def revoked(version: str = "1.0.0") -> RevokedPackage:
    return RevokedPackage(
        package="kit-fixture", version=version, reason="wrong flags", date=DAY, link="https://x/1"
    )


@pytest.fixture
def key(tmp_path: Path) -> Path:
    return private_key("publisher", tmp_path)


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state" / "feed-state.json"


def write_feed(
    path: Path,
    key: Path,
    retractions: Sequence[Retraction] = (),
    *,
    serial: int = 1,
    issued: dt.datetime = NOW,
    days: int = 7,
    publisher: str = PUBLISHER,
) -> Path:
    data = build_feed(
        retractions,
        publisher=publisher,
        serial=serial,
        issued=issued,
        expires=issued + dt.timedelta(days=days),
        key=load_signing_key(key),
    )
    path.write_bytes(data)
    return path


def test_sign_numbers_each_feed_one_higher(tmp_path: Path, key: Path, state: Path) -> None:
    source = tmp_path / "feed.yaml"
    source.write_text(
        yaml.safe_dump(
            {
                "publisher": "servekit tests",
                "revoked_packages": [revoked().model_dump(mode="json", exclude={"kind"})],
                "bad_models": [
                    {
                        "repo": MODEL[0],
                        "commit": MODEL[1],
                        "reason": "replaced",
                        "date": "2026-11-29",
                    }
                ],
            }
        )
    )
    out = tmp_path / "feed.json"
    first = sign_feed_file(
        source, key, out, expires_in=dt.timedelta(days=7), state_path=state, now=NOW
    )
    second = sign_feed_file(
        source, key, out, expires_in=dt.timedelta(days=7), state_path=state, now=NOW
    )
    assert (first.serial, second.serial, second.entries) == (1, 2, 2)
    assert second.expires == NOW + dt.timedelta(days=7)
    feed = verify_feed(out, TRUST, publisher=PUBLISHER, state_path=tmp_path / "buyer.json", now=NOW)
    assert feed.predicate.serial == 2
    assert [r.kind for r in feed.predicate.retractions] == ["package_version", "model_commit"]
    signed = read_state(state).last("signed", "servekit tests")
    assert signed is not None and signed.serial == 2
    # a fresh state file still continues after the feed already at -o
    third = sign_feed_file(source, key, out, expires_in=dt.timedelta(hours=1),
                           state_path=tmp_path / "new.json", now=NOW)  # fmt: skip
    assert third.serial == 3


def test_a_malformed_feed_source_is_refused(tmp_path: Path, key: Path, state: Path) -> None:
    source = tmp_path / "feed.yaml"
    source.write_text("publisher: x\nrevoked_packages: [{package: x}]\n")
    with pytest.raises(FeedMalformedError, match=r"not a servekit feed\.yaml"):
        sign_feed_file(
            source, key, tmp_path / "f.json", expires_in=dt.timedelta(days=1), state_path=state
        )


def test_a_revoked_version_is_refused_with_its_reason(
    tmp_path: Path, key: Path, state: Path
) -> None:
    feed = write_feed(tmp_path / "feed.json", key, [revoked("0.9.0"), revoked()])
    with pytest.raises(
        RevokedError, match=r"revokes package kit-fixture 1\.0\.0: wrong flags"
    ) as info:
        check_kit_feed(kit_pkg(), feed, TRUST, state_path=state, now=NOW)
    assert info.value.exit_code == 54 and "https://x/1" in str(info.value.actual)


def test_another_version_passes(tmp_path: Path, key: Path, state: Path) -> None:
    feed = write_feed(tmp_path / "feed.json", key, [revoked("0.9.0")])
    assert check_kit_feed(kit_pkg(), feed, TRUST, state_path=state, now=NOW).retracted == ()


@pytest.mark.parametrize(
    "entry",
    [
        BadEngine(name="vllm", version="0.11.0", reason="wrong outputs", date=DAY),
        BadModel(repo=MODEL[0], commit=MODEL[1], reason="weights replaced upstream", date=DAY),
    ],
    ids=["engine", "model"],
)
def test_a_bad_engine_or_model_commit_is_refused(
    tmp_path: Path, key: Path, state: Path, entry: Retraction
) -> None:
    feed = write_feed(tmp_path / "feed.json", key, [entry])
    with pytest.raises(RevokedError, match=entry.reason):
        check_kit_feed(kit_pkg(), feed, TRUST, state_path=state, now=NOW)


def test_an_engine_of_another_name_or_version_passes(
    tmp_path: Path, key: Path, state: Path
) -> None:
    entries = [
        BadEngine(name="sglang", version="0.11.0", reason="r", date=DAY),
        BadEngine(name="vllm", version="0.11.1", reason="r", date=DAY),
    ]
    feed = write_feed(tmp_path / "feed.json", key, entries)
    check_kit_feed(kit_pkg(), feed, TRUST, state_path=state, now=NOW)


def test_a_retracted_figure_is_returned_not_refused(tmp_path: Path, key: Path, state: Path) -> None:
    entry = RetractedFigure(
        package="kit-fixture", version="1.0.0", figure="ttft-p50-c1", reason="re-run", date=DAY
    )
    other = entry.model_copy(update={"version": "2.0.0"})
    feed = write_feed(tmp_path / "feed.json", key, [entry, other])
    assert check_kit_feed(kit_pkg(), feed, TRUST, state_path=state, now=NOW).retracted == (entry,)


def test_an_expired_feed_is_refused(tmp_path: Path, key: Path, state: Path) -> None:
    feed = write_feed(tmp_path / "feed.json", key, issued=NOW - dt.timedelta(days=8))
    with pytest.raises(FeedExpiredError, match="expired") as info:
        verify_feed(feed, TRUST, publisher=PUBLISHER, state_path=state, now=NOW)
    assert info.value.exit_code == 52
    assert not state.exists()  # an expired feed is not recorded as seen


def test_an_older_serial_is_refused_after_a_newer_one(
    tmp_path: Path, key: Path, state: Path
) -> None:
    old = write_feed(tmp_path / "old.json", key, serial=4)
    new = write_feed(tmp_path / "new.json", key, [revoked()], serial=5)
    verify_feed(old, TRUST, publisher=PUBLISHER, state_path=state, now=NOW)
    verify_feed(
        old, TRUST, publisher=PUBLISHER, state_path=state, now=NOW
    )  # the same feed again is fine
    with pytest.raises(RevokedError):
        check_kit_feed(kit_pkg(), new, TRUST, state_path=state, now=NOW)  # recorded, then revokes
    with pytest.raises(FeedRollbackError, match="older serial") as info:
        verify_feed(old, TRUST, publisher=PUBLISHER, state_path=state, now=NOW)
    assert info.value.exit_code == 53 and "serial 5" in str(info.value.expected)


def test_the_same_serial_with_other_content_is_refused(
    tmp_path: Path, key: Path, state: Path
) -> None:
    first = write_feed(tmp_path / "a.json", key, serial=3)
    verify_feed(first, TRUST, publisher=PUBLISHER, state_path=state, now=NOW)
    other = write_feed(tmp_path / "b.json", key, [revoked()], serial=3)
    with pytest.raises(FeedRollbackError, match="same serial with other content"):
        verify_feed(other, TRUST, publisher=PUBLISHER, state_path=state, now=NOW)


def test_a_feed_signed_by_another_key_is_refused(tmp_path: Path, state: Path) -> None:
    feed = write_feed(tmp_path / "feed.json", private_key("untrusted", tmp_path))
    with pytest.raises(FeedSignatureError) as info:
        verify_feed(feed, TRUST, publisher=PUBLISHER, state_path=state, now=NOW)
    assert info.value.exit_code == 51


def test_a_changed_feed_is_refused(tmp_path: Path, key: Path, state: Path) -> None:
    feed = write_feed(tmp_path / "feed.json", key, [revoked()])
    envelope = json.loads(feed.read_bytes())
    statement = json.loads(b64decode(envelope["payload"]))
    statement["predicate"]["retractions"] = []  # hide the revocation
    envelope["payload"] = b64encode(canonical_json(statement))
    feed.write_bytes(canonical_json(envelope))  # a well-formed envelope, a wrong signature
    with pytest.raises(FeedSignatureError):
        verify_feed(feed, TRUST, publisher=PUBLISHER, state_path=state, now=NOW)


def _signed_statement(path: Path, key: Path, edit: Any) -> Path:
    write_feed(path, key, [revoked()])
    statement = json.loads(b64decode(json.loads(path.read_bytes())["payload"]))
    edit(statement)
    path.write_bytes(sign_payload(canonical_json(statement), load_signing_key(key)))
    return path


@pytest.mark.parametrize(
    "edit",
    [
        lambda s: s.update(predicateType="https://servekit.dev/receipt/v1"),
        lambda s: s["subject"][0]["digest"].update(sha256="0" * 64),
        lambda s: s["predicate"].pop("expires"),
    ],
    ids=["predicate-type", "subject-digest", "no-expiry"],
)
def test_a_malformed_statement_is_refused(
    tmp_path: Path, key: Path, state: Path, edit: Any
) -> None:
    feed = _signed_statement(tmp_path / "feed.json", key, edit)
    with pytest.raises(FeedMalformedError) as info:
        verify_feed(feed, TRUST, publisher=PUBLISHER, state_path=state, now=NOW)
    assert info.value.exit_code == 50


def test_not_an_envelope_is_malformed(tmp_path: Path, state: Path) -> None:
    feed = tmp_path / "feed.json"
    feed.write_text("{not json")
    with pytest.raises(FeedMalformedError):
        verify_feed(feed, TRUST, publisher=PUBLISHER, state_path=state, now=NOW)


@pytest.mark.parametrize(("text", "seconds"), [("7d", 604800), ("12h", 43200), ("30m", 1800)])
def test_durations(text: str, seconds: int) -> None:
    assert parse_duration(text).total_seconds() == seconds


@pytest.mark.parametrize("text", ["0d", "7", "7w", "-1d"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(UsageError):
        parse_duration(text)


def test_the_example_feed_loads() -> None:
    source = load_feed_source(ROOT / "examples" / "feed" / "feed.yaml")
    assert len(source.retractions) == 5
    assert {r.kind for r in source.retractions} == {
        "package_version", "figure", "engine_build", "model_commit"
    }  # fmt: skip


def test_an_unwritable_state_file_is_a_usage_error(tmp_path: Path, key: Path) -> None:
    feed = write_feed(tmp_path / "feed.json", key)
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    with pytest.raises(UsageError, match="the feed state file cannot be"):
        verify_feed(
            feed, TRUST, publisher=PUBLISHER, state_path=blocker / "feed-state.json", now=NOW
        )


def test_a_feed_naming_another_publisher_key_than_its_signer_is_refused(
    tmp_path: Path, key: Path, state: Path
) -> None:
    """A key the buyer trusts re-signing another publisher's feed as its own."""
    feed = _signed_statement(
        tmp_path / "feed.json", key, lambda s: s["predicate"].update(publisher_key_id="other")
    )
    with pytest.raises(FeedSignatureError, match="names another publisher key") as info:
        verify_feed(feed, TRUST, publisher=PUBLISHER, state_path=state, now=NOW)
    assert "other" in str(info.value)


def _current_feed(path: Path, key: Path, entries: Sequence[Retraction]) -> Path:
    """A feed issued now: ``check_weights_feed`` reads the real clock."""
    return write_feed(path, key, entries, issued=dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1))


def test_a_weights_pin_is_held_against_the_feed(tmp_path: Path, key: Path, state: Path) -> None:
    entry = BadModel(repo=MODEL[0], commit=MODEL[1], reason="weights replaced upstream", date=DAY)
    feed = _current_feed(tmp_path / "feed.json", key, [entry])
    with pytest.raises(RevokedError, match="weights replaced upstream"):
        check_weights_feed(feed, TRUST, state_path=state, model=MODEL, publisher=PUBLISHER)
    other = check_weights_feed(
        feed, TRUST, state_path=state, model=(MODEL[0], "0" * 40), publisher=PUBLISHER
    )
    assert other.retracted == ()


@pytest.mark.parametrize("source", ["kit", "package_dir"])
def test_a_weights_pin_with_its_kit_or_package_is_held_against_the_package_too(
    tmp_path: Path, key: Path, state: Path, source: str
) -> None:
    feed = _current_feed(tmp_path / "feed.json", key, [revoked()])
    where = (
        {"kit": kit_pkg()}
        if source == "kit"
        else {"package_dir": ROOT / "tests/assets/kit_package"}
    )
    with pytest.raises(RevokedError, match=r"revokes package kit-fixture 1\.0\.0"):
        check_weights_feed(feed, TRUST, state_path=state, model=(None, None), **where)


def test_a_pin_without_repository_and_commit_has_nothing_to_check(
    tmp_path: Path, key: Path, state: Path
) -> None:
    feed = _current_feed(tmp_path / "feed.json", key, [])
    with pytest.raises(UsageError, match="names no repository and commit") as info:
        check_weights_feed(feed, TRUST, state_path=state, model=("org/model", None))
    assert "--kit or --package" in str(info.value.hint)


# --- a feed is bound to its publisher and to the signing key's grant -------------------


def test_another_trusted_publishers_feed_is_refused_not_read_as_nothing_revoked(
    tmp_path: Path, key: Path, state: Path
) -> None:
    """The kit publisher's revoking feed swapped for another trusted publisher's current one."""
    revoking = write_feed(tmp_path / "revoking.json", key, [revoked()])
    with pytest.raises(RevokedError):
        check_kit_feed(kit_pkg(), revoking, GRANTS, state_path=tmp_path / "s1.json", now=NOW)
    substitute = write_feed(
        tmp_path / "other.json", private_key("untrusted", tmp_path), publisher="Someone Else"
    )
    verify_feed(substitute, GRANTS, publisher="Someone Else", state_path=state, now=NOW)  # valid
    with pytest.raises(FeedSignatureError, match="another publisher's") as info:
        check_kit_feed(kit_pkg(), substitute, GRANTS, state_path=state, now=NOW)
    assert "'servekit tests'" in str(info.value.expected)
    assert "'Someone Else'" in str(info.value.actual)


def test_a_key_cannot_sign_a_feed_in_another_publishers_name(
    tmp_path: Path, key: Path, state: Path
) -> None:
    """Someone Else's key raising "servekit tests"' serial: refused, and the state untouched."""
    forged = write_feed(tmp_path / "forged.json", private_key("untrusted", tmp_path), serial=10**12)
    with pytest.raises(FeedSignatureError, match="may not speak for its publisher") as info:
        check_kit_feed(kit_pkg(), forged, GRANTS, state_path=state, now=NOW)
    assert "28cc044b" in str(info.value.expected)  # the key that is granted
    assert not state.exists()  # a refused feed moves no serial
    real = write_feed(tmp_path / "real.json", key, [revoked()], serial=2)
    with pytest.raises(RevokedError):  # accepted (no rollback), and it revokes
        check_kit_feed(kit_pkg(), real, GRANTS, state_path=state, now=NOW)
    mark = read_state(state).last("seen", PUBLISHER)
    assert mark is not None and mark.serial == 2


def test_a_bare_key_speaks_only_for_the_publisher_the_command_names(
    tmp_path: Path, key: Path, state: Path
) -> None:
    """With one bare key, a feed that key signed in another publisher's name is refused."""
    other = write_feed(tmp_path / "other.json", key, publisher="Someone Else")
    with pytest.raises(FeedSignatureError, match="another publisher's"):
        check_kit_feed(kit_pkg(), other, TRUST, state_path=state, now=NOW)
    bare = TRUST.grants[next(iter(TRUST.keys))]
    assert not bare.speaks_for(PUBLISHER)  # unscoped, a bare key speaks for no feed
    assert TRUST.scoped(PUBLISHER).grants[next(iter(TRUST.keys))].speaks_for(PUBLISHER)


def test_a_pin_alone_needs_the_publisher_named(tmp_path: Path, key: Path, state: Path) -> None:
    feed = _current_feed(tmp_path / "feed.json", key, [])
    with pytest.raises(UsageError, match="names no publisher"):
        check_weights_feed(feed, TRUST, state_path=state, model=MODEL)
    with pytest.raises(UsageError, match="is not the publisher of kit-fixture"):
        check_weights_feed(feed, TRUST, state_path=state, model=MODEL, kit=kit_pkg(), publisher="x")


def test_a_huge_feed_is_refused_without_being_read_whole(tmp_path: Path, state: Path) -> None:
    huge = tmp_path / "feed.json"
    with huge.open("wb") as fh:
        fh.truncate(256 * 1024 * 1024)  # sparse: 256 MiB to read, nothing on disk
    tracemalloc.start()
    try:
        with pytest.raises(FeedMalformedError, match="larger than a feed may be"):
            verify_feed(huge, TRUST, publisher=PUBLISHER, state_path=state, now=NOW)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024


def test_a_key_granted_other_packages_cannot_vouch_for_this_one(
    tmp_path: Path, key: Path, state: Path
) -> None:
    """Two keys of one publisher: the one granted only other-* cannot clear kit-fixture."""
    pub, other = (
        load_public_key(ROOT / "tests/assets/keys" / f"{n}.pub") for n in ("publisher", "untrusted")
    )
    trust_file = tmp_path / "trust.toml"
    trust_file.write_text(
        render_trust_file(
            [(pub.key_id, pub.pem(), (Scope(PUBLISHER, ("kit-fixture",)),)),
             (other.key_id, other.pem(), (Scope(PUBLISHER, ("other-*",)),))],
            "one publisher, two keys",
        )
    )  # fmt: skip
    trust = load_trust_store(trust_file)
    narrow = write_feed(tmp_path / "narrow.json", private_key("untrusted", tmp_path), serial=9)
    with pytest.raises(FeedSignatureError, match="may not speak for the package checked"):
        check_kit_feed(kit_pkg(), narrow, trust, state_path=state, now=NOW)
    assert not state.exists()
    real = write_feed(tmp_path / "real.json", key, [revoked()], serial=2)
    with pytest.raises(RevokedError):
        check_kit_feed(kit_pkg(), real, trust, state_path=state, now=NOW)
