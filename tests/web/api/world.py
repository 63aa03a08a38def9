"""Two workspaces with purchases, built through the API the way a buyer would."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi.testclient import TestClient

from servekit.store import accounts
from servekit.store.db import Store
from servekit.store.providers import SandboxProvider
from servekit.web.api import ApiContext, create_api_app
from tests.store.conftest import Packages, publish_one

Client = Any  # an httpx.Client: TestClient in-process, or a real one against uvicorn
PASSWORD = "correct horse battery"
WEBHOOK_SECRET = "whsec_api_test"


@dataclass
class World:
    client: TestClient
    alice: str  # session tokens
    bob: str
    alice_api_token: str
    ids: dict[str, Any]


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _user(store: Store, email: str, slug: str) -> None:
    with store.transaction() as s:
        uid = accounts.create_user(email, PASSWORD, session=s)
        accounts.create_workspace(slug, slug.title(), owner_id=uid, session=s)


def _sign_in(client: TestClient, email: str) -> str:
    r = client.post("/api/v1/sessions", json={"email": email, "password": PASSWORD})
    assert r.status_code == 201, r.text
    return str(r.json()["token"])


def buy(
    client: Client,
    token: str,
    ws: str,
    pkg: str,
    version: str | None,
    key: str,
    kind: str = "purchase",
) -> dict[str, Any]:
    q = client.post(
        f"/api/v1/workspaces/{ws}/quotes",
        json={"package_id": pkg, "version": version, "kind": kind},
        headers=auth(token),
    )
    assert q.status_code == 201, q.text
    r = client.post(
        f"/api/v1/workspaces/{ws}/orders",
        json={"quote_id": q.json()["id"]},
        headers={**auth(token), "Idempotency-Key": key},
    )
    assert r.status_code == 201, r.text
    return {"quote": q.json(), "order": r.json()}


def sign(client: Client, token: str, ws: str, pkg: str, version: str) -> dict[str, Any]:
    terms = client.get(
        f"/api/v1/workspaces/{ws}/licence-terms/{pkg}/{version}", headers=auth(token)
    )
    assert terms.status_code == 200, terms.text
    body = {
        "package_id": pkg,
        "version": version,
        "licensed_entity": "Alice Industries Ltd",
        "signer_name": "Alice Example",
        "signer_title": "Chief Technology Officer",
        "authority_statement": "Director registered with authority to sign alone.",
        "affirmations": {clause: True for clause in terms.json()["clauses"]},
        "terms_sha256": terms.json()["terms_sha256"],
    }
    r = client.post(f"/api/v1/workspaces/{ws}/licence-signatures", json=body, headers=auth(token))
    assert r.status_code == 201, r.text
    return dict(r.json())


def make_world(store: Store, packages: Packages, key: Any) -> World:
    with store.transaction() as s:
        for path in (packages.free, packages.priced, packages.enterprise):
            publish_one(path, key, store.kits_dir, s)
    _user(store, "alice@example.com", "alpha")
    _user(store, "bob@example.com", "bravo")
    app = create_api_app(
        ApiContext(store=store, provider=SandboxProvider(), webhook_secret=WEBHOOK_SECRET)
    )
    client = TestClient(app)
    alice, bob = _sign_in(client, "alice@example.com"), _sign_in(client, "bob@example.com")
    priced = buy(client, alice, "alpha", "test-priced", "1.0.0", "alpha-priced-1")
    sig = sign(client, alice, "alpha", "kimi-k3-8xb300", "1.0.0")
    k3 = buy(client, alice, "alpha", "kimi-k3-8xb300", "1.0.0", "alpha-k3-0001")
    sub = buy(client, alice, "alpha", "test-priced", None, "alpha-sub-0001", kind="subscription")
    tok = client.post("/api/v1/workspaces/alpha/tokens", json={"name": "ci"}, headers=auth(alice))
    assert tok.status_code == 201, tok.text
    ids = {
        "quote_id": priced["quote"]["id"],
        "order_id": k3["order"]["id"],
        "entitlement_id": sub["order"]["entitlement_id"],
        "token_id": tok.json()["id"],
        "package_id": "test-priced",
        "version": "1.0.0",
        "signature_id": sig["id"],
    }
    return World(client, alice, bob, tok.json()["token"], ids)
