"""The routes of ``/api/v1``: each parses, calls one store function in one transaction, renders.

Every route under ``/workspaces/{workspace}`` answers 404 to anyone who is not a member of
that workspace, and looks resources up inside it, so nobody can fetch (or learn of) another
workspace's quotes, orders, entitlements, tokens or downloads. A test enumerates these
routes from the OpenAPI document.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Request
from fastapi import Path as PathParam
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from servekit.store import accounts, checkout, entitlements, licences, publishing, webhooks
from servekit.store.models import OrderKind
from servekit.store.providers import WEBHOOK_PROVIDERS, ProviderName
from servekit.store.results import (
    EntitlementInfo,
    KitDownload,
    LicenceTerms,
    NewToken,
    OrderInfo,
    QuoteInfo,
    SignatureInfo,
    TokenInfo,
    VersionInfo,
)
from servekit.store.webhooks import WebhookResult
from servekit.web import fields, signin
from servekit.web.api.problems import ProblemRoute, responses
from servekit.web.deps import BearerDep, ContextDep, HeadDep, ProviderDep, StoreDep
from servekit.web.licence import LicenceSignatureRequest

PREFIX = "/api/v1"
# Ids fit the databases' BIGINT and JSON's safe integers (RFC 8785 canonical JSON, which
# checkout hashes requests with, refuses larger): a larger id is a 422, never a 500.
MAX_ID = 2**53 - 1
RowId = Annotated[int, PathParam(ge=1, le=MAX_ID)]
# path parameters have the shapes the store can hold: anything else is a 422 before a query
PackageIdPath = Annotated[str, PathParam(pattern=fields.PACKAGE_ID_PATTERN)]
VersionPath = Annotated[str, PathParam(pattern=fields.VERSION_PATTERN)]
WorkspacePath = Annotated[str, PathParam(pattern=fields.SLUG_PATTERN)]
IdempotencyKey = Annotated[str, Header(pattern=fields.KEY_PATTERN)]
WS = "/workspaces/{workspace}"
# what each kind of route can answer besides success (422 and 500: every route)
PUBLIC = responses(404)
SIGN_IN = responses(401, 413, 429)
MEMBER = responses(401, 404)
MEMBER_BODY = responses(401, 404, 413)
BUYING = responses(401, 403, 404, 409, 410, 413)
PAYING = responses(401, 402, 403, 404, 409, 410, 413)
USER_AGENT_MAX = 512


class Body(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SignInBody(Body):
    email: fields.Email
    password: fields.Password


class SessionToken(Body):
    token: str


class QuoteBody(Body):
    package_id: fields.PackageId
    version: fields.Version | None = Field(
        default=None, description="Omit for a subscription (latest)."
    )
    kind: OrderKind = OrderKind.PURCHASE


class OrderBody(Body):
    quote_id: int = Field(ge=1, le=MAX_ID)


class TokenBody(Body):
    name: fields.NonEmptyLine


class Me(Body):
    workspace: str
    role: str
    user_id: int


def kit_response(kit: KitDownload, headers: dict[str, str]) -> Response:
    """A kit as an attachment named for its package and version, its sha256 in a header
    (the API's and the store pages' downloads), plus ``headers``."""
    return Response(
        kit.data,
        media_type="application/gzip",
        headers={
            "Content-Disposition": f'attachment; filename="{kit.filename}"',
            "X-Kit-Sha256": kit.kit_sha256,
            **headers,
        },
    )


router = APIRouter(prefix=PREFIX, route_class=ProblemRoute, tags=["store"])
"""The ``/api/v1`` routes; they reach the store and the provider through
:mod:`servekit.web.deps`, which the app factories install."""


# --- public: the catalog, signing in, the payment provider's webhook -----------------


@router.get("/catalog", responses=responses())
def list_catalog(store: StoreDep) -> list[VersionInfo]:
    """Every version on sale."""
    with store.transaction() as s:
        return publishing.catalog(session=s)


@router.get("/catalog/{package_id}/{version}", responses=PUBLIC)
def show_version(store: StoreDep, package_id: PackageIdPath, version: VersionPath) -> VersionInfo:
    """One version, retracted or not."""
    with store.transaction() as s:
        return publishing.version_info(publishing.get_version(package_id, version, session=s))


@router.post("/sessions", status_code=201, responses=SIGN_IN)
def sign_in(body: SignInBody, request: Request, store: StoreDep) -> SessionToken:
    """Check the password and open a session; the token is shown once. Five failures
    for the email or the client address in 15 minutes: 429 until the window passes."""
    client = request.client.host if request.client else "unknown"
    return SessionToken(token=signin.sign_in(store, body.email, body.password, client))


@router.get("/me", responses=responses(401))
def me(bearer: BearerDep) -> Me:
    """The workspace an API token belongs to (the download client starts here)."""
    with bearer.store.transaction() as s:
        p = accounts.principal_for_token(bearer.token(), session=s)
        return Me(workspace=p.workspace, role=p.role.value, user_id=p.user_id)


async def provider_webhook(request: Request, ctx: ContextDep) -> WebhookResult:
    """A payment provider's event, verified with the webhook secret and applied once."""
    provider = ProviderName(request.url.path.rpartition("/")[2])  # one route per provider
    payload = await request.body()
    with ctx.store.transaction() as s:
        return webhooks.receive(provider, payload, request.headers, ctx.webhook_secret, session=s)


