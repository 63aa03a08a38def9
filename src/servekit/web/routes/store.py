"""The store's pages: sign up, in and out; workspaces and members; quote, licence and
confirm; entitlements, kit downloads, orders and receipts, API tokens and subscription
cancel.

Each handler parses the form, calls store services in one transaction, and redirects
(POST, then redirect, then GET: reloading a page never repeats a change). A refused form
is rendered again with the message beside it and every input kept, passwords excepted.
Who is signed in is the store session token kept in the signed session cookie, checked
against the database on every request, so signing out anywhere ends it everywhere
(:data:`~servekit.web.deps.MemberDep`); each page renders its own frozen context
(:mod:`servekit.web.contexts`). Every form carries the CSRF token (checked by
:class:`~servekit.web.sessions.CSRFProtect` before a handler runs), and every page here is
per-session: ``Cache-Control: no-store``, never the page cache.
"""

from __future__ import annotations

import secrets
from typing import Annotated
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from servekit.errors import Error, StoreNotFoundError, UsageError
from servekit.store import accounts, checkout, entitlements, licences, publishing
from servekit.store.models import Clause, OrderKind, Role
from servekit.store.results import EntitlementInfo, Principal
from servekit.web import contexts, deps, licence, signin
from servekit.web.api.problems import problem_of, retry_headers
from servekit.web.api.routes import MAX_ID, RowId, kit_response
from servekit.web.deps import DeviceKeyDep, HeadDep, MemberDep, ProviderDep, StoreDep
from servekit.web.fields import EMAIL_MAX, KEY_MAX, PASSWORD_MAX, form_choice, form_text
from servekit.web.keys import store_key_id
from servekit.web.pages import NO_STORE, SESSION_TOKEN, page

router = APIRouter()
NEW_TOKEN = "new_token"  # the session key holding a just-made token until its page shows it
Text = Annotated[str, Form()]
OptionalText = Annotated[str, Form()]


