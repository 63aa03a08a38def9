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
from sqlalchemy.orm import Session

from servekit.errors import AuthenticationError, StoreNotFoundError
from servekit.store import accounts, checkout, entitlements, licences, publishing, webhooks
from servekit.store.models import Clause, OrderKind
from servekit.store.providers import WEBHOOK_PROVIDERS, ProviderName
from servekit.store.results import (
    EntitlementInfo,
    KitDownload,
    LicenceTerms,
    NewToken,
    OrderInfo,
    Principal,
    QuoteInfo,
    SignatureInfo,
    TokenInfo,
    VersionInfo,
)
from servekit.store.webhooks import WebhookResult
from servekit.web import fields, signin
from servekit.web.api.context import ApiContext
from servekit.web.api.problems import ProblemRoute, responses

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


class SignBody(Body):
    package_id: fields.PackageId
    version: fields.Version
    licensed_entity: fields.Paragraph
    signer_name: fields.NonEmptyLine
    signer_title: fields.NonEmptyLine
    authority_statement: fields.Paragraph
    affirmations: dict[Clause, bool] = Field(description="Each clause, affirmed separately.")
    terms_sha256: fields.Sha256 = Field(
        description="sha256 of the terms text the signer was shown."
    )


class TokenBody(Body):
    name: fields.NonEmptyLine


class Me(Body):
    workspace: str
    role: str
    user_id: int


def _bearer(authorization: str | None) -> str:
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise AuthenticationError(
            "this route needs 'Authorization: Bearer TOKEN'",
            hint="sign in (POST /api/v1/sessions) or use an API token",
        )
    return token.strip()


def _principal(s: Session, authorization: str | None, workspace: WorkspacePath) -> Principal:
    token = _bearer(authorization)
    if token.startswith(accounts.TOKEN_PREFIX):
        found = accounts.principal_for_token(token, session=s)
        if found.workspace != workspace:  # a token of another workspace learns nothing
            raise StoreNotFoundError(f"no workspace {workspace}")
        return found
    return accounts.principal_for_user(
        accounts.user_for_session(token, session=s), workspace, session=s
    )


Auth = Annotated[str | None, Header(description="Bearer session or API token.")]


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


def api_router(ctx: ApiContext) -> APIRouter:
    """The ``/api/v1`` router, bound to a store and a payment provider."""
    router = APIRouter(prefix=PREFIX, route_class=ProblemRoute, tags=["store"])
    _public_routes(router, ctx)
    _buying_routes(router, ctx)
    _holding_routes(router, ctx)
    return router


def _public_routes(router: APIRouter, ctx: ApiContext) -> None:
    @router.get("/catalog", responses=responses())
    def list_catalog() -> list[VersionInfo]:
        """Every version on sale."""
        with ctx.store.transaction() as s:
            return publishing.catalog(session=s)

    @router.get("/catalog/{package_id}/{version}", responses=PUBLIC)
    def show_version(package_id: PackageIdPath, version: VersionPath) -> VersionInfo:
        """One version, retracted or not."""
        with ctx.store.transaction() as s:
            return publishing.version_info(publishing.get_version(package_id, version, session=s))

    @router.post("/sessions", status_code=201, responses=SIGN_IN)
    def sign_in(body: SignInBody, request: Request) -> SessionToken:
        """Check the password and open a session; the token is shown once. Five failures
        for the email or the client address in 15 minutes: 429 until the window passes."""
        client = request.client.host if request.client else "unknown"
        return SessionToken(token=signin.sign_in(ctx.store, body.email, body.password, client))

    @router.get("/me", responses=responses(401))
    def me(authorization: Auth = None) -> Me:
        """The workspace an API token belongs to (the download client starts here)."""
        with ctx.store.transaction() as s:
            p = accounts.principal_for_token(_bearer(authorization), session=s)
            return Me(workspace=p.workspace, role=p.role.value, user_id=p.user_id)

    for provider in WEBHOOK_PROVIDERS:
        _webhook_route(router, ctx, provider)


def _webhook_route(router: APIRouter, ctx: ApiContext, provider: ProviderName) -> None:
    """``/webhooks/<provider>``: the path a provider was given, named by the store's enum."""

    @router.post(
        f"/webhooks/{provider.value}",
        name=f"{provider.value}_webhook",
        responses=responses(400, 409, 413),
    )
    async def webhook(request: Request) -> WebhookResult:
        """A provider's event, verified with the webhook secret and applied once."""
        payload = await request.body()
        with ctx.store.transaction() as s:
            return webhooks.receive(
                provider, payload, request.headers, ctx.webhook_secret, session=s
            )


