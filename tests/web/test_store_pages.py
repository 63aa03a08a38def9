"""The store's pages over HTTP: CSRF on every form, the session cookie, sign-out that ends
the session everywhere, the database-kept sign-in limit, workspace isolation, and a
checkout whose confirm form replays (not repeats) the order when it is submitted twice;
and a store a person can use (issue 21): next kept, refused forms shown again with their
inputs, owned versions offered as downloads, POST-redirect-GET, a confirmation before
cancelling, order history, test mode, placeholder kits, HTML 404/405 and HEAD."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from servekit.config import Settings
from servekit.receipts.keys import PUBLIC_KEY_FILE, load_public_key
from servekit.store import accounts
from servekit.store.accounts import ACCOUNT_FREE
from servekit.store.db import open_store
from servekit.store.models import Download
from servekit.web.app import create_app
from tests.functional.helpers import EXAMPLES
from tests.store.conftest import make_variant
from tests.web.server import store_publish

BASE = "https://store.test"  # the session cookie is Secure


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("store-pages")
    priced = make_variant(
        root / "priced", pkg_id="test-priced", version="1.0.0", usd=49.99, maint=19
    )
    store_publish([priced, EXAMPLES / "kimi-k3-8xb300"], root / "home")
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
    """Sign up; the workspace's page (where sign-up lands without a ``next``)."""
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


# --- a store a person can use (issue 21, item 4) --------------------------------------
# One signed-in buyer (a module-scoped client) with a new workspace per test, made in the
# store directly: each sign-up hashes a password twice, about a second on a loaded machine.

BUYER = "shopper@example.com"


@pytest.fixture(scope="module")
def shop(home: Path) -> Iterator[TestClient]:
    with TestClient(create_app(Settings(home=home)), base_url=BASE) as c:
        _signup(c, BUYER, "shopper")
        yield c


@pytest.fixture
def ws(shop: TestClient, home: Path, request: pytest.FixtureRequest) -> str:
    """A new workspace the buyer owns, named after the test."""
    slug = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[5:50].strip("-")
    store = open_store(Settings(home=home))
    try:
        with store.transaction() as s:
            owner = accounts.user_id_by_email(BUYER, session=s)
            accounts.create_workspace(slug, slug, owner_id=owner, session=s)
    finally:
        store.engine.dispose()
    return slug


def _post(client: TestClient, path: str, **form: str) -> httpx.Response:
    page = client.get("/signin").text  # any page: the session's CSRF token
    return client.post(path, data={**form, "csrf_token": _csrf(page)}, follow_redirects=False)


def _quote(client: TestClient, ws: str, pkg: str, version: str, kind: str) -> str:
    answer = _post(client, "/quotes", workspace=ws, package_id=pkg, version=version, kind=kind)
    assert answer.status_code == 303, answer.text
    return str(answer.headers["location"])


def _buy(client: TestClient, ws: str, pkg: str, version: str, kind: str = "purchase") -> str:
    """Quote and confirm; the order's receipt page."""
    quote = client.get(_quote(client, ws, pkg, version, kind)).text
    key = re.search(r'name="idempotency_key" value="([^"]+)"', quote)
    action = re.search(r'action="(/w/[^"]+/confirm)"', quote)
    assert key and action, quote
    done = _post(client, action.group(1), idempotency_key=key.group(1))
    assert done.status_code == 303, done.text
    return client.get(done.headers["location"]).text


def test_next_is_kept_through_sign_up(client: TestClient) -> None:
    buy = client.get("/buy/test-priced/1.0.0", follow_redirects=False)
    assert buy.headers["location"] == "/signin?next=/buy/test-priced/1.0.0"
    signin = client.get(buy.headers["location"]).text
    assert 'href="/signup?next=/buy/test-priced/1.0.0"' in signin
    form = client.get("/signup?next=/buy/test-priced/1.0.0").text
    assert 'name="next" value="/buy/test-priced/1.0.0"' in form
    answer = _post(
        client,
        "/signup",
        email="journey@example.com",
        password="correct horse",
        workspace="journey",
        next="/buy/test-priced/1.0.0",
    )
    # sign-up never signs in (it cannot tell who has an account): on to sign in, next kept
    then = "/signin?" + urlencode({"next": "/buy/test-priced/1.0.0", "signed_up": "1"})
    assert answer.status_code == 303 and answer.headers["location"] == then
    assert 'name="next" value="/buy/test-priced/1.0.0"' in client.get(then).text
    answer = _post(
        client,
        "/signin",
        email="journey@example.com",
        password="correct horse",
        next="/buy/test-priced/1.0.0",
    )
    assert answer.status_code == 303 and answer.headers["location"] == "/buy/test-priced/1.0.0"
    assert "Get a quote" in client.get("/buy/test-priced/1.0.0").text
    # and off-site targets are dropped, on the form and after signing up
    for n, target in enumerate(("//evil.example", "https://evil.example")):
        client.cookies.clear()
        form = client.get("/signup", params={"next": target}).text
        assert 'name="next" value=""' in form
        answer = _post(
            client,
            "/signup",
            email=f"offsite{n}@example.com",
            password="correct horse",
            workspace=f"offsite-{n}",
            next=target,
        )
        then = "/signin?" + urlencode({"next": f"/w/offsite-{n}", "signed_up": "1"})
        assert answer.status_code == 303 and answer.headers["location"] == then