def _client(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def _to(path: str) -> RedirectResponse:
    return RedirectResponse(path, status_code=303, headers=NO_STORE)


def _refused(request: Request, context: contexts.FormPage) -> HTMLResponse:
    """The form again, with the error beside it and the inputs it was given, answered with
    the error's status (the same the API gives it)."""
    if context.error is None:
        return page(request, context)
    found = problem_of(context.error)
    answer = page(request, context, found.status)
    answer.headers.update(retry_headers(found))
    return answer


def _signing(
    request: Request, package_id: str | None = None, version: str | None = None
) -> contexts.Signing:
    """The store's key id and address, for the pages that lead to a download: each shows
    the key id to compare out of band, the trust file to verify the kit with and, on a
    page about one version, that kit's file name and ``--expect``."""
    key_id = store_key_id(deps.services(request).store)
    origin = str(request.base_url).rstrip("/")
    return contexts.Signing(key_id=key_id, origin=origin, package_id=package_id, version=version)


def safe_next(path: str, default: str = "/account") -> str:
    """Only a path on this site may be a redirect target: never ``//host``, nor ``/\\host``
    (browsers read a backslash as a slash), nor a control character."""
    on_site = path.startswith("/") and not path.startswith("//") and "\\" not in path
    return path if on_site and path.isprintable() else default


def _signed_in(request: Request, token: str) -> None:
    request.session.clear()  # a new session (and CSRF token) on every sign-in
    request.session[SESSION_TOKEN] = token


# --- accounts -------------------------------------------------------------------------


@router.get("/signup", response_class=HTMLResponse)
def signup_form(request: Request, next: str = "") -> HTMLResponse:
    """A new user and their first workspace."""
    return page(request, contexts.SignupPage(next=safe_next(next, "")))


@router.post("/signup")
def signup(
    request: Request,
    store: StoreDep,
    email: Text,
    password: Text,
    workspace: Text,
    next: OptionalText = "",
) -> Response:
    """The same answer whether or not the email has an account: sign in next
    (:func:`servekit.store.accounts.sign_up`), then on to ``next`` or the workspace."""
    try:
        _credentials(email, password)
        form_text(workspace, "workspace")
        with store.transaction() as s:
            accounts.sign_up(email, password, workspace, session=s)
    except Error as exc:
        kept = contexts.SignupPage(
            error=exc, email=email, workspace=workspace, next=safe_next(next, "")
        )
        return _refused(request, kept)
    then = safe_next(next, f"/w/{quote(workspace)}")
    return _to("/signin?" + urlencode({"next": then, "signed_up": "1"}))


@router.get("/signin", response_class=HTMLResponse)
def signin_form(request: Request, next: str = "/account", signed_up: str = "") -> HTMLResponse:
    return page(request, contexts.SigninPage(next=safe_next(next), signed_up=bool(signed_up)))


@router.post("/signin")
def signin_post(
    request: Request,
    store: StoreDep,
    key: DeviceKeyDep,
    email: Text,
    password: Text,
    next: OptionalText = "/account",
) -> Response:
    try:
        _credentials(email, password)
        known = signin.known_device(key, email, request.cookies.get(signin.DEVICE_COOKIE))
        token = signin.sign_in(store, email, password, _client(request), known=known)
    except Error as exc:
        return _refused(request, contexts.SigninPage(error=exc, email=email, next=safe_next(next)))
    _signed_in(request, token)
    answer = _to(safe_next(next))
    answer.set_cookie(
        signin.DEVICE_COOKIE,
        signin.device_token(key, email),
        max_age=signin.DEVICE_DAYS * 86400,
        httponly=True,
        secure=True,
        samesite="lax",
    )
    return answer


@router.get("/signout", response_class=HTMLResponse)
def signout_form(request: Request) -> HTMLResponse:
    """The catalog's pages are shared by every visitor, so they link here for a form."""
    return page(request, contexts.SignoutPage())


@router.post("/signout")
def signout(request: Request, member: MemberDep) -> Response:
    if member.token is not None:
        with member.store.transaction() as s:
            accounts.sign_out(member.token, session=s)
    request.session.clear()
    return _to("/")


@router.get("/account", response_class=HTMLResponse)
def account(request: Request, member: MemberDep) -> HTMLResponse:
    """The workspaces you belong to."""
    with member.transaction() as (s, uid):
        spaces = accounts.workspaces_of(uid, session=s)
    return page(request, contexts.AccountPage(workspaces=spaces))


# --- a workspace ----------------------------------------------------------------------


def _workspace(
    request: Request,
    s: Session,
    p: Principal,
    error: Error | None = None,
    member_email: str = "",
) -> HTMLResponse:
    held = entitlements.list_entitlements(p, session=s)
    context = contexts.WorkspacePage(
        ws=p,
        members=accounts.members(p, session=s),
        entitlements=held,
        undeployable=_undeployable(held, s),
        tokens=accounts.list_tokens(p, session=s),
        signing=_signing(request),
        error=error,
        member_email=member_email,
    )
    return _refused(request, context)


def _undeployable(held: list[EntitlementInfo], s: Session) -> set[tuple[str, str]]:
    """The held versions whose model commit is a placeholder: their kits cannot deploy."""
    return {
        (e.package_id, v)
        for e in held
        for v in e.downloadable
        if publishing.get_version(e.package_id, v, session=s).placeholder_commit
    }


@router.get("/w/{workspace}", response_class=HTMLResponse)
def workspace_page(request: Request, member: MemberDep, workspace: str) -> HTMLResponse:
    """Members, entitlements (with downloads and cancel) and API tokens of a workspace."""
    with member.in_workspace(workspace) as (s, p):
        return _workspace(request, s, p)


@router.post("/w/{workspace}/members")
def add_member(
    request: Request, member: MemberDep, workspace: str, email: Text, role: Text
) -> Response:
    with member.in_workspace(workspace) as (s, p):
        try:
            with s.begin_nested():
                chosen = form_choice(Role, role, "role")
                accounts.require_owner(p)
                added = accounts.user_id_by_email(form_text(email, "email", EMAIL_MAX), session=s)
                accounts.add_member(p.workspace_id, added, chosen, session=s)
        except Error as exc:
            return _workspace(request, s, p, error=exc, member_email=email)
    return _to(f"/w/{quote(workspace)}#members")


@router.post("/w/{workspace}/tokens")
def new_token(request: Request, member: MemberDep, workspace: str, name: Text) -> Response:
    """The token is kept in the session until its page shows it once (it is stored as a
    hash): reloading that page shows no token and makes none."""
    with member.in_workspace(workspace) as (s, p):
        made = accounts.create_token(p, form_text(name, "token name"), session=s)
    request.session[NEW_TOKEN] = {"workspace": p.workspace, "name": made.name, "token": made.token}
    return _to(f"/w/{quote(workspace)}/tokens/new")


@router.get("/w/{workspace}/tokens/new", response_class=HTMLResponse)
def shown_token(request: Request, member: MemberDep, workspace: str) -> HTMLResponse:
    with member.in_workspace(workspace) as (_, p):
        pass
    made = request.session.pop(NEW_TOKEN, None)
    if not isinstance(made, dict) or made.get("workspace") != p.workspace:
        made = None
    return page(request, contexts.TokenPage(ws=p, token=made))


@router.post("/w/{workspace}/tokens/{token_id}/revoke")
def revoke_token(member: MemberDep, workspace: str, token_id: RowId) -> Response:
    with member.in_workspace(workspace) as (s, p):
        accounts.revoke_token(p, token_id, session=s)
    return _to(f"/w/{quote(workspace)}#tokens")


def _subscription(p: Principal, entitlement_id: int, s: Session) -> EntitlementInfo:
    for held in entitlements.list_entitlements(p, session=s):
        if held.id == entitlement_id and held.kind is OrderKind.SUBSCRIPTION:
            return held
    raise StoreNotFoundError(f"no subscription {entitlement_id}")


@router.get("/w/{workspace}/entitlements/{entitlement_id}/cancel", response_class=HTMLResponse)
def cancel_form(
    request: Request, member: MemberDep, workspace: str, entitlement_id: RowId
) -> HTMLResponse:
    """The confirmation step: what cancelling keeps and what it stops."""
    with member.in_workspace(workspace) as (s, p):
        held = _subscription(p, entitlement_id, s)
    return page(request, contexts.CancelPage(ws=p, e=held))


@router.post("/w/{workspace}/entitlements/{entitlement_id}/cancel")
def cancel(
    member: MemberDep, workspace: str, entitlement_id: RowId, confirm: OptionalText = ""
) -> Response:
    """Cancels only with the confirmation page's ``confirm=yes``; otherwise shows that page."""
    if confirm != "yes":
        return _to(f"/w/{quote(workspace)}/entitlements/{entitlement_id}/cancel")
    with member.in_workspace(workspace) as (s, p):
        entitlements.cancel_subscription(p, entitlement_id, session=s)
    return _to(f"/w/{quote(workspace)}#entitlements")


@router.get("/w/{workspace}/downloads/{package_id}/{version}")
def download(
    member: MemberDep, workspace: str, package_id: str, version: str, head: HeadDep
) -> Response:
    """The kit of a held version; logged like every download (a HEAD
    is answered alike and not logged)."""
    with member.in_workspace(workspace) as (s, p):
        kits = member.store.kits_dir
        kit = entitlements.download(
            p, package_id, version, kits_dir=kits, session=s, logged=not head
        )
    return kit_response(kit, NO_STORE)


@router.get("/w/{workspace}/orders", response_class=HTMLResponse)
def orders_page(request: Request, member: MemberDep, workspace: str) -> HTMLResponse:
    """The workspace's order history, newest first, each with its receipt."""
    with member.in_workspace(workspace) as (s, p):
        orders = checkout.workspace_orders(p, session=s)
    return page(request, contexts.OrdersPage(ws=p, orders=orders))


@router.get("/w/{workspace}/orders/{order_id}", response_class=HTMLResponse)
def order_page(
    request: Request, member: MemberDep, workspace: str, order_id: RowId
) -> HTMLResponse:
    """The receipt of one order."""
    with member.in_workspace(workspace) as (s, p):
        order = checkout.workspace_order(p, order_id, session=s)
        held = order.version in _held_versions(p, order.package_id, s)
        ver = publishing.version_info(
            publishing.get_version(order.package_id, order.version, session=s)
        )
    signing = _signing(request, order.package_id, order.version)
    context = contexts.OrderPage(ws=p, order=order, held=held, v=ver, signing=signing)
    return page(request, context)


# --- buying ---------------------------------------------------------------------------


def _held_versions(p: Principal, package_id: str, s: Session) -> set[str]:
    return {v.version for v in entitlements.downloadable(p, package_id, session=s)}


def _buy_page(
    request: Request,
    s: Session,
    uid: int,
    package_id: str,
    version: str,
    error: Error | None = None,
    chosen: dict[str, str] | None = None,
) -> HTMLResponse:
    """Which workspaces already hold the version (with its download), and the quote form
    for those that may buy it."""
    ver = publishing.version_info(publishing.get_version(package_id, version, session=s))
    owned, buyers = [], []
    for slug, name, role in accounts.workspaces_of(uid, session=s):
        p = accounts.principal_for_user(uid, slug, session=s)
        if version in _held_versions(p, package_id, s):
            owned.append((slug, name))
        if role in accounts.BUYING_ROLES:  # an owner of the version may add maintenance
            buyers.append((slug, name, checkout.maintenance_offer(p, ver, session=s)))
    # when every workspace that may buy owns the version already, maintenance is what is left
    left = OrderKind.SUBSCRIPTION if {b[0] for b in buyers} <= {o[0] for o in owned} else None
    context = contexts.BuyPage(
        v=ver,
        owned=owned,
        workspaces=buyers,
        chosen=chosen or {"workspace": "", "kind": (left or OrderKind.PURCHASE).value},
        nothing_left=left is not None and ver.maintenance_cents is None,
        signing=_signing(request, package_id, version),
        error=error,
    )
    return _refused(request, context)


@router.get("/buy/{package_id}/{version}", response_class=HTMLResponse)
def buy(request: Request, member: MemberDep, package_id: str, version: str) -> Response:
    """Choose the workspace (and purchase or maintenance) to quote for."""
    if not member.signed_in:
        return _to("/signin?next=" + quote(f"/buy/{package_id}/{version}"))
    with member.transaction() as (s, uid):
        return _buy_page(request, s, uid, package_id, version)


@router.post("/quotes")
def new_quote(
    request: Request,
    member: MemberDep,
    workspace: Text,
    package_id: Text,
    version: Text,
    kind: Text,
) -> Response:
    """Price the version: nothing is charged until the quote is confirmed. A refusal (the
    workspace holds it already, maintenance without the version) shows the buy page again."""
    order_kind = form_choice(OrderKind, kind, "kind")  # not a choice the form offers: a 422
    form_text(package_id, "package id")
    form_text(version, "version")
    form_text(workspace, "workspace")
    with member.transaction() as (s, uid):
        try:
            with s.begin_nested():
                p = accounts.principal_for_user(uid, workspace, session=s)
                q = checkout.create_quote(p, package_id, version, order_kind, session=s)
        except Error as exc:
            chosen = {"workspace": workspace, "kind": kind}
            return _buy_page(request, s, uid, package_id, version, error=exc, chosen=chosen)
    return _to(f"/w/{quote(workspace)}/quotes/{q.id}")


def _quote_page(
    request: Request,
    s: Session,
    p: Principal,
    quote_id: int,
    key: str,
    error: Error | None = None,
) -> HTMLResponse:
    q = checkout.get_quote(p, quote_id, session=s)
    ver = publishing.get_version(q.package_id, q.version, session=s)
    context = contexts.QuotePage(
        ws=p,
        q=q,
        v=publishing.version_info(ver),
        notes=checkout.quote_notes(p, q, session=s),
        signed=licences.signature_for(p.workspace_id, ver.id, session=s) is not None,
        idempotency_key=key,
        signing=_signing(request, q.package_id, q.version),
        error=error,
    )
    return _refused(request, context)


@router.get("/w/{workspace}/quotes/{quote_id}", response_class=HTMLResponse)
def quote_page(
    request: Request, member: MemberDep, workspace: str, quote_id: RowId
) -> HTMLResponse:
    """The quote, what the workspace already has of it, and the explicit confirm (its
    idempotency key in a hidden field)."""
    with member.in_workspace(workspace) as (s, p):
        return _quote_page(request, s, p, quote_id, secrets.token_urlsafe(24))


@router.post("/w/{workspace}/quotes/{quote_id}/confirm")
def confirm(
    request: Request,
    member: MemberDep,
    provider: ProviderDep,
    workspace: str,
    quote_id: RowId,
    idempotency_key: Text,
) -> Response:
    """Charge once per idempotency key (a second submit of the form replays the order)."""
    form_text(idempotency_key, "idempotency key", KEY_MAX)  # not one the form wrote: a 422
    with member.in_workspace(workspace) as (s, p):
        try:
            with s.begin_nested():
                order = checkout.confirm(p, quote_id, idempotency_key, provider=provider, session=s)
        except Error as exc:
            return _quote_page(request, s, p, quote_id, idempotency_key, error=exc)
    return _to(f"/w/{quote(workspace)}/orders/{order.id}")


@router.get("/w/{workspace}/licence/{package_id}/{version}", response_class=HTMLResponse)
def licence_form(
    request: Request,
    member: MemberDep,
    workspace: str,
    package_id: str,
    version: str,
    quote_id: Annotated[int, Query(ge=0, le=MAX_ID)] = 0,
) -> HTMLResponse:
    """The enterprise licence: the full terms with their sha256 and four affirmations."""
    with member.in_workspace(workspace) as (s, p):
        terms = licences.terms_for(package_id, version, session=s)
    kept = dict.fromkeys(licence.FORM_FIELDS, "")
    return page(request, contexts.LicencePage(ws=p, terms=terms, quote_id=quote_id, kept=kept))


@router.post("/w/{workspace}/licence/{package_id}/{version}")
async def sign_licence(
    request: Request, member: MemberDep, workspace: str, package_id: str, version: str
) -> Response:
    """The form's fields make the same :class:`~servekit.web.licence.LicenceSignatureRequest`
    as the API's body; a refusal shows the form again with what was typed."""
    form = await request.form()

    def field(name: str) -> str:
        value = form.get(name)
        return value.strip() if isinstance(value, str) else ""

    kept = {name: field(name) for name in licence.FORM_FIELDS}
    affirmed = {c for c in Clause if field(f"affirm_{c.value}") == "yes"}
    quote_id = field("quote_id")
    agent = request.headers.get("user-agent", "")
    with member.in_workspace(workspace) as (s, p):
        try:
            with s.begin_nested():
                signed = licence.from_form(
                    package_id, version, kept, affirmed, field("terms_sha256")
                )
                signed.sign(p, client=_client(request), user_agent=agent, session=s)
        except Error as exc:
            context = contexts.LicencePage(
                ws=p,
                terms=licences.terms_for(package_id, version, session=s),
                quote_id=int(quote_id) if quote_id.isdigit() else 0,
                kept=kept,
                affirmed=affirmed,
                error=exc,
            )
            return _refused(request, context)
    if quote_id.isdigit() and quote_id != "0":
        return _to(f"/w/{quote(workspace)}/quotes/{quote_id}")
    return _to(f"/w/{quote(workspace)}")


def _credentials(email: str, password: str) -> None:
    """Bounds on a sign-up or sign-in form's email and password (before any hashing)."""
    form_text(email, "email", EMAIL_MAX)
    if len(password) > PASSWORD_MAX:
        raise UsageError(
            f"the password is {len(password)} characters long; at most {PASSWORD_MAX} are accepted",
            hint="choose a shorter password",
        )
