"""The store's pages: sign up, in and out; workspaces and members; quote, licence and
confirm; entitlements, kit downloads, API tokens and subscription cancel.

Each handler parses the form, calls store services in one transaction, and renders a
template or redirects (POST, then redirect, then GET). Who is signed in is the store
session token kept in the signed session cookie, checked against the database on every
request, so signing out anywhere ends it everywhere. Every form carries the CSRF token
(checked by :class:`~servekit.web.sessions.CSRFProtect` before a handler runs), and every
page here is per-session: ``Cache-Control: no-store``, never the page cache.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from servekit.errors import AuthenticationError, UsageError
from servekit.store import accounts, checkout, entitlements, licences, publishing
from servekit.store.db import Store
from servekit.store.models import Clause, OrderKind, Role
from servekit.store.results import Principal
from servekit.web import signin
from servekit.web.api.routes import MAX_ID, USER_AGENT_MAX, RowId, kit_response
from servekit.web.fields import (
    EMAIL_MAX,
    KEY_MAX,
    NAME_MAX,
    PARAGRAPH_MAX,
    PASSWORD_MAX,
    form_choice,
    form_text,
    printable_prefix,
)
from servekit.web.pages import render
from servekit.web.sessions import csrf_token

router = APIRouter()
TOKEN = "store_token"
NO_STORE = {"Cache-Control": "no-store"}
Text = Annotated[str, Form()]


def _store(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


def _client(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def _page(request: Request, template: str, status: int = 200, **values: Any) -> HTMLResponse:
    token = request.session.get(TOKEN)
    body = render(template, csrf=csrf_token(request), signed_in=bool(token), **values)
    return HTMLResponse(body, status_code=status, headers=NO_STORE)


def _to(path: str) -> RedirectResponse:
    return RedirectResponse(path, status_code=303, headers=NO_STORE)


def _safe_next(path: str) -> str:
    """Only a path on this site may be a redirect target: never ``//host``, nor ``/\\host``
    (browsers read a backslash as a slash), nor a control character."""
    on_site = path.startswith("/") and not path.startswith("//") and "\\" not in path
    return path if on_site and path.isprintable() else "/account"


@contextmanager
def _user(request: Request) -> Iterator[tuple[Session, int]]:
    token = request.session.get(TOKEN)
    if not isinstance(token, str):
        raise AuthenticationError("sign in first", hint="sign in at /signin")
    with _store(request).transaction() as s:
        yield s, accounts.user_for_session(token, session=s)


@contextmanager
def _member(request: Request, workspace: str) -> Iterator[tuple[Session, Principal]]:
    with _user(request) as (s, uid):
        yield s, accounts.principal_for_user(uid, workspace, session=s)


def _signed_in(request: Request, token: str) -> None:
    request.session.clear()  # a new session (and CSRF token) on every sign-in
    request.session[TOKEN] = token


# --- accounts -------------------------------------------------------------------------


@router.get("/signup", response_class=HTMLResponse)
def signup_form(request: Request) -> HTMLResponse:
    """A new user and their first workspace."""
    return _page(request, "store/signup.html")


@router.post("/signup")
def signup(request: Request, email: Text, password: Text, workspace: Text) -> Response:
    """The same answer whether or not the email has an account: sign in next
    (:func:`servekit.store.accounts.sign_up`)."""
    _credentials(email, password)
    form_text(workspace, "workspace")
    with _store(request).transaction() as s:
        accounts.sign_up(email, password, workspace, session=s)
    return _to("/signin?" + urlencode({"next": f"/w/{workspace}", "signed_up": "1"}))


@router.get("/signin", response_class=HTMLResponse)
def signin_form(request: Request, next: str = "/account", signed_up: str = "") -> HTMLResponse:
    return _page(request, "store/signin.html", next=_safe_next(next), signed_up=bool(signed_up))


@router.post("/signin")
def signin_post(
    request: Request, email: Text, password: Text, next: Annotated[str, Form()] = "/account"
) -> Response:
    _credentials(email, password)
    key: str = request.app.state.device_key
    known = signin.known_device(key, email, request.cookies.get(signin.DEVICE_COOKIE))
    token = signin.sign_in(_store(request), email, password, _client(request), known=known)
    _signed_in(request, token)
    answer = _to(_safe_next(next))
    answer.set_cookie(
        signin.DEVICE_COOKIE,
        signin.device_token(key, email),
        max_age=signin.DEVICE_DAYS * 86400,
        httponly=True,
        secure=True,
        samesite="lax",
    )
    return answer


@router.post("/signout")
def signout(request: Request) -> Response:
    token = request.session.get(TOKEN)
    if isinstance(token, str):
        with _store(request).transaction() as s:
            accounts.sign_out(token, session=s)
    request.session.clear()
    return _to("/")


@router.get("/account", response_class=HTMLResponse)
def account(request: Request) -> HTMLResponse:
    """The workspaces you belong to."""
    with _user(request) as (s, uid):
        spaces = accounts.workspaces_of(uid, session=s)
    return _page(request, "store/account.html", workspaces=spaces)


# --- a workspace ----------------------------------------------------------------------


@router.get("/w/{workspace}", response_class=HTMLResponse)
def workspace_page(request: Request, workspace: str) -> HTMLResponse:
    """Members, entitlements (with downloads and cancel) and API tokens of a workspace."""
    with _member(request, workspace) as (s, p):
        members = accounts.members(p, session=s)
        held = entitlements.list_entitlements(p, session=s)
        tokens = accounts.list_tokens(p, session=s)
    return _page(
        request,
        "store/workspace.html",
        ws=p,
        roles=list(Role),
        members=members,
        entitlements=held,
        tokens=tokens,
    )


@router.post("/w/{workspace}/members")
def add_member(request: Request, workspace: str, email: Text, role: Text) -> Response:
    chosen = form_choice(Role, role, "role")
    with _member(request, workspace) as (s, p):
        accounts.require_owner(p)
        member = accounts.user_id_by_email(form_text(email, "email", EMAIL_MAX), session=s)
        accounts.add_member(p.workspace_id, member, chosen, session=s)
    return _to(f"/w/{quote(workspace)}")


@router.post("/w/{workspace}/tokens", response_class=HTMLResponse)
def new_token(request: Request, workspace: str, name: Text) -> HTMLResponse:
    """The token is on this response only: it is stored as a hash."""
    with _member(request, workspace) as (s, p):
        made = accounts.create_token(p, form_text(name, "token name"), session=s)
    return _page(request, "store/token.html", ws=p, token=made, status=201)


@router.post("/w/{workspace}/tokens/{token_id}/revoke")
def revoke_token(request: Request, workspace: str, token_id: RowId) -> Response:
    with _member(request, workspace) as (s, p):
        accounts.revoke_token(p, token_id, session=s)
    return _to(f"/w/{quote(workspace)}")


@router.post("/w/{workspace}/entitlements/{entitlement_id}/cancel")
def cancel(request: Request, workspace: str, entitlement_id: RowId) -> Response:
    with _member(request, workspace) as (s, p):
        entitlements.cancel_subscription(p, entitlement_id, session=s)
    return _to(f"/w/{quote(workspace)}")


@router.get("/w/{workspace}/downloads/{package_id}/{version}")
def download(request: Request, workspace: str, package_id: str, version: str) -> Response:
    """The kit of a held version; logged like every download."""
    with _member(request, workspace) as (s, p):
        kit = entitlements.download(
            p, package_id, version, kits_dir=_store(request).kits_dir, session=s
        )
    return kit_response(kit, NO_STORE)


# --- buying ---------------------------------------------------------------------------


@router.get("/buy/{package_id}/{version}", response_class=HTMLResponse)
def buy(request: Request, package_id: str, version: str) -> Response:
    """Choose the workspace (and purchase or subscription) to quote for."""
    if not isinstance(request.session.get(TOKEN), str):
        return _to("/signin?next=" + quote(f"/buy/{package_id}/{version}"))
    with _user(request) as (s, uid):
        ver = publishing.version_info(publishing.get_version(package_id, version, session=s))
        spaces = [
            w for w in accounts.workspaces_of(uid, session=s) if w[2] in accounts.BUYING_ROLES
        ]
    return _page(request, "store/buy.html", v=ver, workspaces=spaces)


@router.post("/quotes")
def new_quote(
    request: Request, workspace: Text, package_id: Text, version: Text, kind: Text
) -> Response:
    """Price the version: nothing is charged until the quote is confirmed."""
    order_kind = form_choice(OrderKind, kind, "kind")
    form_text(workspace, "workspace")
    form_text(package_id, "package id")
    form_text(version, "version")
    with _member(request, workspace) as (s, p):
        wanted = None if order_kind is OrderKind.SUBSCRIPTION else version
        q = checkout.create_quote(p, package_id, wanted, order_kind, session=s)
    return _to(f"/w/{quote(workspace)}/quotes/{q.id}")


@router.get("/w/{workspace}/quotes/{quote_id}", response_class=HTMLResponse)
def quote_page(request: Request, workspace: str, quote_id: RowId) -> HTMLResponse:
    """The quote, and the explicit confirm (its idempotency key in a hidden field)."""
    with _member(request, workspace) as (s, p):
        q = checkout.get_quote(p, quote_id, session=s)
        ver = publishing.get_version(q.package_id, q.version, session=s)
        signed = licences.signature_for(p.workspace_id, ver.id, session=s) is not None
    return _page(
        request,
        "store/quote.html",
        ws=p,
        q=q,
        signed=signed,
        idempotency_key=secrets.token_urlsafe(24),
    )


@router.post("/w/{workspace}/quotes/{quote_id}/confirm")
def confirm(request: Request, workspace: str, quote_id: RowId, idempotency_key: Text) -> Response:
    """Charge once per idempotency key (a second submit of the form replays the order)."""
    form_text(idempotency_key, "idempotency key", KEY_MAX)
    with _member(request, workspace) as (s, p):
        order = checkout.confirm(
            p, quote_id, idempotency_key, provider=request.app.state.provider, session=s
        )
    return _to(f"/w/{quote(workspace)}/orders/{order.id}")


@router.get("/w/{workspace}/orders/{order_id}", response_class=HTMLResponse)
def order_page(request: Request, workspace: str, order_id: RowId) -> HTMLResponse:
    with _member(request, workspace) as (s, p):
        order = checkout.workspace_order(p, order_id, session=s)
    return _page(request, "store/order.html", ws=p, order=order)


@router.get("/w/{workspace}/licence/{package_id}/{version}", response_class=HTMLResponse)
def licence_form(
    request: Request,
    workspace: str,
    package_id: str,
    version: str,
    quote_id: Annotated[int, Query(ge=0, le=MAX_ID)] = 0,
) -> HTMLResponse:
    """The enterprise licence: the full terms with their sha256 and four affirmations."""
    with _member(request, workspace) as (s, p):
        terms = licences.terms_for(package_id, version, session=s)
    return _page(request, "store/licence.html", ws=p, terms=terms, quote_id=quote_id)


@router.post("/w/{workspace}/licence/{package_id}/{version}")
async def sign_licence(request: Request, workspace: str, package_id: str, version: str) -> Response:
    form = await request.form()

    def field(name: str) -> str:
        value = form.get(name)
        return value.strip() if isinstance(value, str) else ""

    affirmed = {c for c in Clause if field(f"affirm_{c.value}") == "yes"}
    with _member(request, workspace) as (s, p):
        licences.sign_licence(
            p,
            package_id,
            version,
            licensed_entity=_required(field("licensed_entity"), "licensed entity", PARAGRAPH_MAX),
            signer_name=_required(field("signer_name"), "signer name"),
            signer_title=_required(field("signer_title"), "signer title"),
            authority_statement=_required(
                field("authority_statement"), "authority statement", PARAGRAPH_MAX
            ),
            affirmed=affirmed,
            terms_sha256=form_text(field("terms_sha256"), "terms sha256", 64),
            ip=_client(request),
            user_agent=printable_prefix(request.headers.get("user-agent", ""), USER_AGENT_MAX),
            session=s,
        )
    quote_id = field("quote_id")
    if quote_id.isdigit() and quote_id != "0":
        return _to(f"/w/{quote(workspace)}/quotes/{quote_id}")
    return _to(f"/w/{quote(workspace)}")


def _required(value: str, what: str, max_length: int = NAME_MAX) -> str:
    if not value:
        raise UsageError(f"the {what} is required", hint="fill in every field of the form")
    return form_text(value, what, max_length, lines=max_length > NAME_MAX)


def _credentials(email: str, password: str) -> None:
    """Bounds on a sign-up or sign-in form's email and password (before any hashing)."""
    form_text(email, "email", EMAIL_MAX)
    if len(password) > PASSWORD_MAX:
        raise UsageError(
            f"the password is {len(password)} characters long; at most {PASSWORD_MAX} are accepted",
            hint="choose a shorter password",
        )