def test_a_wrong_password_shows_the_form_again_with_the_email(shop: TestClient) -> None:
    answer = _post(shop, "/signin", email=BUYER, password="not the password", next="/w/x")
    assert answer.status_code == 401
    assert 'id="form-error"' in answer.text and 'id="signin"' in answer.text
    assert f'value="{BUYER}"' in answer.text and 'name="next" value="/w/x"' in answer.text
    assert "not the password" not in answer.text


def test_a_refused_sign_up_keeps_its_inputs(shop: TestClient) -> None:
    answer = _post(
        shop, "/signup", email="badslug@example.com", password="correct horse", workspace="No!"
    )
    assert answer.status_code == 422 and "is not valid" in answer.text
    assert 'value="badslug@example.com"' in answer.text and 'value="No!"' in answer.text
    assert "correct horse" not in answer.text


def test_an_incomplete_licence_form_keeps_all_eight_inputs(shop: TestClient, ws: str) -> None:
    path = f"/w/{ws}/licence/kimi-k3-8xb300/1.0.0"
    form = shop.get(path).text
    sha = re.search(r'name="terms_sha256" value="([0-9a-f]{64})"', form)
    assert sha and form.count('type="checkbox"') == 4
    clauses = re.findall(r'name="(affirm_[a-z_]+)"', form)
    kept = {
        "licensed_entity": "Acme Compute GmbH",
        "signer_name": "Ada Buyer",
        "signer_title": "",
        "authority_statement": "Board resolution 7",
    }
    answer = _post(
        shop, path, terms_sha256=sha.group(1), quote_id="0", **kept, **dict.fromkeys(clauses, "yes")
    )
    assert answer.status_code == 422 and "the signer title is missing" in answer.text
    for value in ("Acme Compute GmbH", "Ada Buyer", "Board resolution 7"):
        assert f'value="{value}"' in answer.text
    assert answer.text.count('value="yes" checked') == 4
    # the other way round: every field, one clause left out; it is named, the rest kept
    answer = _post(
        shop,
        path,
        terms_sha256=sha.group(1),
        quote_id="0",
        **{**kept, "signer_title": "CTO"},
        **dict.fromkeys(clauses[1:], "yes"),
    )
    assert answer.status_code == 422 and clauses[0].removeprefix("affirm_") in answer.text
    assert 'value="CTO"' in answer.text and answer.text.count('value="yes" checked') == 3


def test_an_owned_version_is_offered_as_a_download_not_a_buy(shop: TestClient, ws: str) -> None:
    receipt = _buy(shop, ws, "test-priced", "1.0.0")
    assert "$49.99" in receipt and f'href="/w/{ws}/downloads/test-priced/1.0.0"' in receipt
    buy = shop.get("/buy/test-priced/1.0.0").text
    assert f'id="owned-{ws}"' in buy and f'href="/w/{ws}/downloads/test-priced/1.0.0"' in buy
    again = _post(
        shop, "/quotes", workspace=ws, package_id="test-priced", version="1.0.0", kind="purchase"
    )
    assert again.status_code == 409 and "already owns test-priced 1.0.0" in again.text
    assert f'id="owned-{ws}"' in again.text


def _downloads(client: TestClient) -> int:
    store = client.app.state.store  # type: ignore[attr-defined]
    with store.transaction() as s:
        return int(s.scalar(select(func.count()).select_from(Download)) or 0)


