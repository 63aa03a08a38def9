"""The store's tables: SQLAlchemy 2 typed models on one base, portable column types.

Rows are storage; services return frozen pydantic results built from them. Every rule the
database itself enforces (append-only signatures, balanced journal entries, no enterprise
entitlement or download without a signature, refunds bounded by the sale) lives in the
migrations' triggers (``migrations/versions/0002_invariants.py``, ``0006_one_gate.py``);
docs/store.md lists each invariant and its place.
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Dialect,
    Enum,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Role(StrEnum):
    OWNER = "owner"
    BUYER = "buyer"
    MEMBER = "member"


class OrderKind(StrEnum):
    PURCHASE = "purchase"
    SUBSCRIPTION = "subscription"


class OrderStatus(StrEnum):
    PAID = "paid"
    REFUNDED = "refunded"


class Clause(StrEnum):
    """The four affirmations an enterprise signer makes, each its own row."""

    NO_REDISTRIBUTION = "no_redistribution"
    NO_RESALE = "no_resale"
    TRACEABILITY = "traceability"
    AUTHORITY = "authority"


class UTCDateTime(TypeDecorator[dt.datetime]):
    """Timezone-aware UTC on both databases (SQLite keeps no zone: it is restored on read)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect: Dialect) -> dt.datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("naive datetime given to the store; use datetime.now(UTC)")
        return value.astimezone(dt.UTC) if value is not None else None

    def process_result_value(self, value: Any, dialect: Dialect) -> dt.datetime | None:
        if value is None:
            return None
        assert isinstance(value, dt.datetime)
        return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)


PortableJSON = JSON().with_variant(JSONB(), "postgresql")
Id = BigInteger().with_variant(Integer(), "sqlite")  # SQLite only autoincrements INTEGER


def _enum(cls: type[StrEnum]) -> Enum:
    return Enum(cls, native_enum=False, length=32, values_callable=lambda e: [m.value for m in e])


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class Base(DeclarativeBase):
    pass


class User(Base):
    __tablename__ = "users"
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    email: Mapped[str] = mapped_column(String(320), unique=True)
    password_hash: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


class LoginSession(Base):
    __tablename__ = "sessions"
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    token_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())


class SignInFailure(Base):
    """A failed sign-in, by email and by client address: the rate limit counts these rows,
    so every worker and host limits together."""

    __tablename__ = "sign_in_failures"
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    email: Mapped[str] = mapped_column(String(320), index=True)
    client: Mapped[str] = mapped_column(String(64), index=True)
    at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Workspace(Base):
    __tablename__ = "workspaces"
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Membership(Base):
    __tablename__ = "memberships"
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), primary_key=True)
    role: Mapped[Role] = mapped_column(_enum(Role))


class ApiToken(Base):
    __tablename__ = "api_tokens"
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    name: Mapped[str] = mapped_column(String(200))
    prefix: Mapped[str] = mapped_column(String(16))
    token_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    revoked_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())


class PackageVersion(Base):
    """A published version: price and licence copied from package.yaml, kit by digest."""

    __tablename__ = "package_versions"
    __table_args__ = (UniqueConstraint("package_id", "version"),)
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    package_id: Mapped[str] = mapped_column(String(128), index=True)
    version: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(300))
    summary: Mapped[str] = mapped_column(Text)
    tier: Mapped[str] = mapped_column(String(32))
    currency: Mapped[str] = mapped_column(String(3), default="usd")
    price_cents: Mapped[int] = mapped_column(BigInteger)
    maintenance_cents: Mapped[int | None] = mapped_column(BigInteger)
    licence_required: Mapped[bool] = mapped_column(Boolean)
    licence_name: Mapped[str] = mapped_column(String(300))
    licence_text: Mapped[str] = mapped_column(Text)
    licence_sha256: Mapped[str] = mapped_column(String(64))
    kit_sha256: Mapped[str] = mapped_column(String(64))
    kit_bytes: Mapped[int] = mapped_column(BigInteger)
    # the model commit is a placeholder: the kit cannot be deployed, sold in test mode only
    placeholder_commit: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    kit_digest: Mapped[str] = mapped_column(String(80))
    key_id: Mapped[str] = mapped_column(String(64))
    published_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    # indexed: every page counts the retracted versions (publishing.publication_state)
    retracted_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), index=True)
    retract_reason: Mapped[str | None] = mapped_column(Text)