def _buying_routes(router: APIRouter, ctx: ApiContext) -> None:
    @router.post(WS + "/quotes", status_code=201, responses=BUYING)
    def quote(workspace: WorkspacePath, body: QuoteBody, authorization: Auth = None) -> QuoteInfo:
        """Price a version (or a subscription); nothing is charged."""
        with ctx.store.transaction() as s:
            p = _principal(s, authorization, workspace)
            return checkout.create_quote(p, body.package_id, body.version, body.kind, session=s)

    @router.get(WS + "/quotes/{quote_id}", responses=MEMBER)
    def show_quote(
        workspace: WorkspacePath, quote_id: RowId, authorization: Auth = None
    ) -> QuoteInfo:
        """A quote of this workspace."""
        with ctx.store.transaction() as s:
            return checkout.get_quote(_principal(s, authorization, workspace), quote_id, session=s)

    @router.get(WS + "/licence-terms/{package_id}/{version}", responses=MEMBER)
    def terms(
        workspace: WorkspacePath,
        package_id: PackageIdPath,
        version: VersionPath,
        authorization: Auth = None,
    ) -> LicenceTerms:
        """The terms text, its sha256 and the four clauses to affirm."""
        with ctx.store.transaction() as s:
            _principal(s, authorization, workspace)
            return licences.terms_for(package_id, version, session=s)

    @router.post(WS + "/licence-signatures", status_code=201, responses=BUYING)
    def sign(
        workspace: WorkspacePath,
        body: SignBody,
        request: Request,
        authorization: Auth = None,
        user_agent: Annotated[str | None, Header()] = None,
    ) -> SignatureInfo:
        """Sign the enterprise licence: recorded append-only in the hash chain."""
        with ctx.store.transaction() as s:
            p = _principal(s, authorization, workspace)
            return licences.sign_licence(
                p,
                body.package_id,
                body.version,
                licensed_entity=body.licensed_entity,
                signer_name=body.signer_name,
                signer_title=body.signer_title,
                authority_statement=body.authority_statement,
                affirmed={c for c, yes in body.affirmations.items() if yes},
                terms_sha256=body.terms_sha256,
                ip=request.client.host if request.client else "unknown",
                user_agent=fields.printable_prefix(user_agent or "", USER_AGENT_MAX),
                session=s,
            )

    @router.post(WS + "/orders", status_code=201, responses=PAYING)
    def confirm(
        workspace: WorkspacePath,
        body: OrderBody,
        idempotency_key: IdempotencyKey,
        authorization: Auth = None,
    ) -> OrderInfo:
        """Confirm a quote: charges once per Idempotency-Key and grants the entitlement."""
        with ctx.store.transaction() as s:
            p = _principal(s, authorization, workspace)
            return checkout.confirm(
                p, body.quote_id, idempotency_key, provider=ctx.provider, session=s
            )

    @router.get(WS + "/orders/{order_id}", responses=MEMBER)
    def show_order(
        workspace: WorkspacePath, order_id: RowId, authorization: Auth = None
    ) -> OrderInfo:
        """An order of this workspace."""
        with ctx.store.transaction() as s:
            p = _principal(s, authorization, workspace)
            return checkout.workspace_order(p, order_id, session=s)


def _holding_routes(router: APIRouter, ctx: ApiContext) -> None:
    @router.get(WS + "/entitlements", responses=MEMBER)
    def list_entitlements(
        workspace: WorkspacePath, authorization: Auth = None
    ) -> list[EntitlementInfo]:
        """What this workspace holds and may download."""
        with ctx.store.transaction() as s:
            p = _principal(s, authorization, workspace)
            return entitlements.list_entitlements(p, session=s)

    @router.post(WS + "/entitlements/{entitlement_id}/cancel", responses=BUYING)
    def cancel(
        workspace: WorkspacePath, entitlement_id: RowId, authorization: Auth = None
    ) -> EntitlementInfo:
        """Cancel a maintenance subscription at the end of its period."""
        with ctx.store.transaction() as s:
            p = _principal(s, authorization, workspace)
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
        authorization: Auth = None,
    ) -> Response:
        """The kit of a held version (``latest``: the newest held); every download is logged."""
        with ctx.store.transaction() as s:
            p = _principal(s, authorization, workspace)
            kit = entitlements.download(
                p, package_id, version, kits_dir=ctx.store.kits_dir, session=s
            )
        return kit_response(kit, {"X-Kit-Version": kit.version})

    @router.get(WS + "/tokens", responses=MEMBER)
    def list_tokens(workspace: WorkspacePath, authorization: Auth = None) -> list[TokenInfo]:
        """Your API tokens in this workspace (never the secret)."""
        with ctx.store.transaction() as s:
            return accounts.list_tokens(_principal(s, authorization, workspace), session=s)

    @router.post(WS + "/tokens", status_code=201, responses=MEMBER_BODY)
    def create_token(
        workspace: WorkspacePath, body: TokenBody, authorization: Auth = None
    ) -> NewToken:
        """A new API token for downloads; the secret is shown once."""
        with ctx.store.transaction() as s:
            return accounts.create_token(
                _principal(s, authorization, workspace), body.name, session=s
            )

    @router.delete(WS + "/tokens/{token_id}", status_code=204, responses=MEMBER)
    def revoke_token(
        workspace: WorkspacePath, token_id: RowId, authorization: Auth = None
    ) -> Response:
        """Revoke one of your API tokens."""
        with ctx.store.transaction() as s:
            accounts.revoke_token(_principal(s, authorization, workspace), token_id, session=s)
        return Response(status_code=204)
