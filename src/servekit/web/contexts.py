"""One frozen, typed context per store page: what its template may name.

A page handler builds one of these and hands it to :func:`servekit.web.pages.page`; the
template sees its fields, the :class:`~servekit.web.pages.Frame` (navigation, CSRF token,
test mode) as ``frame``, and the environment's globals. A contract test renders every
store template with its context type and fails when a template names a variable its
context lacks (``tests/web/test_page_contexts.py``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import ClassVar

from servekit.errors import Error
from servekit.kit.archive import kit_filename
from servekit.store.models import Clause, Role
from servekit.store.results import (
    EntitlementInfo,
    LicenceTerms,
    OrderInfo,
    Principal,
    QuoteInfo,
    TokenInfo,
    VersionInfo,
)
from servekit.web.keys import StoreKey


@dataclass(frozen=True, kw_only=True)
class PageContext:
    """The values one template renders (its fields, by name)."""

    template: ClassVar[str]

    def values(self) -> dict[str, object]:
        """The fields as the template's variables (not copied: the models are frozen)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True, kw_only=True)
class FormPage(PageContext):
    """A page with a form that may come back refused: the error shown beside it."""

    error: Error | None = None


@dataclass(frozen=True, kw_only=True)
class Signing:
    """The store's key id to compare out of band (None: no key yet) and the address to
    fetch its trust file from (``store/_signing_key.html``)."""

    key_id: str | None
    origin: str
    package_id: str | None = None  # the version the page is about, when it is about one
    version: str | None = None

    @property
    def kit_file(self) -> str:
        """The name the kit downloads as (a placeholder on a page about several)."""
        if self.package_id is None or self.version is None:
            return "KIT.tar.gz"
        return kit_filename(self.package_id, self.version)

    @property
    def expect(self) -> str | None:
        """``ID@VERSION`` for ``--expect``: the kit must be the one the page sold."""
        if self.package_id is None or self.version is None:
            return None
        return f"{self.package_id}@{self.version}"


@dataclass(frozen=True, kw_only=True)
class SigningKeyPage(PageContext):
    """A page that leads to a download, with the key its kits are signed with."""

    signing: Signing


@dataclass(frozen=True, kw_only=True)
class ErrorPage(PageContext):
    """Every HTML error: the status, what went wrong, what to do next."""

    template: ClassVar[str] = "store/error.html"
    code: int
    message: str
    hint: str = ""


@dataclass(frozen=True, kw_only=True)
class SignupPage(FormPage):
    template: ClassVar[str] = "store/signup.html"
    next: str
    email: str = ""
    workspace: str = ""


@dataclass(frozen=True, kw_only=True)
class SigninPage(FormPage):
    template: ClassVar[str] = "store/signin.html"
    next: str
    email: str = ""
    signed_up: bool = False


@dataclass(frozen=True, kw_only=True)
class SignoutPage(PageContext):
    template: ClassVar[str] = "store/signout.html"


@dataclass(frozen=True, kw_only=True)
class AccountPage(PageContext):
    template: ClassVar[str] = "store/account.html"
    workspaces: Sequence[tuple[str, str, Role]]


@dataclass(frozen=True, kw_only=True)
class WorkspacePage(FormPage, SigningKeyPage):
    template: ClassVar[str] = "store/workspace.html"
    ws: Principal
    members: Sequence[tuple[str, Role]]
    entitlements: Sequence[EntitlementInfo]
    undeployable: Collection[tuple[str, str]]  # (package id, version): placeholder commit
    tokens: Sequence[TokenInfo]
    member_email: str = ""
    roles: Sequence[Role] = tuple(Role)
    default_role: Role = Role.MEMBER


@dataclass(frozen=True, kw_only=True)
class TokenPage(PageContext):
    template: ClassVar[str] = "store/token.html"
    ws: Principal
    token: Mapping[str, str] | None  # name and secret, shown once; None once shown


@dataclass(frozen=True, kw_only=True)
class CancelPage(PageContext):
    template: ClassVar[str] = "store/cancel.html"
    ws: Principal
    e: EntitlementInfo


@dataclass(frozen=True, kw_only=True)
class OrdersPage(PageContext):
    template: ClassVar[str] = "store/orders.html"
    ws: Principal
    orders: Sequence[OrderInfo]


@dataclass(frozen=True, kw_only=True)
class OrderPage(SigningKeyPage):
    template: ClassVar[str] = "store/order.html"
    ws: Principal
    order: OrderInfo
    held: bool
    v: VersionInfo


@dataclass(frozen=True, kw_only=True)
class BuyPage(FormPage, SigningKeyPage):
    template: ClassVar[str] = "store/buy.html"
    v: VersionInfo
    owned: Sequence[tuple[str, str]]  # (slug, name) of the workspaces that hold it
    workspaces: Sequence[tuple[str, str, str | None]]  # (slug, name, why no maintenance)
    chosen: Mapping[str, str]  # the form's workspace and kind
    nothing_left: bool


@dataclass(frozen=True, kw_only=True)
class QuotePage(FormPage, SigningKeyPage):
    template: ClassVar[str] = "store/quote.html"
    ws: Principal
    q: QuoteInfo
    v: VersionInfo
    notes: Sequence[str]
    signed: bool
    idempotency_key: str


@dataclass(frozen=True, kw_only=True)
class LicencePage(FormPage):
    template: ClassVar[str] = "store/licence.html"
    ws: Principal
    terms: LicenceTerms
    quote_id: int
    kept: Mapping[str, str]
    affirmed: Collection[Clause] = ()


@dataclass(frozen=True, kw_only=True)
class KeysPage(PageContext):
    """``/keys``: on the catalog's frame, not the store's (no session, cacheable)."""

    template: ClassVar[str] = "keys/keys.html"
    keys: Sequence[StoreKey]
    origin: str
    live: bool = True


STORE_PAGES: tuple[type[PageContext], ...] = (
    ErrorPage,
    SignupPage,
    SigninPage,
    SignoutPage,
    AccountPage,
    WorkspacePage,
    TokenPage,
    CancelPage,
    OrdersPage,
    OrderPage,
    BuyPage,
    QuotePage,
    LicencePage,
)
"""Every page rendered in the store's frame (``store/_layout.html``)."""
