"""schemathesis against the OpenAPI document the web app serves at /api/v1/openapi.json,
on SQLite and on PostgreSQL (which refuses NUL in text: the cases that found 500s):
generated requests, signed in as a buyer who holds a version, never get a 5xx.
SERVEKIT_TEST_FUZZ_EXAMPLES (default 15 per database, 30 in all) sets the examples per
operation."""

from __future__ import annotations

import os
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error

from servekit.config import Settings
from servekit.store.operator import add_user, add_workspace
from servekit.web.app import create_app
from tests.store.conftest import Backend, make_variant
from tests.web.server import store_publish


@pytest.fixture(scope="module")
def served(backend: Backend, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, str]:
    root = tmp_path_factory.mktemp("fuzz")
    home = root / "home"
    url = backend.new_url()
    pkg = make_variant(root / "pkg", pkg_id="test-priced", version="1.0.0", usd=49.99, maint=19)
    store_publish([pkg], home, url)
    config = Settings(home=home, database_url=url)
    add_user(config, "fuzz@example.com", "correct horse")
    add_workspace(config, "alpha", "Alpha", "fuzz@example.com")
    app = create_app(config)
    client = TestClient(app)
    token = client.post(
        "/api/v1/sessions", json={"email": "fuzz@example.com", "password": "correct horse"}
    ).json()["token"]
    auth = {"Authorization": f"Bearer {token}"}
    quote = client.post(
        "/api/v1/workspaces/alpha/quotes",
        json={"package_id": "test-priced", "version": "1.0.0"},
        headers=auth,
    )
    order = client.post(
        "/api/v1/workspaces/alpha/orders",
        json={"quote_id": quote.json()["id"]},
        headers={**auth, "Idempotency-Key": "fuzz-order-1"},
    )
    assert order.status_code == 201, order.text
    return app, token


def test_no_server_error(served: tuple[Any, str]) -> None:
    app, token = served
    schema = schemathesis.openapi.from_asgi("/api/v1/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 15
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=int(os.environ.get("SERVEKIT_TEST_FUZZ_EXAMPLES", "15")),
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        def fuzz(case: schemathesis.Case) -> None:
            if case.path_parameters and "workspace" in case.path_parameters:
                case.path_parameters["workspace"] = "alpha"  # reach routes behind membership
            case.call_and_validate(
                headers={"Authorization": f"Bearer {token}"}, checks=[not_a_server_error]
            )

        fuzz()


def test_the_document_is_served(served: tuple[Any, str]) -> None:
    doc = TestClient(served[0]).get("/api/v1/openapi.json").json()
    assert len(doc["paths"]) >= 15
