"""Two workers (two apps, each with its own engine and memory) on one store, on SQLite and
on PostgreSQL: a session made on one is good on the other, and a retraction made outside
both reaches both on their next request. Nothing they share lives in process memory."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from servekit.config import Settings
from servekit.store.operator import retract_version
from servekit.web.app import create_app
from tests.store.conftest import Backend, backend, make_variant
from tests.web.server import store_publish

__all__ = ["backend"]


def test_workers_share_sessions_and_retractions(backend: Backend, tmp_path: Path) -> None:
    url = backend.new_url()
    settings = Settings(home=tmp_path / "home", database_url=url)
    pkg = make_variant(tmp_path / "pkg", pkg_id="test-shared", version="1.0.0", usd=5)
    store_publish([pkg], settings.home, url)
    apps = [create_app(settings), create_app(settings)]
    one, two = (TestClient(app, base_url="https://store.test") for app in apps)
    try:
        _journey(one, two, settings)
    finally:
        for app in apps:
            app.state.store.engine.dispose()


def _journey(one: TestClient, two: TestClient, settings: Settings) -> None:
    with one, two:
        assert "/packages/test-shared/1.0.0" in two.get("/").text  # warm worker two's cache

        credentials = {"email": "w@example.com", "password": "correct horse"}
        made = _post(one, one.get("/signup").text, "/signup", workspace="shared", **credentials)
        assert made.url.path == "/signin"  # sign-up never signs in
        signed_in = _post(one, made.text, "/signin", next="/w/shared", **credentials)
        assert signed_in.url.path == "/w/shared"
        two.cookies.update(one.cookies)
        assert two.get("/w/shared").status_code == 200

        retract_version(settings, "test-shared", "1.0.0", "found wanting")
        assert "/packages/test-shared/1.0.0" not in two.get("/").text
        assert "found wanting" in one.get("/packages/test-shared/1.0.0").text


def _post(client: TestClient, form: str, path: str, **data: str) -> Any:
    token = re.search(r'name="csrf_token" value="([^"]+)"', form)
    assert token
    return client.post(path, data={**data, "csrf_token": token.group(1)})
