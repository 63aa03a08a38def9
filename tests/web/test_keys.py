"""The store's signing keys for buyers: /keys, /keys/trust.toml, /api/v1/keys, the key id on
package pages, `servekit trust fetch`, and the feed signed by the same key."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from servekit.config import Settings
from servekit.receipts.dsse import b64decode
from servekit.receipts.keys import PUBLIC_KEY_FILE, PublicKey, load_public_key
from servekit.store import accounts
from servekit.store.db import open_store
from tests.fakehttp import QuietHandler
from tests.fakehttp import serving as serving_fake
from tests.functional.helpers import servekit
from tests.store.conftest import make_variant
from tests.web.server import serving, store_publish

EMAIL, PASSWORD = "buyer@example.com", "correct horse battery"


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A store selling one free package, with one buyer account; yields (its URL, its home)."""
    home = tmp_path_factory.mktemp("shop")
    store_publish(
        [make_variant(home.parent / "pkg", pkg_id="test-keys", version="1.0.0", usd=0)], home
    )
    store = open_store(Settings(home=home))
    try:
        with store.transaction() as s:
            uid = accounts.create_user(EMAIL, PASSWORD, session=s)
            accounts.create_workspace("buyer", "Buyer", owner_id=uid, session=s)
    finally:
        store.engine.dispose()
    with serving(home) as url:
        yield url, home


def _download(url: str, out: Path) -> Path:
    """As a buyer through the JSON API: sign in, take the free test-keys, download its kit."""
    with httpx.Client(base_url=url) as client:
        token = client.post("/api/v1/sessions", json={"email": EMAIL, "password": PASSWORD})
        auth = {"Authorization": f"Bearer {token.json()['token']}"}
        quote = client.post(
            "/api/v1/workspaces/buyer/quotes", json={"package_id": "test-keys"}, headers=auth
        )
        assert quote.status_code == 201, quote.text
        order = client.post(
            "/api/v1/workspaces/buyer/orders",
            json={"quote_id": quote.json()["id"]},
            headers={**auth, "Idempotency-Key": "test-keys-1"},
        )
        assert order.status_code == 201, order.text
        kit = client.get("/api/v1/workspaces/buyer/downloads/test-keys/latest", headers=auth)
        assert kit.status_code == 200, kit.text
    out.write_bytes(kit.content)
    return out


def test_a_buyer_with_only_the_url_fetches_the_trust_file_and_verifies_a_kit(
    shop: tuple[str, Path], tmp_path: Path
) -> None:
    url, home = shop
    key_id = load_public_key(home / "keys" / PUBLIC_KEY_FILE).key_id
    fetched = servekit("trust", "fetch", url, "-o", str(tmp_path / "trust.toml"), "--json")
    assert fetched.returncode == 0, fetched.stderr
    report = json.loads(fetched.stdout)
    assert [k["key_id"] for k in report["keys"]] == [key_id]
    assert report["keys"][0]["grants"] == [
        {"publisher": "servekit tests", "packages": ["test-keys"]}
    ]
    shown = servekit("trust", "fetch", url, "-o", str(tmp_path / "again.toml"))
    assert shown.returncode == 0 and f"key id: {key_id}" in shown.stdout  # to compare
    kit = _download(url, tmp_path / "test-keys.tar.gz")
    env = {**os.environ, "SERVEKIT_CACHE_DIR": str(tmp_path / "cache")}
    feed = tmp_path / "feed.json"
    feed.write_bytes(httpx.get(url + "/feed.json?publisher=servekit%20tests").content)
    verified = servekit("verify", "kit", str(kit), "--trust", str(tmp_path / "trust.toml"),
                        "--feed", str(feed), env=env)  # fmt: skip
    assert verified.returncode == 0, verified.stderr
    assert f"signed by:  {key_id}" in verified.stdout
    statement = json.loads(b64decode(json.loads(feed.read_bytes())["payload"]))
    assert statement["predicate"]["publisher_key_id"] == key_id  # the feed names the same key