class Quote(Base):
    __tablename__ = "quotes"
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"), index=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("package_versions.id"))
    kind: Mapped[OrderKind] = mapped_column(_enum(OrderKind))
    currency: Mapped[str] = mapped_column(String(3))
    amount_cents: Mapped[int] = mapped_column(BigInteger)
    licence_required: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())


class LicenceSignature(Base):
    """Append-only and hash-chained: each row holds the hash of the one before it."""

    __tablename__ = "licence_signatures"
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger, unique=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"), index=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("package_versions.id"))
    licensed_entity: Mapped[str] = mapped_column(Text)
    authority_statement: Mapped[str] = mapped_column(Text)
    terms_text: Mapped[str] = mapped_column(Text)
    terms_sha256: Mapped[str] = mapped_column(String(64))
    personal_sha256: Mapped[str] = mapped_column(String(64))
    signed_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    prev_hash: Mapped[str] = mapped_column(String(64))
    row_hash: Mapped[str] = mapped_column(String(64), unique=True)


class LicenceAffirmation(Base):
    """One affirmation, with the exact clause text the signer was shown."""

    __tablename__ = "licence_affirmations"
    __table_args__ = (UniqueConstraint("signature_id", "clause"),)
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    signature_id: Mapped[int] = mapped_column(ForeignKey("licence_signatures.id"))
    clause: Mapped[Clause] = mapped_column(_enum(Clause))
    clause_text: Mapped[str] = mapped_column(Text)
    clause_sha256: Mapped[str] = mapped_column(String(64))


class LicenceSigner(Base):
    """Personal data of a signature: erasable without breaking the chain.

    The chained row keeps only a salted digest of this record; erasing the row (and so
    the salt) leaves nothing to recover the data from.
    """

    __tablename__ = "licence_signers"
    signature_id: Mapped[int] = mapped_column(ForeignKey("licence_signatures.id"), primary_key=True)
    signer_name: Mapped[str] = mapped_column(Text)
    signer_title: Mapped[str] = mapped_column(Text)
    ip: Mapped[str] = mapped_column(String(64))
    user_agent: Mapped[str] = mapped_column(Text)
    salt: Mapped[str] = mapped_column(String(64))


class Order(Base):
    __tablename__ = "orders"
    __table_args__ = (UniqueConstraint("workspace_id", "idempotency_key"),)
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    quote_id: Mapped[int] = mapped_column(ForeignKey("quotes.id"))
    version_id: Mapped[int] = mapped_column(ForeignKey("package_versions.id"))
    kind: Mapped[OrderKind] = mapped_column(_enum(OrderKind))
    currency: Mapped[str] = mapped_column(String(3))
    amount_cents: Mapped[int] = mapped_column(BigInteger)
    idempotency_key: Mapped[str] = mapped_column(String(200))
    request_sha256: Mapped[str] = mapped_column(String(64))
    status: Mapped[OrderStatus] = mapped_column(_enum(OrderStatus))
    provider: Mapped[str | None] = mapped_column(String(32))
    payment_ref: Mapped[str | None] = mapped_column(String(200), index=True)
    signature_id: Mapped[int | None] = mapped_column(ForeignKey("licence_signatures.id"))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


class JournalEntry(Base):
    """Postings count once the entry is sealed; sealing is refused unless they sum to zero."""

    __tablename__ = "journal_entries"
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    order_id: Mapped[int | None] = mapped_column(ForeignKey("orders.id"), index=True)
    memo: Mapped[str] = mapped_column(String(200))
    sealed: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Posting(Base):
    __tablename__ = "postings"
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    entry_id: Mapped[int] = mapped_column(ForeignKey("journal_entries.id"), index=True)
    account: Mapped[str] = mapped_column(String(200))
    currency: Mapped[str] = mapped_column(String(3))
    amount_cents: Mapped[int] = mapped_column(BigInteger)


