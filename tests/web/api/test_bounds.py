"""Bounds before the database, through the JSON API on SQLite and PostgreSQL: control
characters and over-long text are a problem+json 422 naming the field (PostgreSQL answered
500 to a NUL), a body over the limit is a 413, every error response carries the security
headers, and the OpenAPI document lists each route's error responses."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from servekit.store.models import SignInFailure
from servekit.web.api.problems import MEDIA_TYPE
from servekit.web.security import MAX_BODY_BYTES
from tests.web.api.world import World, auth

TOKENS = "/api/v1/workspaces/alpha/tokens"


def _invalid(answer: object, field: str) -> None:
    assert getattr(answer, "status_code", None) == 422, getattr(answer, "text", answer)
    r = answer  # an httpx.Response
    assert r.headers["content-type"] == MEDIA_TYPE  # type: ignore[attr-defined]
    assert r.headers["x-content-type-options"] == "nosniff"  # type: ignore[attr-defined]
    fields = {e["loc"][-1] for e in r.json()["errors"]}  # type: ignore[attr-defined]
    assert field in fields, fields


@pytest.mark.parametrize(
    "name",
    ["\x00", "ci\x00token", "bell\x07", "new\nline", "esc\x1b[31m", "c1\x9b", "x" * 201],
)
def test_a_token_name_with_a_control_character_or_too_long_is_a_422(
    world: World, name: str
) -> None:
    _invalid(world.client.post(TOKENS, json={"name": name}, headers=auth(world.alice)), "name")


def test_a_long_sign_in_is_refused_before_it_is_counted_or_stored(world: World) -> None:
    store = world.client.app.state.store  # type: ignore[attr-defined]
    with store.transaction() as s:
        before = s.scalar(select(func.count(SignInFailure.id)))
    huge = world.client.post(
        "/api/v1/sessions", json={"email": "a" * 10_000 + "@x.test", "password": "p" * 300}
    )
    _invalid(huge, "email")
    nul = world.client.post("/api/v1/sessions", json={"email": "a\x00@x.test", "password": "p"})
    _invalid(nul, "email")
    with store.transaction() as s:
        assert s.scalar(select(func.count(SignInFailure.id))) == before


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"package_id": "test-priced", "version": "1.0.0", "kind": "lease"}, "kind"),
        ({"package_id": "test\x00priced", "version": "1.0.0"}, "package_id"),
        ({"package_id": "test-priced", "version": "1.0.0\x00"}, "version"),
    ],
)
def test_unknown_enum_values_and_bad_ids_in_a_quote_are_a_422(
    world: World, body: dict[str, str], field: str
) -> None:
    answer = world.client.post(
        "/api/v1/workspaces/alpha/quotes", json=body, headers=auth(world.alice)
    )
    _invalid(answer, field)


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/workspaces/al%00pha/tokens",
        "/api/v1/catalog/test%00priced/1.0.0",
        "/api/v1/workspaces/alpha/downloads/test-priced/1.0%00",
    ],
)
def test_a_nul_in_a_path_is_refused_before_any_query(world: World, path: str) -> None:
    answer = world.client.get(path, headers=auth(world.alice))
    assert answer.status_code in {404, 422}, answer.text
    assert "content-security-policy" in answer.headers


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("authority_statement", "signed\x00by the board"),
        ("licensed_entity", "E" * 4001),
        ("signer_name", "Ada\nLovelace"),
        ("terms_sha256", "A" * 64),
    ],
)
def test_a_licence_signature_field_out_of_bounds_is_a_422(
    world: World, field: str, value: str
) -> None:
    body = {
        "package_id": "kimi-k3-8xb300",
        "version": "1.0.0",
        "licensed_entity": "Alice Industries Ltd",
        "signer_name": "Alice Example",
        "signer_title": "CTO",
        "authority_statement": "Director,\nauthorised to sign alone.",  # newlines allowed
        "affirmations": {},
        "terms_sha256": "0" * 64,
        field: value,
    }
    answer = world.client.post(
        "/api/v1/workspaces/alpha/licence-signatures", json=body, headers=auth(world.alice)
    )
    _invalid(answer, field)


def test_an_idempotency_key_with_a_control_character_is_a_422(world: World) -> None:
    answer = world.client.post(
        "/api/v1/workspaces/alpha/orders",
        json={"quote_id": 1},
        headers={**auth(world.alice), "Idempotency-Key": "key with spaces"},
    )
    _invalid(answer, "idempotency-key")


def _chunks(total: int) -> Iterator[bytes]:
    sent = 0
    while sent < total:
        yield b" " * 65536
        sent += 65536


def test_a_body_over_the_limit_is_a_413(world: World) -> None:
    declared = world.client.post(
        "/api/v1/sessions",
        content=b"{" + b" " * MAX_BODY_BYTES + b"}",
        headers={"content-type": "application/json"},
    )
    assert declared.status_code == 413 and "content-security-policy" in declared.headers
    streamed = world.client.post(
        "/api/v1/sessions",
        content=_chunks(2 * MAX_BODY_BYTES),  # no Content-Length: chunked
        headers={"content-type": "application/json"},
    )
    assert streamed.status_code == 413, streamed.text


def test_the_openapi_document_lists_each_routes_error_responses(world: World) -> None:
    doc = world.client.get("/api/v1/openapi.json").json()
    problem = {"$ref": "#/components/schemas/Problem"}
    for path, operations in doc["paths"].items():
        for method, operation in operations.items():
            codes = set(operation["responses"])
            assert {"422", "500"} <= codes, (method, path, codes)
            content = operation["responses"]["422"]["content"]
            assert content[MEDIA_TYPE]["schema"] == problem, (method, path)
            if "{workspace}" in path:
                assert {"401", "404"} <= codes, (method, path, codes)
    assert {"401", "413", "429"} <= set(doc["paths"]["/api/v1/sessions"]["post"]["responses"])
    orders = doc["paths"]["/api/v1/workspaces/{workspace}/orders"]["post"]["responses"]
    assert {"402", "403", "409", "410"} <= set(orders)


def test_a_server_error_carries_the_security_headers(world: World) -> None:
    app = world.client.app

    def boom() -> None:
        raise RuntimeError("a bug")

    app.add_api_route("/api/v1/test-only-boom", boom)  # type: ignore[attr-defined]
    app.middleware_stack = None  # type: ignore[attr-defined]  # rebuilt with the new route
    with TestClient(app, raise_server_exceptions=False) as client:  # type: ignore[arg-type]
        answer = client.get("/api/v1/test-only-boom")
    assert answer.status_code == 500 and answer.headers["content-type"] == MEDIA_TYPE
    assert "a bug" not in answer.text  # the trace stays in the log
    assert answer.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
