"""Frozen results the store's services return: front ends render these, never ORM rows."""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, ConfigDict

from servekit.store.models import Clause, OrderKind, OrderStatus, RenewalOutcome, Role


class Result(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Principal(Result):
    """Who is asking: a user, in a workspace, with a role (and the token used, if any)."""

    user_id: int
    workspace_id: int
    workspace: str
    role: Role
    token_id: int | None = None


class NewToken(Result):
    """An API token: ``token`` is shown once and stored only as a hash."""

    id: int
    name: str
    workspace: str
    token: str


class TokenInfo(Result):
    id: int
    name: str
    prefix: str
    created_at: dt.datetime
    revoked: bool


class VersionInfo(Result):
    """A version as the catalog sells it."""

    package_id: str
    version: str
    name: str
    summary: str
    tier: str
    currency: str
    price_cents: int
    maintenance_cents: int | None
    licence_required: bool
    licence_name: str
    licence_sha256: str
    kit_sha256: str
    kit_bytes: int
    placeholder_commit: bool = False
    published_at: dt.datetime
    retracted: bool
    retract_reason: str | None = None


class PublishResult(Result):
    version: VersionInfo
    created: bool


class QuoteInfo(Result):
    id: int
    package_id: str
    version: str
    kind: OrderKind
    currency: str
    amount_cents: int
    licence_required: bool
    expires_at: dt.datetime


class LicenceTerms(Result):
    """What a signer is shown: the terms text, its hash and each clause to affirm."""

    package_id: str
    version: str
    terms_text: str
    terms_sha256: str
    clauses: dict[Clause, str]


class SignatureInfo(Result):
    id: int
    seq: int
    package_id: str
    version: str
    licensed_entity: str
    terms_sha256: str
    row_hash: str
    signed_at: dt.datetime


class OrderInfo(Result):
    id: int
    package_id: str
    version: str
    kind: OrderKind
    status: OrderStatus
    currency: str
    amount_cents: int
    provider: str | None
    payment_ref: str | None
    signature_id: int | None
    entitlement_id: int
    created_at: dt.datetime
    refunded_cents: int = 0  # refunds so far; status turns refunded once it is all


class EntitlementInfo(Result):
    id: int
    package_id: str
    version: str
    kind: OrderKind
    order_id: int
    active: bool
    revoked: bool
    retracted: bool
    period_end: dt.datetime | None = None
    cancel_at_period_end: bool = False
    downloadable: tuple[str, ...] = ()
    # versions a subscription would deliver once the workspace signs their licence
    sign_to_receive: tuple[str, ...] = ()


class KitDownload(Result):
    package_id: str
    version: str
    kit_sha256: str
    filename: str
    data: bytes


class Balance(Result):
    account: str
    currency: str
    amount_cents: int


class AuditReport(Result):
    signatures: int
    entries: int
    postings: int
    first_break: str | None

    @property
    def ok(self) -> bool:
        return self.first_break is None


class RenewalInfo(Result):
    """What ``renew-due`` did with one subscription at its period end."""

    subscription_id: int
    workspace_id: int
    package_id: str
    outcome: RenewalOutcome
    period_start: dt.datetime
    period_end: dt.datetime | None
    currency: str
    amount_cents: int
    payment_ref: str | None
    detail: str
