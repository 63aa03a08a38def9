"""``/keys``, ``/keys/trust.toml`` and ``/api/v1/keys``: the store's signing keys for buyers.

Thin: each reads :func:`servekit.web.keys.store_key` and renders it as a page, a trust
file or JSON. docs/store.md ("The store's signing keys") says how a buyer checks them.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, ConfigDict

from servekit.web.api.problems import ProblemRoute, responses
from servekit.web.api.routes import PREFIX
from servekit.web.contexts import KeysPage
from servekit.web.deps import StoreDep
from servekit.web.keys import store_key, trust_file
from servekit.web.pages import render_page

router = APIRouter()
api = APIRouter(prefix=PREFIX, route_class=ProblemRoute, tags=["keys"])
NO_CACHE = {"Cache-Control": "no-cache"}


def _origin(request: Request) -> str:
    return str(request.base_url).rstrip("/")


@router.get("/keys", response_class=HTMLResponse)
def keys_page(request: Request, store: StoreDep) -> HTMLResponse:
    """The key ids, what each signs for, the PEM, and how to fetch the trust file."""
    body = render_page(KeysPage(keys=[store_key(store)], origin=_origin(request)))
    return HTMLResponse(body, headers=NO_CACHE)


@router.get("/keys/trust.toml")
def trust_toml(request: Request, store: StoreDep) -> Response:
    """The trust file: the store key with its publisher grants, its PEM inline."""
    body = trust_file(store, _origin(request))
    return Response(
        body,
        media_type="application/toml",
        headers={**NO_CACHE, "Content-Disposition": 'attachment; filename="trust.toml"'},
    )


class Grant(BaseModel):
    model_config = ConfigDict(frozen=True)
    publisher: str
    packages: list[str]


class Key(BaseModel):
    model_config = ConfigDict(frozen=True)
    key_id: str
    public_key: str
    grants: list[Grant]


class Keys(BaseModel):
    model_config = ConfigDict(frozen=True)
    keys: list[Key]
    trust_file: str


@api.get("/keys", responses=responses(404))  # 404: the store has no signing key yet
def list_keys(store: StoreDep) -> Keys:
    """The store's signing keys: key id, PEM, and the publishers and packages each signs."""
    key = store_key(store)
    grants = [Grant(publisher=s.publisher, packages=list(s.packages)) for s in key.scopes]
    return Keys(
        keys=[Key(key_id=key.key_id, public_key=key.pem.decode("ascii"), grants=grants)],
        trust_file="/keys/trust.toml",
    )