for _provider in WEBHOOK_PROVIDERS:  # the path each provider was given, named by the store's enum
    router.add_api_route(
        f"/webhooks/{_provider.value}",
        provider_webhook,
        methods=["POST"],
        name=f"{_provider.value}_webhook",
        responses=responses(400, 409, 413),
    )


# --- buying: quotes, the licence, orders ---------------------------------------------


@router.post(WS + "/quotes", status_code=201, responses=BUYING)
def quote(workspace: WorkspacePath, body: QuoteBody, bearer: BearerDep) -> QuoteInfo:
    """Price a version (or a subscription); nothing is charged."""
    with bearer.transaction(workspace) as (s, p):
        return checkout.create_quote(p, body.package_id, body.version, body.kind, session=s)


@router.get(WS + "/quotes/{quote_id}", responses=MEMBER)
def show_quote(workspace: WorkspacePath, quote_id: RowId, bearer: BearerDep) -> QuoteInfo:
    """A quote of this workspace."""
    with bearer.transaction(workspace) as (s, p):
        return checkout.get_quote(p, quote_id, session=s)


@router.get(WS + "/licence-terms/{package_id}/{version}", responses=MEMBER)
def terms(
    workspace: WorkspacePath, package_id: PackageIdPath, version: VersionPath, bearer: BearerDep
) -> LicenceTerms:
    """The terms text, its sha256 and the four clauses to affirm."""
    with bearer.transaction(workspace) as (s, _):
        return licences.terms_for(package_id, version, session=s)


@router.post(WS + "/licence-signatures", status_code=201, responses=BUYING)
def sign(
    workspace: WorkspacePath,
    body: LicenceSignatureRequest,
    request: Request,
    bearer: BearerDep,
    user_agent: Annotated[str | None, Header()] = None,
) -> SignatureInfo:
    """Sign the enterprise licence: recorded append-only in the hash chain."""
    client = request.client.host if request.client else "unknown"
    with bearer.transaction(workspace) as (s, p):
        return body.sign(p, client=client, user_agent=user_agent or "", session=s)


@router.post(WS + "/orders", status_code=201, responses=PAYING)
def confirm(
    workspace: WorkspacePath,
    body: OrderBody,
    idempotency_key: IdempotencyKey,
    bearer: BearerDep,
    provider: ProviderDep,
) -> OrderInfo:
    """Confirm a quote: charges once per Idempotency-Key and grants the entitlement."""
    with bearer.transaction(workspace) as (s, p):
        return checkout.confirm(p, body.quote_id, idempotency_key, provider=provider, session=s)


@router.get(WS + "/orders/{order_id}", responses=MEMBER)
def show_order(workspace: WorkspacePath, order_id: RowId, bearer: BearerDep) -> OrderInfo:
    """An order of this workspace."""
    with bearer.transaction(workspace) as (s, p):
        return checkout.workspace_order(p, order_id, session=s)


# --- holding: entitlements, downloads, API tokens ------------------------------------


@router.get(WS + "/entitlements", responses=MEMBER)
def list_entitlements(workspace: WorkspacePath, bearer: BearerDep) -> list[EntitlementInfo]:
    """What this workspace holds and may download."""
    with bearer.transaction(workspace) as (s, p):
        return entitlements.list_entitlements(p, session=s)


@router.post(WS + "/entitlements/{entitlement_id}/cancel", responses=BUYING)
def cancel(workspace: WorkspacePath, entitlement_id: RowId, bearer: BearerDep) -> EntitlementInfo:
    """Cancel a maintenance subscription at the end of its period."""
    with bearer.transaction(workspace) as (s, p):
        return entitlements.cancel_subscription(p, entitlement_id, session=s)


@router.get(
    WS + "/downloads/{package_id}/{version}",
    response_class=Response,
    responses={200: {"content": {"application/gzip": {}}}, **responses(401, 403, 404, 410)},
)
def download(
    workspace: WorkspacePath,
    package_id: PackageIdPath,
    version: VersionPath,
    bearer: BearerDep,
    head: HeadDep,
) -> Response:
    """The kit of a held version (``latest``: the newest held); every download is logged
    (a HEAD is answered alike and not logged)."""
    with bearer.transaction(workspace) as (s, p):
        kits = bearer.store.kits_dir
        kit = entitlements.download(
            p, package_id, version, kits_dir=kits, session=s, logged=not head
        )
    return kit_response(kit, {"X-Kit-Version": kit.version})


@router.get(WS + "/tokens", responses=MEMBER)
def list_tokens(workspace: WorkspacePath, bearer: BearerDep) -> list[TokenInfo]:
    """Your API tokens in this workspace (never the secret)."""
    with bearer.transaction(workspace) as (s, p):
        return accounts.list_tokens(p, session=s)


@router.post(WS + "/tokens", status_code=201, responses=MEMBER_BODY)
def create_token(workspace: WorkspacePath, body: TokenBody, bearer: BearerDep) -> NewToken:
    """A new API token for downloads; the secret is shown once."""
    with bearer.transaction(workspace) as (s, p):
        return accounts.create_token(p, body.name, session=s)


@router.delete(WS + "/tokens/{token_id}", status_code=204, responses=MEMBER)
def revoke_token(workspace: WorkspacePath, token_id: RowId, bearer: BearerDep) -> Response:
    """Revoke one of your API tokens."""
    with bearer.transaction(workspace) as (s, p):
        accounts.revoke_token(p, token_id, session=s)
    return Response(status_code=204)
