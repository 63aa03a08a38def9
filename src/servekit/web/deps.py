"""The web room's one way in: the FastAPI dependencies every route and page declares.

The app factories put the services on ``app.state`` (:func:`install`); only the functions
here read it back. A route asks for what it needs by type: the open store
(:data:`StoreDep`), the payment provider (:data:`ProviderDep`), the catalog and its page
cache (:data:`SourceDep`, :data:`PagesDep`), who the session cookie says is signed in
(:data:`MemberDep`) or what bearer token the API request carries (:data:`BearerDep`).

The dependency functions are ``async``: they only read what the app holds, so FastAPI
calls them on the event loop rather than handing each to a worker thread. The member and
the bearer are resolved in the route's own transaction (their
``transaction`` methods), not before it: the route's form or body is checked first (a
malformed request is a 422 whoever sends it), and the identity check and the change it
allows are one transaction.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, FastAPI, Header, Request
from sqlalchemy.orm import Session

from servekit.catalog.publish import CatalogSource
from servekit.errors import AuthenticationError, StoreNotFoundError
from servekit.store import accounts
from servekit.store.db import Store
from servekit.store.providers import PaymentProvider
from servekit.store.results import Principal
from servekit.web.api.context import ApiContext
from servekit.web.cache import PageCache
from servekit.web.methods import HEAD_SCOPE_KEY

SESSION_TOKEN = "store_token"
"""The session key under which the signed-in user's store session token is kept."""


def install(app: FastAPI, ctx: ApiContext) -> None:
    """Put the store, the provider and the webhook secret where the dependencies find them."""
    app.state.api = ctx
    app.state.store = ctx.store  # for tests that open the store an app serves


def services(request: Request) -> ApiContext:
    """What :func:`install` put on the app (the one reader of it; plain, for the page
    frame and the signing-key notice, which render outside a route's signature)."""
    ctx: ApiContext = request.app.state.api
    return ctx


async def api_context(request: Request) -> ApiContext:
    return services(request)


ContextDep = Annotated[ApiContext, Depends(api_context)]


async def store(ctx: ContextDep) -> Store:
    return ctx.store


StoreDep = Annotated[Store, Depends(store)]


async def provider(ctx: ContextDep) -> PaymentProvider:
    return ctx.provider


ProviderDep = Annotated[PaymentProvider, Depends(provider)]


async def catalog_source(request: Request) -> CatalogSource:
    source: CatalogSource = request.app.state.catalog
    return source


SourceDep = Annotated[CatalogSource, Depends(catalog_source)]


async def page_cache(request: Request) -> PageCache:
    cache: PageCache = request.app.state.pages
    return cache


PagesDep = Annotated[PageCache, Depends(page_cache)]


async def device_key(request: Request) -> str:
    """The key that signs the sign-in device cookies (:mod:`servekit.web.signin`)."""
    key: str = request.app.state.device_key
    return key


DeviceKeyDep = Annotated[str, Depends(device_key)]


@dataclass(frozen=True)
class Member:
    """Who the signed session cookie says is signed in: a store session token, checked
    against the database in the route's transaction (signing out anywhere ends it)."""

    store: Store
    token: str | None

    @property
    def signed_in(self) -> bool:
        """True when the cookie carries a token (whether it is still valid is not known)."""
        return self.token is not None

    @contextmanager
    def transaction(self) -> Iterator[tuple[Session, int]]:
        """A transaction and the signed-in user's id; 401 when nobody is."""
        if self.token is None:
            raise AuthenticationError("sign in first", hint="sign in at /signin")
        with self.store.transaction() as s:
            yield s, accounts.user_for_session(self.token, session=s)

    @contextmanager
    def in_workspace(self, workspace: str) -> Iterator[tuple[Session, Principal]]:
        """A transaction and the user as a member of ``workspace`` (404 when not one)."""
        with self.transaction() as (s, uid):
            yield s, accounts.principal_for_user(uid, workspace, session=s)


async def member(request: Request, store: StoreDep) -> Member:
    token = request.session.get(SESSION_TOKEN)
    return Member(store, token if isinstance(token, str) else None)


MemberDep = Annotated[Member, Depends(member)]


async def head_only(request: Request) -> bool:
    """Whether the request is a HEAD answered as a GET (:mod:`servekit.web.methods`): its
    route sends the GET's headers but must not have the GET's effects."""
    return bool(request.scope.get(HEAD_SCOPE_KEY, False))


HeadDep = Annotated[bool, Depends(head_only)]


@dataclass(frozen=True)
class Bearer:
    """The API request's ``Authorization: Bearer`` credentials: a store session token
    (``POST /api/v1/sessions``) or an API token of one workspace."""

    store: Store
    authorization: str | None

    def token(self) -> str:
        scheme, _, token = (self.authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise AuthenticationError(
                "this route needs 'Authorization: Bearer TOKEN'",
                hint="sign in (POST /api/v1/sessions) or use an API token",
            )
        return token.strip()

    def principal(self, workspace: str, *, session: Session) -> Principal:
        """Who the token speaks for in ``workspace``: 404 when not a member, and when an
        API token of another workspace asks (it learns nothing of this one)."""
        token = self.token()
        if token.startswith(accounts.TOKEN_PREFIX):
            found = accounts.principal_for_token(token, session=session)
            if found.workspace != workspace:
                raise StoreNotFoundError(f"no workspace {workspace}")
            return found
        uid = accounts.user_for_session(token, session=session)
        return accounts.principal_for_user(uid, workspace, session=session)

    @contextmanager
    def transaction(self, workspace: str) -> Iterator[tuple[Session, Principal]]:
        """A transaction and the principal the token speaks for in ``workspace``."""
        with self.store.transaction() as s:
            yield s, self.principal(workspace, session=s)


Authorization = Annotated[str | None, Header(description="Bearer session or API token.")]


async def bearer(store: StoreDep, authorization: Authorization = None) -> Bearer:
    return Bearer(store, authorization)


BearerDep = Annotated[Bearer, Depends(bearer)]