def test_a_head_on_a_download_answers_like_the_get_and_logs_nothing(
    shop: TestClient, ws: str
) -> None:
    _buy(shop, ws, "test-priced", "1.0.0")
    page = f"/w/{ws}/downloads/test-priced/1.0.0"
    before = _downloads(shop)
    head = shop.head(page)
    assert head.status_code == 200 and head.content == b""
    assert _downloads(shop) == before  # a HEAD moves no bytes: no download to log
    get = shop.get(page)
    assert get.status_code == 200 and _downloads(shop) == before + 1
    assert head.headers["x-kit-sha256"] == get.headers["x-kit-sha256"]
    assert head.headers["content-length"] == str(len(get.content))
    assert shop.head(f"/w/{ws}/downloads/test-priced/9.9.9").status_code == 404  # same checks
    store = shop.app.state.store  # type: ignore[attr-defined]
    with store.transaction() as s:  # the API's download, served by the same app
        owner = accounts.user_id_by_email(BUYER, session=s)
        who = accounts.principal_for_user(owner, ws, session=s)
        token = accounts.create_token(who, "head-check", session=s).token
    api = f"/api/v1/workspaces/{ws}/downloads/test-priced/1.0.0"
    bearer = {"Authorization": f"Bearer {token}"}
    api_head = shop.head(api, headers=bearer)
    assert api_head.status_code == 200 and api_head.content == b""
    assert api_head.headers["x-kit-sha256"] == get.headers["x-kit-sha256"]
    assert _downloads(shop) == before + 1
    assert shop.get(api, headers=bearer).status_code == 200 and _downloads(shop) == before + 2


def test_maintenance_is_offered_after_the_version_is_bought(shop: TestClient, ws: str) -> None:
    alone = _post(
        shop,
        "/quotes",
        workspace=ws,
        package_id="test-priced",
        version="1.0.0",
        kind="subscription",
    )
    assert alone.status_code == 409 and "add-on to a purchased version" in alone.text
    assert 'value="subscription" checked' in alone.text  # the choice is kept
    assert f'<option value="{ws}" selected>' in alone.text
    assert 'id="price-rules"' in alone.text and "cannot be bought alone" in alone.text
    _buy(shop, ws, "test-priced", "1.0.0")
    receipt = _buy(shop, ws, "test-priced", "1.0.0", "subscription")
    assert "maintenance subscription" in receipt and "$19.00" in receipt


def test_the_token_page_shows_the_token_once_and_a_reload_makes_none(
    shop: TestClient, ws: str
) -> None:
    made = _post(shop, f"/w/{ws}/tokens", name="ci")
    assert made.status_code == 303 and made.headers["location"] == f"/w/{ws}/tokens/new"
    shown = shop.get(made.headers["location"]).text
    assert re.search(r'id="token" class="wrap">sk_', shown)
    reload = shop.get(made.headers["location"]).text
    assert "sk_" not in reload and 'id="token-gone"' in reload
    assert shop.get(f"/w/{ws}").text.count("/revoke") == 1  # one token, not two


def test_cancelling_maintenance_asks_first(shop: TestClient, ws: str) -> None:
    _buy(shop, ws, "test-priced", "1.0.0")
    _buy(shop, ws, "test-priced", "1.0.0", "subscription")
    workspace = shop.get(f"/w/{ws}").text
    link = re.search(rf'href="(/w/{ws}/entitlements/\d+/cancel)"', workspace)
    assert link, workspace
    unconfirmed = _post(shop, link.group(1))
    assert unconfirmed.status_code == 303 and unconfirmed.headers["location"] == link.group(1)
    assert "cancelled at period end" not in shop.get(f"/w/{ws}").text
    ask = shop.get(link.group(1)).text
    assert "stays the workspace" in ask and 'name="confirm" value="yes"' in ask
    assert _post(shop, link.group(1), confirm="yes").status_code == 303
    assert "cancelled at period end" in shop.get(f"/w/{ws}").text


def test_a_new_member_is_a_member_unless_chosen(shop: TestClient, ws: str) -> None:
    page = shop.get(f"/w/{ws}").text
    assert '<option value="member" selected>' in page and page.count(" selected>") == 1
    refused = _post(shop, f"/w/{ws}/members", email="nobody@example.com", role="member")
    assert refused.status_code == 404 and 'value="nobody@example.com"' in refused.text


def test_order_history_lists_amounts_and_receipts(shop: TestClient, ws: str) -> None:
    _buy(shop, ws, "test-priced", "1.0.0")
    _buy(shop, ws, "test-priced", "1.0.0", "subscription")
    orders = shop.get(f"/w/{ws}/orders").text
    assert "$49.99" in orders and "$19.00" in orders
    receipts = re.findall(rf'href="(/w/{ws}/orders/\d+)"', orders)
    assert len(receipts) == 2
    receipt = shop.get(receipts[-1]).text
    assert "Receipt: order" in receipt and "$49.99" in receipt and "sandbox" in receipt
    assert f'href="/w/{ws}/orders"' in shop.get(f"/w/{ws}").text


