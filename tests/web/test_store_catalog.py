"""The pages read what the store has published: retraction hides a version from sale and
its page says why; the JSON API and its OpenAPI document are mounted under /api/v1."""

from __future__ import annotations

from pathlib import Path

import httpx

from servekit.catalog.publish import publish
from servekit.config import Settings
from servekit.store.db import open_store
from servekit.store.operator import retract_version
from servekit.web.storecatalog import StoreCatalog
from tests.package.factories import edit_definition, write_package
from tests.store.conftest import make_variant
from tests.web.server import serving, store_publish


def test_retracted_version_leaves_the_listing_and_its_page_says_why(tmp_path: Path) -> None:
    home = tmp_path / "home"
    v1 = make_variant(tmp_path / "v1", pkg_id="tiny-test", version="1.0.0", usd=49.99)
    v2 = make_variant(tmp_path / "v2", pkg_id="tiny-test", version="1.0.1", usd=59)
    store_publish([v1, v2], home)
    with serving(home) as url:
        index = httpx.get(url + "/").text
        assert "/packages/tiny-test/1.0.0" in index and "/packages/tiny-test/1.0.1" in index
        assert 'id="retracted"' not in httpx.get(url + "/packages/tiny-test/1.0.0").text

        retract_version(Settings(home=home), "tiny-test", "1.0.0", "wrong node pinned")
        index = httpx.get(url + "/").text
        assert "/packages/tiny-test/1.0.0" not in index
        assert "/packages/tiny-test/1.0.1" in index
        page = httpx.get(url + "/packages/tiny-test/1.0.0")
        assert page.status_code == 200
        assert 'id="retracted"' in page.text and "wrong node pinned" in page.text
        on_sale = httpx.get(url + "/api/v1/catalog").json()
        assert [(v["package_id"], v["version"]) for v in on_sale] == [("tiny-test", "1.0.1")]


def test_a_package_the_store_never_published_has_no_page(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store_publish(
        [make_variant(tmp_path / "pkg", pkg_id="tiny-test", version="1.0.0", usd=0)], home
    )
    # a copy published to the file catalog alone (not through the store) is not shown
    other = tmp_path / "other"
    write_package(other)
    edit_definition(other, lambda d: d.update(id="not-in-store"))
    publish([other], home)
    with serving(home) as url:
        assert "not-in-store" not in httpx.get(url + "/").text
        assert httpx.get(url + "/packages/not-in-store/1.0.0").status_code == 404


def test_api_and_its_openapi_document_are_mounted(base_url: str) -> None:
    doc = httpx.get(base_url + "/api/v1/openapi.json").json()
    assert "/api/v1/catalog" in doc["paths"]
    assert not [p for p in doc["paths"] if not p.startswith("/api/v1/")]  # pages stay out
    # the API is authenticated by bearer tokens, so the CSRF check does not stand in its way
    answer = httpx.post(base_url + "/api/v1/sessions", json={"email": "x@y.z", "password": "no"})
    assert answer.status_code == 401
    assert answer.headers["content-type"].startswith("application/problem+json")
    # forms are still checked
    assert httpx.post(base_url + "/", data={"a": "b"}).status_code == 403


def test_unchanged_needs_no_query_until_another_connection_commits(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store_publish([make_variant(tmp_path / "v1", pkg_id="tiny-test", version="1.0.0", usd=0)], home)
    store = open_store(Settings(home=home))
    try:
        source = StoreCatalog(store)
        assert source.unchanged() is None  # nothing checked yet
        first = source.current()
        assert source.unchanged() is first
        assert source.current() is first  # same publication state: the same object
        # a retraction through another engine (as another worker or host would)
        retract_version(Settings(home=home), "tiny-test", "1.0.0", "wrong node pinned")
        assert source.unchanged() is None
        second = source.current()
        assert second is not first and ("tiny-test", "1.0.0") in second.retracted
        assert source.unchanged() is second
        # a publish to the file catalog alone moves the generation
        other = tmp_path / "other"
        write_package(other)
        publish([other], home)
        assert source.unchanged() is None
    finally:
        store.engine.dispose()