def test_the_keys_page_the_api_and_the_package_page_name_the_key(shop: tuple[str, Path]) -> None:
    url, home = shop
    key_id = load_public_key(home / "keys" / PUBLIC_KEY_FILE).key_id
    api = httpx.get(url + "/api/v1/keys").json()
    assert [k["key_id"] for k in api["keys"]] == [key_id]
    assert load_public_key_from(api["keys"][0]["public_key"]) == key_id
    assert api["trust_file"] == "/keys/trust.toml"
    page = httpx.get(url + "/keys")
    assert page.status_code == 200 and key_id in page.text and "/keys/trust.toml" in page.text
    package = httpx.get(url + "/packages/test-keys/1.0.0")
    assert re.search(rf'id="signing-key".*{key_id}', package.text)
    download = httpx.get(url + "/keys/trust.toml")
    assert download.headers["content-disposition"] == 'attachment; filename="trust.toml"'
    assert "/api/v1/keys" in httpx.get(url + "/api/v1/openapi.json").json()["paths"]


def load_public_key_from(pem: str) -> str:
    key = serialization.load_pem_public_key(pem.encode())
    assert isinstance(key, Ed25519PublicKey)
    return PublicKey(key).key_id


class _Huge(QuietHandler):
    """Answers 256 MiB, written lazily: a client that reads it whole would take it all."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.send_response(200)
        self.send_header("Content-Length", str(256 * 1024 * 1024))
        self.end_headers()
        chunk = b"# " + b"x" * 65533 + b"\n"
        try:
            for _ in range(256 * 16):
                self.wfile.write(chunk)
        except OSError:  # the client hung up, as it should
            pass


class _BareKey(QuietHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        pem = (Path(__file__).parents[1] / "assets" / "keys" / "publisher.pub").read_bytes()
        self.send_body(200, "text/plain", pem)


class _Missing(QuietHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.send_body(404, "text/plain", b"no such page")


@pytest.mark.parametrize(
    ("handler", "code", "message"),
    [
        (_Huge, 39, "more than 1048576 bytes"),
        (_BareKey, 5, "one bare public key"),
        (_Missing, 39, "answered 404"),
    ],
    ids=["huge", "bare-key", "404"],
)
def test_trust_fetch_refuses_what_is_not_a_trust_file(
    tmp_path: Path, handler: type[BaseHTTPRequestHandler], code: int, message: str
) -> None:
    out = tmp_path / "trust.toml"
    with serving_fake(handler) as url:
        done = servekit("trust", "fetch", url, "-o", str(out), timeout=60)
    assert done.returncode == code and message in done.stderr, done.stderr
    assert not out.exists()


def test_a_fetched_trust_file_may_not_name_local_key_files(tmp_path: Path) -> None:
    class _FileName(QuietHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)  # noqa: N802 (http.server's name)
            body = f"[keys.{'0' * 64}]\npublisher='x'\npackages=['*']\npublic_key='/etc/x.pub'\n"
            self.send_body(200, "application/toml", body.encode())

    with serving_fake(_FileName) as url:
        done = servekit("trust", "fetch", url + "/t.toml", "-o", str(tmp_path / "t.toml"))
    assert done.returncode == 5 and "must hold the PEM itself" in done.stderr, done.stderr


def test_a_store_without_a_key_or_a_kit_publishes_no_trust_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with serving(home) as url:  # no key yet: nothing to publish
        assert httpx.get(url + "/api/v1/keys").status_code == 404
        assert httpx.get(url + "/keys").status_code == 404
    store_publish([], home)  # a key, and no kit: the key is granted nothing
    with serving(home) as url:
        empty = httpx.get(url + "/keys/trust.toml")
        assert empty.status_code == 404 and "published no kit" in empty.text
        assert httpx.get(url + "/api/v1/keys").json()["keys"][0]["grants"] == []


@pytest.mark.parametrize(
    ("url", "message"),
    [("ftp://example.invalid/trust.toml", "not an http"), ("http://127.0.0.1:9", "cannot fetch")],
    ids=["scheme", "unreachable"],
)
def test_trust_fetch_names_an_unusable_url(tmp_path: Path, url: str, message: str) -> None:
    done = servekit("trust", "fetch", url, "-o", str(tmp_path / "t.toml"))
    assert done.returncode == 39 and message in done.stderr, done.stderr