class Refund(Base):
    """A reversal of all or part of an order, recorded once per provider event.

    The database refuses a refund that would take the order's refunded total above its
    amount, a second refund that closes the order (``full_refund``), and any change to a
    refund row (``0006_one_gate``).
    """

    __tablename__ = "refunds"
    __table_args__ = (
        Index(
            "uq_refunds_one_full",
            "order_id",
            unique=True,
            sqlite_where=text("full_refund = 1"),
            postgresql_where=text("full_refund"),
        ),
        CheckConstraint("amount_cents >= 0", name="ck_refunds_amount"),
    )
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    order_id: Mapped[int] = mapped_column(ForeignKey("orders.id"), index=True)
    amount_cents: Mapped[int] = mapped_column(BigInteger)
    full_refund: Mapped[bool] = mapped_column(Boolean)
    provider_event_id: Mapped[str | None] = mapped_column(String(200), unique=True)
    entry_id: Mapped[int | None] = mapped_column(ForeignKey("journal_entries.id"), unique=True)
    reason: Mapped[str] = mapped_column(Text)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Entitlement(Base):
    __tablename__ = "entitlements"
    __table_args__ = (
        Index(
            "uq_entitlements_live_purchase",
            "workspace_id",
            "version_id",
            unique=True,
            sqlite_where=text("kind = 'purchase' AND revoked_at IS NULL"),
            postgresql_where=text("kind = 'purchase' AND revoked_at IS NULL"),
        ),
    )
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"), index=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("package_versions.id"))
    order_id: Mapped[int] = mapped_column(ForeignKey("orders.id"), unique=True)
    kind: Mapped[OrderKind] = mapped_column(_enum(OrderKind))
    signature_id: Mapped[int | None] = mapped_column(ForeignKey("licence_signatures.id"))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    revoked_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    revoke_reason: Mapped[str | None] = mapped_column(Text)


class Subscription(Base):
    """Maintenance: the latest verified version while active, and what was released then."""

    __tablename__ = "subscriptions"
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"), index=True)
    package_id: Mapped[str] = mapped_column(String(128))
    entitlement_id: Mapped[int] = mapped_column(ForeignKey("entitlements.id"), unique=True)
    started_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    period_end: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    cancel_at_period_end: Mapped[bool] = mapped_column(Boolean, default=False)
    ended_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    end_reason: Mapped[str | None] = mapped_column(Text)


class RenewalOutcome(StrEnum):
    """What ``renew-due`` did with a subscription at its period end."""

    RENEWED = "renewed"
    CANCELLED = "cancelled"
    FAILED = "failed"
    SUPERSEDED = "superseded"


class Renewal(Base):
    """One period end of a subscription, handled once: renewed (with its sale entry) or
    ended. The unique period start makes a second run over the same period fail."""

    __tablename__ = "subscription_renewals"
    __table_args__ = (UniqueConstraint("subscription_id", "period_start"),)
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    subscription_id: Mapped[int] = mapped_column(ForeignKey("subscriptions.id"))
    period_start: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    outcome: Mapped[RenewalOutcome] = mapped_column(_enum(RenewalOutcome))
    period_end: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    currency: Mapped[str] = mapped_column(String(3))
    amount_cents: Mapped[int] = mapped_column(BigInteger)
    provider: Mapped[str | None] = mapped_column(String(32))
    payment_ref: Mapped[str | None] = mapped_column(String(200))
    entry_id: Mapped[int | None] = mapped_column(ForeignKey("journal_entries.id"), unique=True)
    detail: Mapped[str] = mapped_column(Text)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Download(Base):
    __tablename__ = "downloads"
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"), index=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("package_versions.id"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    token_id: Mapped[int | None] = mapped_column(ForeignKey("api_tokens.id"))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


class WebhookEvent(Base):
    """Processed provider events: a replayed event id changes nothing."""

    __tablename__ = "webhook_events"
    event_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    provider: Mapped[str] = mapped_column(String(32))
    type: Mapped[str] = mapped_column(String(100))
    received_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


class OutboxMessage(Base):
    """Side effects (mail, provider refunds) written in the transaction that causes them."""

    __tablename__ = "outbox"
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    topic: Mapped[str] = mapped_column(String(100))
    payload: Mapped[dict[str, Any]] = mapped_column(PortableJSON)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    sent_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
