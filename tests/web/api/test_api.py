"""The JSON API on both databases: the buyer's path, problem+json, and workspace isolation."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from tests.web.api.world import World, auth, buy

# Routes outside any workspace; every other route must sit under /workspaces/{workspace}.
PUBLIC = {
    ("GET", "/api/v1/catalog"),
    ("GET", "/api/v1/catalog/{package_id}/{version}"),
    ("POST", "/api/v1/sessions"),
    ("GET", "/api/v1/me"),
    ("POST", "/api/v1/webhooks/stripe"),
    ("GET", "/api/v1/keys"),  # the store's signing keys: public by design
}

RESOURCE_IDS = {"quote_id", "order_id", "entitlement_id", "token_id"}

# The body each workspace route is called with in the isolation test; a new route without an
# entry here fails the test, so it cannot skip the isolation check.
BODIES: dict[tuple[str, str], Any] = {
    ("POST", "/api/v1/workspaces/{workspace}/quotes"): {
        "package_id": "test-priced",
        "version": "1.0.0",
    },
    ("GET", "/api/v1/workspaces/{workspace}/quotes/{quote_id}"): None,
    ("GET", "/api/v1/workspaces/{workspace}/licence-terms/{package_id}/{version}"): None,
    ("POST", "/api/v1/workspaces/{workspace}/licence-signatures"): {
        "package_id": "kimi-k3-8xb300",
        "version": "1.0.0",
        "licensed_entity": "x",
        "signer_name": "x",
        "signer_title": "x",
        "authority_statement": "x",
        "affirmations": {},
        "terms_sha256": "0" * 64,
    },
    ("POST", "/api/v1/workspaces/{workspace}/orders"): "quote",
    ("GET", "/api/v1/workspaces/{workspace}/orders/{order_id}"): None,
    ("GET", "/api/v1/workspaces/{workspace}/entitlements"): None,
    ("POST", "/api/v1/workspaces/{workspace}/entitlements/{entitlement_id}/cancel"): None,
    ("GET", "/api/v1/workspaces/{workspace}/downloads/{package_id}/{version}"): None,
    ("GET", "/api/v1/workspaces/{workspace}/tokens"): None,
    ("POST", "/api/v1/workspaces/{workspace}/tokens"): {"name": "probe"},
    ("DELETE", "/api/v1/workspaces/{workspace}/tokens/{token_id}"): None,
}


def _routes(world: World) -> list[tuple[str, str]]:
    doc = world.client.get("/api/v1/openapi.json").json()
    return sorted((m.upper(), p) for p, ops in doc["paths"].items() for m in ops)


def _call(world: World, method: str, path: str, ws: str, token: str) -> Any:
    url = path.replace("{workspace}", ws)
    url = re.sub(r"\{(\w+)\}", lambda m: str(world.ids[m.group(1)]), url)
    body = BODIES[(method, path)]
    if body == "quote":
        body = {"quote_id": world.ids["quote_id"]}
    headers = {**auth(token), "Idempotency-Key": "isolation-probe"}
    return world.client.request(method, url, json=body, headers=headers)


def test_every_route_is_public_or_inside_a_workspace(world: World) -> None:
    routes = _routes(world)
    assert len(routes) == len(PUBLIC) + len(BODIES)
    for route in routes:
        assert route in PUBLIC or route in BODIES, f"add {route} to the isolation test"


def test_no_route_lets_another_workspace_in(world: World) -> None:
    """Bob, with a session or an API token of his own, probes Alice's workspace: 404 only."""
    for method, path in (r for r in _routes(world) if r not in PUBLIC):
        r = _call(world, method, path, "alpha", world.bob)
        assert r.status_code == 404, (method, path, r.status_code, r.text)
        assert r.headers["content-type"] == "application/problem+json"
        assert "alpha" not in r.json()["detail"] or "no workspace alpha" in r.json()["detail"]


def _names_alices_holding(method: str, path: str) -> bool:
    """Routes naming one of Alice's resources (package ids name the public catalog)."""
    ids = set(re.findall(r"\{(\w+)\}", path))
    return bool(ids & RESOURCE_IDS) or "/downloads/" in path or BODIES[(method, path)] == "quote"


def test_alice_ids_inside_bobs_workspace_are_not_found(world: World) -> None:
    probed = [r for r in _routes(world) if r not in PUBLIC and _names_alices_holding(*r)]
    assert len(probed) == 6
    for method, path in probed:
        r = _call(world, method, path, "bravo", world.bob)
        assert r.status_code == 404, (method, path, r.status_code, r.text)


def test_an_api_token_is_bound_to_its_workspace(world: World) -> None:
    r = world.client.get(
        "/api/v1/workspaces/bravo/entitlements", headers=auth(world.alice_api_token)
    )
    assert r.status_code == 404
    assert (
        world.client.get("/api/v1/me", headers=auth(world.alice_api_token)).json()["workspace"]
        == "alpha"
    )


def test_the_holder_downloads_the_exact_kit(world: World) -> None:
    r = world.client.get(
        "/api/v1/workspaces/alpha/downloads/kimi-k3-8xb300/1.0.0",
        headers=auth(world.alice_api_token),
    )
    assert r.status_code == 200 and r.headers["content-type"] == "application/gzip"
    assert hashlib.sha256(r.content).hexdigest() == r.headers["x-kit-sha256"]


def test_problem_json_has_a_stable_type_per_class(world: World) -> None:
    r = world.client.post(
        "/api/v1/workspaces/alpha/quotes",
        json={"package_id": "test-priced", "version": "1.0.0"},
        headers=auth(world.alice),
    )
    assert r.status_code == 409
    assert r.json()["type"] == "urn:servekit:problem:already-owned"
    assert r.headers["content-type"] == "application/problem+json"
    unauth = world.client.get("/api/v1/workspaces/alpha/entitlements")
    assert (
        unauth.status_code == 401 and unauth.json()["type"] == "urn:servekit:problem:authentication"
    )


def test_a_retried_confirm_returns_the_same_order(world: World) -> None:
    first = buy(world.client, world.bob, "bravo", "test-free", "1.0.0", "bravo-free-01")
    again = world.client.post(
        "/api/v1/workspaces/bravo/orders",
        json={"quote_id": first["quote"]["id"]},
        headers={**auth(world.bob), "Idempotency-Key": "bravo-free-01"},
    )
    assert again.status_code == 201 and again.json() == first["order"]
    other = world.client.post(
        "/api/v1/workspaces/bravo/orders",
        json={"quote_id": world.ids["quote_id"] + 1000},
        headers={**auth(world.bob), "Idempotency-Key": "bravo-free-01"},
    )
    assert other.status_code == 422
    assert other.json()["type"] == "urn:servekit:problem:idempotency-conflict"


def test_enterprise_confirm_without_signature_is_403(world: World) -> None:
    q = world.client.post(
        "/api/v1/workspaces/bravo/quotes",
        json={"package_id": "kimi-k3-8xb300", "version": "1.0.0"},
        headers=auth(world.bob),
    )
    r = world.client.post(
        "/api/v1/workspaces/bravo/orders",
        json={"quote_id": q.json()["id"]},
        headers={**auth(world.bob), "Idempotency-Key": "bravo-k3-0001"},
    )
    assert r.status_code == 403 and r.json()["type"] == "urn:servekit:problem:licence-required"