def test_test_mode_is_on_every_store_page_and_its_confirm_button(shop: TestClient, ws: str) -> None:
    for path in ("/signin", "/signup", "/account", f"/w/{ws}", "/buy/test-priced/1.0.0"):
        assert 'id="test-mode"' in shop.get(path).text, path
    quote = shop.get(_quote(shop, ws, "test-priced", "1.0.0", "purchase")).text
    assert "Confirm test payment of $49.99" in quote and "Confirm and pay" not in quote


def test_a_placeholder_kit_says_it_cannot_be_deployed(shop: TestClient, ws: str) -> None:
    buy = shop.get("/buy/kimi-k3-8xb300/1.0.0").text
    assert 'id="placeholder"' in buy and "cannot be deployed" in buy
    quote = shop.get(_quote(shop, ws, "kimi-k3-8xb300", "1.0.0", "purchase")).text
    assert "cannot be deployed" in quote
    assert "cannot be deployed" not in shop.get("/buy/test-priced/1.0.0").text


def test_unknown_pages_and_methods_answer_in_the_sites_style(shop: TestClient) -> None:
    missing = shop.get("/no/such/page")
    assert missing.status_code == 404 and missing.headers["content-type"].startswith("text/html")
    assert "There is no page at this address" in missing.text
    assert 'href="/static/catalog.css"' in missing.text
    wrong = shop.put("/signin", headers={"x-csrf-token": _csrf(shop.get("/signin").text)})
    assert wrong.status_code == 405 and "text/html" in wrong.headers["content-type"]
    assert "GET" in wrong.headers["allow"]
    api = shop.get("/api/v1/no-such-thing")
    assert api.status_code == 404
    assert api.headers["content-type"] == "application/problem+json"
    assert api.json()["status"] == 404


def test_head_answers_every_get_without_a_body(shop: TestClient) -> None:
    for path in (
        "/",
        "/packages/test-priced/1.0.0",
        "/signin",
        "/account",
        "/w/shopper/orders",
        "/static/catalog.css",
        "/feed.json?publisher=servekit%20tests",
        "/api/v1/openapi.json",
        "/keys",
        "/keys/trust.toml",
        "/packages/test-priced/1.0.0/files/licenses/PACKAGE_LICENSE.md",
    ):
        got, head = shop.get(path), shop.head(path)
        assert got.status_code == head.status_code == 200, path
        assert head.content == b"" and head.headers["content-type"] == got.headers["content-type"]
        if path in (
            "/",
            "/feed.json?publisher=servekit%20tests",
            "/static/catalog.css",
            "/api/v1/openapi.json",
        ):  # these embed a per-response CSRF token
            assert head.headers["content-length"] == got.headers["content-length"], path


def test_refused_choices_and_a_refused_confirm_come_back_as_pages(
    shop: TestClient, ws: str
) -> None:
    role = _post(shop, f"/w/{ws}/members", email=BUYER, role="emperor")
    assert role.status_code == 422 and "role 'emperor' is not one of" in unescape(role.text)
    kind = _post(
        shop, "/quotes", workspace=ws, package_id="test-priced", version="1.0.0", kind="gift"
    )
    assert kind.status_code == 422 and "the kind 'gift' is not one of" in unescape(kind.text)
    missing = _post(shop, "/signup", email="x@example.com", password="correct horse")
    assert missing.status_code == 422 and "text/html" in missing.headers["content-type"]
    assert "workspace" in missing.text
    # a second tab confirms a quote for a version the first tab bought meanwhile
    first = shop.get(_quote(shop, ws, "test-priced", "1.0.0", "purchase")).text
    _buy(shop, ws, "test-priced", "1.0.0")
    action = re.search(r'action="(/w/[^"]+/confirm)"', first)
    assert action
    late = _post(shop, action.group(1), idempotency_key="second-tab")
    assert late.status_code == 409 and "already owns" in late.text
    assert 'value="second-tab"' in late.text  # the form again, with its key


def test_sign_out_has_a_page_for_the_catalogs_link(shop: TestClient, home: Path) -> None:
    assert 'id="signout-form"' in shop.get("/signout").text
    with TestClient(create_app(Settings(home=home)), base_url=BASE) as visitor:
        page = visitor.get("/signout").text
        assert "You are not signed in" in page and 'href="/signin"' in page
        catalog = visitor.get("/").text
        for link in ('href="/signin"', 'href="/signup"', 'href="/account"', 'href="/signout"'):
            assert link in catalog


