"""The store's revocation feeds (``/feed.json?publisher=NAME``): one per publisher it sells.

A verifier accepts only the feed of the kit's own publisher, signed by a key granted for
that publisher (docs/feed.md), so the store signs one feed per publisher its kits name,
holding that publisher's retracted versions, with the key ``/keys/trust.toml`` grants for it.

Built with :func:`servekit.feed.build_feed` on request, so every worker serves the
database's current state. A verifier refuses the same serial with other content, so the
feed is a pure function of the store and the clock's hour:

* ``issued`` is the later of the start of the current UTC hour and the newest retraction
  (to the millisecond), ``serial`` is ``issued`` in milliseconds since the epoch: it rises
  with every retraction and every hour, and one serial always has the same content;
* ``expires`` is :data:`LIFETIME` after ``issued``: a verifier that fetches at least
  weekly never holds an expired feed;
* Ed25519 signatures are deterministic, so every worker serves the same bytes.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from servekit.errors import NotFoundError
from servekit.feed import build_feed
from servekit.feed.models import RevokedPackage
from servekit.receipts.keys import PRIVATE_KEY_FILE, load_signing_key
from servekit.store import publishing
from servekit.store.db import Store
from servekit.web.home import KEYS
from servekit.web.keys import publisher_versions

LIFETIME = dt.timedelta(days=7)


def current_feed(store: Store, now: dt.datetime, *, publisher: str | None) -> bytes:
    """The signed feed of ``publisher``'s retractions as of ``now`` (see the module doc)."""
    key_path = store.home / KEYS / PRIVATE_KEY_FILE
    if not key_path.exists():
        raise NotFoundError(
            f"this store has no publisher key at {Path(KEYS) / PRIVATE_KEY_FILE}",
            hint="`servekit serve` creates one on its first start",
        )
    if publisher is None:
        raise NotFoundError(
            "the store signs one feed per publisher: name it",
            hint="fetch /feed.json?publisher=NAME, NAME as the kit's package.yaml gives it "
            "(`servekit verify kit` prints it); /keys lists the publishers",
        )
    theirs = publisher_versions(store, publisher)
    if not theirs:
        raise NotFoundError(
            f"this store sells no package of publisher {publisher!r}",
            hint="/keys lists the publishers this store signs for",
        )
    with store.transaction() as s:
        rows = [r for r in publishing.retractions(session=s) if (r[0], r[1]) in theirs]
    issued = now.astimezone(dt.UTC).replace(minute=0, second=0, microsecond=0)
    if rows:
        newest = rows[-1][3].astimezone(dt.UTC)
        issued = max(issued, newest.replace(microsecond=newest.microsecond // 1000 * 1000))
    entries = [
        RevokedPackage(package=pid, version=ver, reason=reason, date=when.date())
        for pid, ver, reason, when in rows
    ]
    return build_feed(
        entries,
        publisher=publisher,
        serial=int(issued.timestamp() * 1000),
        issued=issued,
        expires=issued + LIFETIME,
        key=load_signing_key(key_path),
    )
