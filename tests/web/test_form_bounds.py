"""Bounds before the database through the store's forms, on SQLite and PostgreSQL: a NUL,
a control character, an over-long value or an unknown choice is answered with a page
that names the field (never a 500, which PostgreSQL's NUL refusal used to cause)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from servekit.config import Settings
from servekit.web.app import create_app
from tests.store.conftest import Backend, backend, make_variant
from tests.web.server import store_publish

__all__ = ["backend"]


@pytest.fixture(scope="module")
def client(backend: Backend, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    root = tmp_path_factory.mktemp("forms")
    url = backend.new_url()
    pkg = make_variant(root / "pkg", pkg_id="test-forms", version="1.0.0", usd=5)
    store_publish([pkg], root / "home", url)
    app = create_app(Settings(home=root / "home", database_url=url))
    with TestClient(app, base_url="https://store.test") as c:
        _post(c, "/signup", email="forms@acme.test", password="ink and paper", workspace="forms")
        _post(c, "/signin", email="forms@acme.test", password="ink and paper")
        yield c
    app.state.store.engine.dispose()


def _post(client: TestClient, path: str, **data: str) -> object:
    page = client.get("/signup").text
    token = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert token
    return client.post(path, data={**data, "csrf_token": token.group(1)})


@pytest.mark.parametrize(
    ("path", "data", "said"),
    [
        ("/w/forms/tokens", {"name": "ci\x00"}, "the token name contains a control character"),
        ("/w/forms/tokens", {"name": "x" * 201}, "the token name is 201 characters long"),
        ("/w/forms/members", {"email": "a\x00@b.test", "role": "member"}, "the email contains"),
        ("/w/forms/members", {"email": "a@b.test", "role": "emperor"}, "the role 'emperor'"),
        (
            "/quotes",
            {"workspace": "forms", "package_id": "test-forms", "version": "1", "kind": "lease"},
            "the kind 'lease' is not one of: purchase, subscription",
        ),
        (
            "/quotes",
            {"workspace": "forms\x00", "package_id": "p", "version": "1", "kind": "purchase"},
            "the workspace contains a control character",
        ),
        (
            "/signin",
            {"email": "x" * 300 + "@b.test", "password": "whatever it is"},
            "the email is 307 characters long",
        ),
        ("/signin", {"email": "a@b.test", "password": "p" * 257}, "the password is 257"),
        ("/w/forms/quotes/1/confirm", {"idempotency_key": "k\x00" * 5}, "idempotency key"),
    ],
)
def test_a_bad_form_value_is_named_never_a_500(
    client: TestClient, path: str, data: dict[str, str], said: str
) -> None:
    answer = _post(client, path, **data)
    status, text = getattr(answer, "status_code", 0), getattr(answer, "text", "")
    assert status == 422, text
    assert said in text.replace("&#39;", "'"), text


def test_a_control_character_in_a_page_path_is_a_404(client: TestClient) -> None:
    for path in ("/w/for%00ms", "/buy/test%00forms/1.0.0", "/w/forms/downloads/a/%1b"):
        answer = client.get(path)
        assert answer.status_code == 404, (path, answer.text)
        assert answer.headers["x-frame-options"] == "DENY"


def test_a_missing_form_field_is_an_html_422(client: TestClient) -> None:
    answer = _post(client, "/w/forms/tokens")
    assert answer.status_code == 422  # type: ignore[attr-defined]
    assert answer.headers["content-type"].startswith("text/html")  # type: ignore[attr-defined]
    assert "name: Field required" in answer.text  # type: ignore[attr-defined]