def test_every_page_leading_to_a_download_shows_the_store_key_id(
    shop: TestClient, ws: str, home: Path
) -> None:
    key_id = load_public_key(home / "keys" / PUBLIC_KEY_FILE).key_id
    quote = shop.get(_quote(shop, ws, "test-priced", "1.0.0", "purchase")).text
    receipt = _buy(shop, ws, "test-priced", "1.0.0")
    pages = {
        "quote": quote,
        "receipt": receipt,
        "workspace": shop.get(f"/w/{ws}").text,
        "buy (owned)": shop.get("/buy/test-priced/1.0.0").text,
    }
    for name, html in pages.items():
        key = re.search(r'id="signing-key".*?</section>', html, re.S)
        assert key, name
        block = unescape(key.group(0))
        assert f'<code class="key-id">{key_id}</code>' in block, name
        assert 'href="/keys"' in block and "another way" in block, name
        assert f"servekit trust fetch {BASE} -o trust.toml" in block, name
        assert "--trust trust.toml" in block and "PUBLISHER.pub" not in block, name


def test_the_commands_on_a_version_page_name_the_file_the_download_saves(
    shop: TestClient, ws: str
) -> None:
    """A buyer pastes the commands after the download: they name the attachment's file and
    expect the version the page sold; the workspace page, about several, keeps a placeholder."""
    quote = shop.get(_quote(shop, ws, "test-priced", "1.0.0", "purchase")).text
    receipt = _buy(shop, ws, "test-priced", "1.0.0")
    saved = shop.get(f"/w/{ws}/downloads/test-priced/1.0.0").headers["content-disposition"]
    name = re.search(r'filename="?([^";]+)', saved)
    assert name and name.group(1) == "test-priced-1.0.0.kit.tar.gz"
    for html in (quote, receipt, shop.get("/buy/test-priced/1.0.0").text):
        block = unescape(re.search(r'id="signing-key".*?</section>', html, re.S).group(0))  # type: ignore[union-attr]
        expect = "--trust trust.toml --expect test-priced@1.0.0"
        assert f"servekit verify kit {name.group(1)} {expect}" in block
        assert f"servekit kit unpack {name.group(1)} kit/ {expect}" in block
        assert "KIT.tar.gz" not in block
    assert "<code>servekit verify kit KIT.tar.gz --trust trust.toml</code>" in unescape(
        shop.get(f"/w/{ws}").text
    )


def test_a_licensed_version_maintenance_offers_is_signed_for_then_downloadable(
    shop: TestClient, ws: str, home: Path, tmp_path: Path
) -> None:
    pkg = f"gated-{ws}"[:60].rstrip("-")
    v1 = make_variant(tmp_path / "v1", pkg_id=pkg, version="1.0.0", usd=100, maint=20)
    v2 = make_variant(
        tmp_path / "v2", pkg_id=pkg, version="2.0.0", usd=100, maint=20, tier="enterprise"
    )
    store_publish([v1], home)
    _buy(shop, ws, pkg, "1.0.0")
    _buy(shop, ws, pkg, "1.0.0", "subscription")
    store_publish([v2], home)
    page = shop.get(f"/w/{ws}").text
    offered = re.search(r'<p class="sign-to-receive">(.*?)</p>', page, re.S)
    assert offered and f"{pkg} 2.0.0: sign to receive" in offered.group(1), page
    licence = f"/w/{ws}/licence/{pkg}/2.0.0"
    assert f'href="{licence}"' in offered.group(1)
    assert f'href="/w/{ws}/downloads/{pkg}/2.0.0"' not in page
    assert shop.get(f"/w/{ws}/downloads/{pkg}/2.0.0").status_code == 404
    form = shop.get(licence).text
    sha = re.search(r'name="terms_sha256" value="([0-9a-f]{64})"', form)
    clauses = re.findall(r'name="(affirm_[a-z_]+)"', form)
    assert sha and clauses
    signed = _post(
        shop,
        licence,
        terms_sha256=sha.group(1),
        quote_id="0",
        licensed_entity="Acme Compute GmbH",
        signer_name="Ada Buyer",
        signer_title="CTO",
        authority_statement="Board resolution 7",
        **dict.fromkeys(clauses, "yes"),
    )
    assert signed.status_code == 303 and signed.headers["location"] == f"/w/{ws}"
    page = shop.get(f"/w/{ws}").text
    assert 'class="sign-to-receive"' not in page
    assert f'href="/w/{ws}/downloads/{pkg}/2.0.0"' in page
    assert shop.get(f"/w/{ws}/downloads/{pkg}/2.0.0").status_code == 200
