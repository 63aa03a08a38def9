"""/feed.json: the store's retractions, signed by the publisher key, verified by
`servekit verify kit --feed`; a retraction raises the serial and revokes the kit."""

from __future__ import annotations

import datetime as dt
import os
from functools import partial
from pathlib import Path

import httpx

from servekit.config import Settings
from servekit.receipts.keys import PUBLIC_KEY_FILE
from servekit.store.db import open_store
from servekit.store.operator import list_versions, retract_version
from servekit.store.publishing import kit_path
from servekit.web.feed import current_feed
from tests.functional.helpers import servekit
from tests.store.conftest import make_variant
from tests.web.server import serving, store_publish


def test_feed_revokes_a_retracted_version(tmp_path: Path) -> None:
    """The kit publisher's feed, from the store, verified by the CLI with the store's key."""
    home = tmp_path / "home"
    pkg = make_variant(tmp_path / "pkg", pkg_id="test-feed", version="1.0.0", usd=10)
    store_publish([pkg], home)
    (version,) = list_versions(Settings(home=home))
    kit = kit_path(home / "kits", version.kit_sha256)
    env = {**os.environ, "SERVEKIT_CACHE_DIR": str(tmp_path / "cache")}
    trust = str(home / "keys" / PUBLIC_KEY_FILE)

    def verify_with(feed: bytes) -> int:
        path = tmp_path / "feed.json"
        path.write_bytes(feed)
        result = servekit("verify", "kit", str(kit), "--trust", trust, "--feed", str(path), env=env)
        return result.returncode

    mine = {"publisher": "servekit tests"}  # the kit's publisher: its feed is the one to check
    with serving(home) as url:
        before = httpx.get(url + "/feed.json", params=mine)
        assert before.status_code == 200
        assert httpx.get(url + "/feed.json", params=mine).content == before.content  # one body
        assert verify_with(before.content) == 0
        assert httpx.get(url + "/feed.json").status_code == 404  # which publisher's?
        unknown = httpx.get(url + "/feed.json", params={"publisher": "Someone Else"})
        assert unknown.status_code == 404 and "no package of publisher" in unknown.text

        retract_version(Settings(home=home), "test-feed", "1.0.0", "wrong driver pinned")
        after = httpx.get(url + "/feed.json", params=mine).content
    assert after != before.content
    assert verify_with(after) == 54  # RevokedError
    assert verify_with(before.content) == 53  # the old feed is now a rollback


def test_the_serial_rises_each_hour_and_never_repeats_with_other_content(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store_publish([make_variant(tmp_path / "p", pkg_id="test-feed", version="1.0.0", usd=1)], home)
    store = open_store(Settings(home=home))
    try:
        t = dt.datetime(2026, 12, 1, 6, 30, tzinfo=dt.UTC)
        feed = partial(current_feed, store, publisher="servekit tests")
        same_hour = feed(t + dt.timedelta(minutes=20))
        assert feed(t) == same_hour
        assert feed(t + dt.timedelta(hours=1)) != same_hour
    finally:
        store.engine.dispose()
