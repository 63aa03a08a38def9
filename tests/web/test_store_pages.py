"""The store's pages over HTTP: CSRF on every form, the session cookie, sign-out that ends
the session everywhere, the database-kept sign-in limit, workspace isolation, and a
checkout whose confirm form replays (not repeats) the order when it is submitted twice."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from servekit.config import Settings
from servekit.store.accounts import ACCOUNT_FREE
from servekit.web.app import create_app
from tests.store.conftest import make_variant
from tests.web.server import store_publish

BASE = "https://store.test"  # the session cookie is Secure


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("store-pages")
    priced = make_variant(
        root / "priced", pkg_id="test-priced", version="1.0.0", usd=49.99, maint=19
    )
    store_publish([priced], root / "home")
    return root / "home"


@pytest.fixture
def client(home: Path) -> Iterator[TestClient]:
    with TestClient(create_app(Settings(home=home)), base_url=BASE) as c:
        yield c


def _csrf(html: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert found, "the page has no CSRF field"
    return found.group(1)


def _signup(client: TestClient, email: str, workspace: str) -> str:
    form = client.get("/signup")
    answer = client.post(
        "/signup",
        data={
            "email": email,
            "password": "correct horse",
            "workspace": workspace,
            "csrf_token": _csrf(form.text),
        },
    )
    assert answer.status_code == 200 and answer.url.path == "/signin", answer.text
    signed_in = client.post(
        "/signin",
        data={
            "email": email,
            "password": "correct horse",
            "next": f"/w/{workspace}",
            "csrf_token": _csrf(answer.text),
        },
    )
    assert signed_in.url.path == f"/w/{workspace}", signed_in.text
    return signed_in.text


def test_forms_need_the_csrf_token_and_pages_are_not_cached(client: TestClient) -> None:
    client.get("/signup")
    refused = client.post(
        "/signup", data={"email": "x@example.com", "password": "correct horse", "workspace": "x1"}
    )
    assert refused.status_code == 403
    signin = client.get("/signin")
    assert signin.headers["cache-control"] == "no-store"
    page = _signup(client, "csrf@example.com", "csrf-ws")
    assert page.count('name="csrf_token"') >= 3  # sign out, add member, new token
    cookie = client.cookies.jar
    (session,) = [c for c in cookie if c.name == "servekit_session"]
    assert session.secure and session.has_nonstandard_attr("httponly")
    assert session.get_nonstandard_attr("samesite") == "lax"


def test_sign_out_ends_the_session_even_for_a_copied_cookie(client: TestClient, home: Path) -> None:
    page = _signup(client, "leaves@example.com", "leaves")
    copied = dict(client.cookies)
    assert client.post("/signout", data={"csrf_token": _csrf(page)}).url.path == "/"
    with TestClient(create_app(Settings(home=home)), base_url=BASE, cookies=copied) as thief:
        answer = thief.get("/w/leaves", follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"].startswith("/signin")


def test_sign_in_is_limited_across_workers(home: Path) -> None:
    # its own client address, so the failures it records limit no other test
    attacker = ("203.0.113.9", 50000)
    client = TestClient(create_app(Settings(home=home)), base_url=BASE, client=attacker)
    _signup(client, "target@example.com", "target")
    for _ in range(ACCOUNT_FREE):
        form = client.get("/signin")
        wrong = client.post(
            "/signin",
            data={
                "email": "target@example.com",
                "password": "guess",
                "csrf_token": _csrf(form.text),
            },
        )
        assert wrong.status_code == 401
    with TestClient(
        create_app(Settings(home=home)), base_url=BASE, client=attacker
    ) as other_worker:
        form = other_worker.get("/signin")
        right = other_worker.post(
            "/signin",
            data={
                "email": "target@example.com",
                "password": "correct horse",
                "csrf_token": _csrf(form.text),
            },
        )
    assert right.status_code == 429 and "failed sign-ins for this account" in right.text
    wait = int(right.headers["retry-after"])
    assert 0 < wait <= 60 and f"try again in {wait} seconds" in right.text
    assert "reset" not in right.text.lower()  # no way out that does not exist


def test_a_workspace_is_invisible_to_non_members(client: TestClient, home: Path) -> None:
    _signup(client, "owner@example.com", "private-ws")
    with TestClient(create_app(Settings(home=home)), base_url=BASE) as stranger:
        _signup(stranger, "stranger@example.com", "stranger-ws")
        assert stranger.get("/w/private-ws").status_code == 404
        assert stranger.get("/w/private-ws/downloads/test-priced/1.0.0").status_code == 404


def test_confirm_submitted_twice_charges_once(client: TestClient) -> None:
    page = _signup(client, "buyer@example.com", "buyer-ws")
    quote = client.post(
        "/quotes",
        data={
            "workspace": "buyer-ws",
            "package_id": "test-priced",
            "version": "1.0.0",
            "kind": "purchase",
            "csrf_token": _csrf(page),
        },
    )
    assert "$49.99" in quote.text
    key = re.search(r'name="idempotency_key" value="([^"]+)"', quote.text)
    assert key
    action = re.search(r'action="(/w/buyer-ws/quotes/\d+/confirm)"', quote.text)
    assert action
    form = {"idempotency_key": key.group(1), "csrf_token": _csrf(quote.text)}
    first = client.post(action.group(1), data=form)
    second = client.post(action.group(1), data=form)
    assert first.url == second.url and "/orders/" in str(first.url)
    assert "paid" in first.text
    held = client.get("/w/buyer-ws").text
    assert held.count('class="download"') == 1
    kit = client.get("/w/buyer-ws/downloads/test-priced/1.0.0")
    assert kit.status_code == 200 and kit.headers["content-type"] == "application/gzip"


@pytest.mark.parametrize(
    ("n", "target"), [(1, "//evil.example/"), (2, "/\\evil.example/"), (3, "https://evil.example/")]
)
def test_sign_in_never_redirects_off_site(client: TestClient, n: int, target: str) -> None:
    _signup(client, f"next{n}@example.com", f"next-{n}")
    form = client.get("/signin")
    answer = client.post(
        "/signin",
        data={
            "email": f"next{n}@example.com",
            "password": "correct horse",
            "next": target,
            "csrf_token": _csrf(form.text),
        },
        follow_redirects=False,
    )
    assert answer.status_code == 303 and answer.headers["location"] == "/account"
