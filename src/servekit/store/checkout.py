"""Checkout: a quote, then an explicit, idempotent confirm; refunds.

Nothing is charged before confirm. Confirm, step by step (one transaction):
  1. lock the workspace row (PostgreSQL ``FOR UPDATE``; SQLite's ``BEGIN IMMEDIATE``
     already serializes writers): concurrent confirms of a workspace queue here;
  2. an order under the same workspace and idempotency key answers the retry: the same
     result for the same request, :class:`IdempotencyConflictError` for another;
  3. the quote must be the workspace's and unexpired, its version still for sale, and not
     already held (a live purchase, or an active subscription to the package); maintenance
     needs the purchased version it adds to (:data:`MAINTENANCE_RULE`), and a version whose
     model commit is a placeholder is sold only through a test provider;
  4. a version that requires a licence needs the workspace's signature for it; 2, 3 and
     4 are read in one statement, which also takes the ids of the rows to write;
  5. charge through the provider with the key (price 0: no charge and no journal entry);
  6. write the order, the entitlement (the database refuses a licensed one without its
     signature), the subscription for maintenance, an outbox message and the sale's
     journal entry, which the ledger writes and seals (:func:`servekit.store.ledger.record`:
     one INSERT on PostgreSQL, one per table on SQLite, then the seal, which the
     database refuses unless the entry balances).

Refunds lock the order row, record each refund (and its reversal entry) once, never more
than is left of the order, and revoke the entitlement only with the refund that completes
the order's (:func:`refund_order`, :func:`apply_provider_refund`; docs/store.md, Refunds).
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
from typing import TYPE_CHECKING, Any, NamedTuple

from sqlalchemy import (
    ColumnElement,
    Connection,
    Integer,
    Select,
    SQLColumnExpression,
    Table,
    bindparam,
    func,
    select,
)
from sqlalchemy.orm import Session

from servekit.errors import (
    AlreadyOwnedError,
    IdempotencyConflictError,
    NotForSaleError,
    StoreConflictError,
    StoreNotFoundError,
)
from servekit.receipts.canonical import canonical_json
from servekit.store import ledger, outbox
from servekit.store.accounts import require_buyer
from servekit.store.db import Rows, next_id
from servekit.store.entitlements import downloadable, entitlement_row, licence_gate
from servekit.store.licences import latest_signature
from servekit.store.models import (
    Base,
    Entitlement,
    Order,
    OrderKind,
    OrderStatus,
    OutboxMessage,
    PackageVersion,
    Quote,
    Refund,
    Subscription,
    Workspace,
    utcnow,
)
from servekit.store.providers import TEST_PROVIDERS as TEST_PROVIDERS  # the pages read it here
from servekit.store.publishing import get_version, latest_version
from servekit.store.results import OrderInfo, Principal, QuoteInfo, VersionInfo

if TYPE_CHECKING:
    from servekit.store.providers import PaymentProvider

QUOTE_TTL = dt.timedelta(hours=1)
PERIOD = dt.timedelta(days=365)
MAINTENANCE_RULE = (
    "Maintenance is an add-on to a version you bought: it cannot be bought alone. While it "
    "runs, each newer version the publisher releases is delivered to the workspace; "
    "cancelling stops delivery at the end of the paid year and keeps every version "
    "delivered until then. Why: maintenance pays for what comes next, not for the "
    "version you already have, so it is never a cheaper way to buy that version."
)
PLACEHOLDER_RULE = (
    "Its model commit is a placeholder, not a real commit: the kit cannot be deployed "
    "(its launch pins a revision that does not exist). It is sold only in test mode."
)


def _quote_info(row: Quote, ver: PackageVersion) -> QuoteInfo:
    return QuoteInfo(
        id=row.id,
        package_id=ver.package_id,
        version=ver.version,
        kind=row.kind,
        currency=row.currency,
        amount_cents=row.amount_cents,
        licence_required=row.licence_required,
        expires_at=row.expires_at,
    )


def _active_subscriptions(
    workspace_id: int | ColumnElement[int],
    package_id: str | SQLColumnExpression[str],
    now: dt.datetime | ColumnElement[dt.datetime],
) -> Select[tuple[Subscription]]:
    """A workspace's running subscriptions to a package: paid up to after ``now``, not
    refunded, not ended (cancelled, or its renewal failed). Between its period end and
    the renewal run a subscription is lapsed: it grants nothing released meanwhile."""
    return (
        select(Subscription)
        .join(Entitlement, Entitlement.id == Subscription.entitlement_id)
        .where(
            Subscription.workspace_id == workspace_id,
            Subscription.package_id == package_id,
            Subscription.period_end > now,
            Subscription.ended_at.is_(None),
            Entitlement.revoked_at.is_(None),
        )
    )


def active_subscription(
    workspace_id: int, package_id: str, *, session: Session, now: dt.datetime | None = None
) -> Subscription | None:
    return session.scalar(_active_subscriptions(workspace_id, package_id, now or utcnow()))


def _bought(workspace_id: int, package_id: str, version: str, session: Session) -> bool:
    """The workspace holds a live purchase of the version (a version its maintenance
    delivered is kept, but not bought: maintenance cannot be added to it)."""
    return (
        session.scalar(
            select(Entitlement.id)
            .join(PackageVersion, PackageVersion.id == Entitlement.version_id)
            .where(
                Entitlement.workspace_id == workspace_id,
                PackageVersion.package_id == package_id,
                PackageVersion.version == version,
                Entitlement.kind == OrderKind.PURCHASE,
                Entitlement.revoked_at.is_(None),
            )
            .limit(1)
        )
        is not None
    )


def _refuse_held(workspace_id: int, ver: PackageVersion, kind: OrderKind, session: Session) -> None:
    holds_purchase = _bought(workspace_id, ver.package_id, ver.version, session)
    holds_subscription = kind is OrderKind.SUBSCRIPTION and (
        active_subscription(workspace_id, ver.package_id, session=session) is not None
    )
    _refuse_owned(kind, ver.package_id, ver.version, holds_purchase, holds_subscription)


def _refuse_owned(
    kind: OrderKind, package_id: str, version: str, holds_purchase: bool, holds_subscription: bool
) -> None:
    """A purchase of a version the workspace bought is refused; so is maintenance the
    workspace has, or maintenance without the version it adds to (:data:`MAINTENANCE_RULE`)."""
    match kind:
        case OrderKind.SUBSCRIPTION:
            if holds_subscription:
                raise AlreadyOwnedError(
                    f"the workspace already has an active subscription to {package_id}",
                    hint="it renews each year; cancel it from the workspace page",
                )
            if not holds_purchase:
                raise StoreConflictError(
                    f"maintenance for {package_id} is an add-on to a purchased version: "
                    f"the workspace does not own {package_id} {version}, the current version",
                    hint=f"buy {package_id} {version} first, then add maintenance",
                )
        case OrderKind.PURCHASE:
            if holds_purchase:
                raise AlreadyOwnedError(
                    f"the workspace already owns {package_id} {version}",
                    hint="download it; a version is bought once per workspace",
                )


def _price(ver: PackageVersion, kind: OrderKind) -> int:
    match kind:
        case OrderKind.PURCHASE:
            return ver.price_cents
        case OrderKind.SUBSCRIPTION:
            if ver.maintenance_cents is None:
                raise NotForSaleError(f"{ver.package_id} offers no maintenance subscription")
            return ver.maintenance_cents


def _for_sale(package_id: str, version: str, retract_reason: str | None, retracted: bool) -> None:
    if retracted:
        raise NotForSaleError(
            f"{package_id} {version} was retracted: {retract_reason}",
            hint="choose a later version",
        )


def create_quote(
    principal: Principal,
    package_id: str,
    version: str | None,
    kind: OrderKind,
    *,
    session: Session,
) -> QuoteInfo:
    """Price a purchase (an exact version) or a subscription (the latest version)."""
    ver = (
        get_version(package_id, version, session=session)
        if version and kind is OrderKind.PURCHASE
        else latest_version(package_id, session=session)
    )
    if ver is None:
        raise StoreNotFoundError(f"no version of {package_id} is for sale")
    _for_sale(ver.package_id, ver.version, ver.retract_reason, ver.retracted_at is not None)
    _refuse_held(principal.workspace_id, ver, kind, session)
    row = Quote(
        workspace_id=principal.workspace_id,
        version_id=ver.id,
        kind=kind,
        currency=ver.currency,
        amount_cents=_price(ver, kind),
        licence_required=ver.licence_required,
        expires_at=utcnow() + QUOTE_TTL,
    )
    session.add(row)
    session.flush()
    return _quote_info(row, ver)


def maintenance_offer(principal: Principal, ver: VersionInfo, *, session: Session) -> str | None:
    """Why the workspace cannot add maintenance to ``ver`` now, or None when it can."""
    if ver.maintenance_cents is None:
        return "this package offers no maintenance"
    latest = latest_version(ver.package_id, session=session)
    if latest is None or latest.version != ver.version:
        return "maintenance is added to the current version only"
    if active_subscription(principal.workspace_id, ver.package_id, session=session):
        return "the workspace has maintenance for this package already"
    if not _bought(principal.workspace_id, ver.package_id, ver.version, session):
        return "buy this version first: maintenance is an add-on to it"
    return None


def _held(principal: Principal, package_id: str, session: Session) -> set[str]:
    return {v.version for v in downloadable(principal, package_id, session=session)}


def quote_notes(principal: Principal, quote: QuoteInfo, *, session: Session) -> list[str]:
    """What the buyer should know before confirming: what the workspace already has of
    it, and whether its kit can be deployed."""
    notes = []
    if quote.kind is OrderKind.PURCHASE and quote.version in _held(
        principal, quote.package_id, session
    ):
        notes.append(
            f"This workspace already has {quote.package_id} {quote.version} (delivered by "
            "its maintenance subscription): buying it again pays twice for a version you "
            "can download now."
        )
    if quote.kind is OrderKind.SUBSCRIPTION:
        notes.append(MAINTENANCE_RULE)
    if get_version(quote.package_id, quote.version, session=session).placeholder_commit:
        notes.append(PLACEHOLDER_RULE)
    return notes


def _refuse_placeholder(version_id: int, provider: PaymentProvider, session: Session) -> None:
    """A placeholder model commit is sold only through a test provider. Asked only of a
    provider that charges: a test confirm keeps its four statements (docs/performance.md),
    and a real charge waits on the provider far longer than on one primary-key read."""
    if provider.name in TEST_PROVIDERS:
        return
    ver = session.get_one(PackageVersion, version_id)
    if ver.placeholder_commit:
        raise NotForSaleError(
            f"{ver.package_id} {ver.version} is sold only in test mode: its model commit "
            "is a placeholder, so its kit cannot be deployed",
            hint="the publisher must pin the real commit (servekit model pin) and publish "
            "a new version",
        )


def workspace_orders(principal: Principal, *, session: Session) -> list[OrderInfo]:
    """Every order of the principal's workspace, newest first."""
    rows = session.scalars(
        select(Order).where(Order.workspace_id == principal.workspace_id).order_by(Order.id.desc())
    )
    return [order_info(order, session=session) for order in rows]


def get_quote(principal: Principal, quote_id: int, *, session: Session) -> QuoteInfo:
    row = session.get(Quote, quote_id)
    if row is None or row.workspace_id != principal.workspace_id:
        raise StoreNotFoundError(f"no quote {quote_id}")
    return _quote_info(row, session.get_one(PackageVersion, row.version_id))


def order_info(order: Order, *, session: Session, entitlement_id: int | None = None) -> OrderInfo:
    ver = session.get_one(PackageVersion, order.version_id)
    ent = entitlement_id or session.scalar(
        select(Entitlement.id).where(Entitlement.order_id == order.id)
    )
    assert ent is not None  # written in the same transaction as the order
    return OrderInfo(
        id=order.id,
        package_id=ver.package_id,
        version=ver.version,
        kind=order.kind,
        status=order.status,
        currency=order.currency,
        amount_cents=order.amount_cents,
        provider=order.provider,
        payment_ref=order.payment_ref,
        signature_id=order.signature_id,
        entitlement_id=ent,
        created_at=order.created_at,
        refunded_cents=refunded_cents(order.id, session=session),
    )


def workspace_order(principal: Principal, order_id: int, *, session: Session) -> OrderInfo:
    """An order of the principal's workspace; any other answers "not found"."""
    order = session.get(Order, order_id)
    if order is None or order.workspace_id != principal.workspace_id:
        raise StoreNotFoundError(f"no order {order_id}")
    return order_info(order, session=session)


def _request_sha(quote_id: int) -> str:
    return hashlib.sha256(canonical_json({"quote_id": quote_id})).hexdigest()


def _replay(principal: Principal, key: str, digest: str, session: Session) -> OrderInfo | None:
    order = session.scalar(
        select(Order).where(
            Order.workspace_id == principal.workspace_id, Order.idempotency_key == key
        )
    )
    if order is None:
        return None
    if order.request_sha256 != digest:
        raise IdempotencyConflictError(
            f"idempotency key {key!r} was used for a different request",
            hint="use a new key for a new purchase",
        )
    return order_info(order, session=session)


def _table(model: type[Base]) -> Table:
    table = model.__table__
    assert isinstance(table, Table)
    return table


ORDERS = _table(Order)
ENTITLEMENTS = _table(Entitlement)
SUBSCRIPTIONS = _table(Subscription)
OUTBOX = _table(OutboxMessage)
_LOCK = select(Workspace.id).where(Workspace.id == bindparam("ws")).with_for_update()


def _lock_workspace(workspace_id: int, conn: Connection) -> None:
    """PostgreSQL: lock the workspace row. SQLite: ``BEGIN IMMEDIATE`` already holds the
    database's one write lock for the whole transaction, so there is nothing to add."""
    if conn.dialect.name != "sqlite":
        conn.execute(_LOCK, {"ws": workspace_id})


class _Facts(NamedTuple):
    """Everything confirm checks, read in one statement after the workspace lock, and
    the ids its rows will have."""

    quote_workspace: int
    kind: OrderKind
    currency: str
    amount_cents: int
    licence_required: bool
    expires_at: dt.datetime
    version_id: int
    package_id: str
    version: str
    retracted_at: dt.datetime | None
    retract_reason: str | None
    replay_order: int | None
    holds_purchase: bool
    holds_subscription: bool
    signature_id: int | None
    order_id: int
    entry_id: int
    entitlement_id: int


@functools.cache
def _facts_query(dialect: str) -> Select[Any]:
    """The facts read, built once per dialect; parameters ``ws``, ``key``, ``quote``, ``now``.

    One statement instead of six: it runs after the lock, so on PostgreSQL (read
    committed) it sees every confirm of this workspace that committed before ours. It
    also takes the ids of the order, its journal entry and its entitlement, so that they
    are written together in one statement.
    """
    ws = bindparam("ws", type_=Integer)
    replay = (
        select(Order.id)
        .where(Order.workspace_id == ws, Order.idempotency_key == bindparam("key"))
        .scalar_subquery()
    )
    purchase = (
        select(Entitlement.id)
        .where(
            Entitlement.workspace_id == ws,
            Entitlement.version_id == Quote.version_id,
            Entitlement.kind == OrderKind.PURCHASE,
            Entitlement.revoked_at.is_(None),
        )
        .exists()
    )
    subscription = _active_subscriptions(ws, PackageVersion.package_id, bindparam("now")).exists()
    return (
        select(
            Quote.workspace_id,
            Quote.kind,
            Quote.currency,
            Quote.amount_cents,
            Quote.licence_required,
            Quote.expires_at,
            PackageVersion.id,
            PackageVersion.package_id,
            PackageVersion.version,
            PackageVersion.retracted_at,
            PackageVersion.retract_reason,
            replay,
            purchase,
            subscription,
            latest_signature(ws, Quote.version_id).scalar_subquery(),
            next_id(ORDERS, dialect),
            ledger.next_entry_id(dialect),
            next_id(ENTITLEMENTS, dialect),
        )
        .join(PackageVersion, PackageVersion.id == Quote.version_id)
        .where(Quote.id == bindparam("quote"))
    )


def _facts(principal: Principal, quote_id: int, key: str, conn: Connection) -> _Facts | None:
    """The quote, its version, an order already under ``key``, what the workspace holds,
    its signature for the version and the ids to write (:func:`_facts_query`)."""
    params = {"ws": principal.workspace_id, "key": key, "quote": quote_id, "now": utcnow()}
    row = conn.execute(_facts_query(conn.dialect.name), params).first()
    return None if row is None else _Facts(*row)


def _check(quote_id: int, facts: _Facts) -> None:
    """Step 3 on the facts read: the quote is open, the version for sale and not held."""
    if facts.expires_at <= utcnow():
        raise StoreConflictError(f"quote {quote_id} expired", hint="ask for a new quote")
    _for_sale(facts.package_id, facts.version, facts.retract_reason, facts.retracted_at is not None)
    _refuse_owned(
        facts.kind,
        facts.package_id,
        facts.version,
        bool(facts.holds_purchase),
        bool(facts.holds_subscription),
    )


def confirm(
    principal: Principal,
    quote_id: int,
    idempotency_key: str,
    *,
    provider: PaymentProvider,
    session: Session,
) -> OrderInfo:
    """Charge once and grant the entitlement (steps in the module doc).

    Four statements after BEGIN on PostgreSQL, in Core: the lock, the facts, one INSERT
    of every row (order, entitlement, subscription, outbox, journal entry and postings)
    and the seal of the journal entry (both by :func:`servekit.store.ledger.record`); on
    SQLite no lock and one INSERT per table. The ORM's unit of work cost more than the
    database did.
    """
    require_buyer(principal)
    digest = _request_sha(quote_id)
    session.flush()  # Core below skips the ORM's autoflush: the facts must see pending rows
    conn = session.connection()
    _lock_workspace(principal.workspace_id, conn)  # 1
    facts = _facts(principal, quote_id, idempotency_key, conn)
    retry = facts is None or facts.replay_order is not None  # 2: a retry, or no such quote
    if retry and (done := _replay(principal, idempotency_key, digest, session)) is not None:
        return done
    if facts is None or facts.quote_workspace != principal.workspace_id:
        raise StoreNotFoundError(f"no quote {quote_id}")
    _check(quote_id, facts)  # 3
    _refuse_placeholder(facts.version_id, provider, session)
    signature_id = licence_gate(  # 4, before anything is charged
        facts.package_id, facts.version, facts.licence_required, facts.signature_id
    )
    payment_ref = None
    if facts.amount_cents > 0:  # 5
        payment_ref = provider.charge(
            facts.amount_cents,
            facts.currency,
            idempotency_key=f"servekit:{principal.workspace_id}:{idempotency_key}",
            memo=f"{facts.package_id} {facts.version} ({facts.kind})",
        )
    now = utcnow()
    order = OrderInfo(
        id=facts.order_id,
        package_id=facts.package_id,
        version=facts.version,
        kind=facts.kind,
        status=OrderStatus.PAID,
        currency=facts.currency,
        amount_cents=facts.amount_cents,
        provider=provider.name if payment_ref is not None else None,
        payment_ref=payment_ref,
        signature_id=signature_id,
        entitlement_id=facts.entitlement_id,
        created_at=now,
    )
    writes: list[tuple[Table, Rows]] = [
        (ORDERS, [_order_row(principal, quote_id, idempotency_key, digest, facts, order)]),
        *_grant_rows(principal.workspace_id, facts, order),
    ]
    sale = (
        [
            ledger.sale_entry(
                facts.entry_id, order.id, order.amount_cents, order.currency, provider.name, now
            )
        ]
        if payment_ref is not None
        else []
    )
    ledger.record(sale, with_rows=writes, session=session)  # 6
    return order


def _order_row(
    principal: Principal, quote_id: int, key: str, digest: str, facts: _Facts, order: OrderInfo
) -> dict[str, Any]:
    return {
        "id": order.id,
        "workspace_id": principal.workspace_id,
        "user_id": principal.user_id,
        "quote_id": quote_id,
        "version_id": facts.version_id,
        "kind": order.kind,
        "currency": order.currency,
        "amount_cents": order.amount_cents,
        "idempotency_key": key,
        "request_sha256": digest,
        "status": order.status,
        "provider": order.provider,
        "payment_ref": order.payment_ref,
        "signature_id": order.signature_id,
        "created_at": order.created_at,
    }


def _grant_rows(workspace_id: int, facts: _Facts, order: OrderInfo) -> list[tuple[Table, Rows]]:
    """Step 6: the entitlement (built by the one gate,
    :func:`servekit.store.entitlements.entitlement_row`; the database refuses a licensed
    one without its signature), the subscription for maintenance, and the outbox message."""
    now = order.created_at
    version = (facts.version_id, facts.package_id, facts.version, facts.licence_required)
    ent = entitlement_row(
        order.entitlement_id, workspace_id, version, order.id, order.kind, order.signature_id, now
    )
    rows: list[tuple[Table, Rows]] = [(ENTITLEMENTS, ent)]
    if order.kind is OrderKind.SUBSCRIPTION:
        sub = {
            "workspace_id": workspace_id,
            "package_id": facts.package_id,
            "entitlement_id": order.entitlement_id,
            "started_at": now,
            "period_end": now + PERIOD,
            "cancel_at_period_end": False,
        }
        rows.append((SUBSCRIPTIONS, [sub]))
    payload = {
        "order_id": order.id,
        "entitlement_id": order.entitlement_id,
        "workspace": workspace_id,
    }
    rows.append((OUTBOX, [{"topic": "entitlement.granted", "payload": payload, "created_at": now}]))
    return rows


def _locked_order(order_id: int, session: Session) -> Order:
    """The order, its row locked for this transaction (PostgreSQL ``FOR UPDATE``; SQLite's
    ``BEGIN IMMEDIATE`` already holds the one write lock) and read afresh, so concurrent
    refunds of one order queue here and each sees what the one before it wrote."""
    session.flush()
    order = session.scalars(
        select(Order)
        .where(Order.id == order_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    ).one_or_none()
    if order is None:
        raise StoreNotFoundError(f"no order {order_id}")
    return order


def refunded_cents(order_id: int, *, session: Session) -> int:
    """What has been refunded of an order so far."""
    total = session.scalar(
        select(func.coalesce(func.sum(Refund.amount_cents), 0)).where(Refund.order_id == order_id)
    )
    return int(total or 0)


def _refund(
    order: Order, amount: int, reason: str, event_id: str | None, notify: bool, session: Session
) -> OrderInfo:
    """Record a refund of ``amount`` (at most what is left, checked by the caller and by the
    database): its reversal entry, and, when it completes the order's refund, the order
    marked refunded and its entitlement revoked (the policy: a partial refund revokes
    nothing). ``notify`` queues the provider refund in the outbox."""
    full = refunded_cents(order.id, session=session) + amount == order.amount_cents
    entry_id = None
    if amount > 0 and order.provider is not None and order.payment_ref is not None:
        entry_id = ledger.reversal(
            order.id, amount, order.currency, order.provider, session=session
        )
    row = Refund(
        order_id=order.id,
        amount_cents=amount,
        full_refund=full,
        provider_event_id=event_id,
        entry_id=entry_id,
        reason=reason,
        created_at=utcnow(),
    )
    session.add(row)
    session.flush()  # the database checks the bound, and the order's refund must exist first
    if full:
        order.status = OrderStatus.REFUNDED
        ent = session.scalars(select(Entitlement).where(Entitlement.order_id == order.id)).one()
        ent.revoked_at = row.created_at
        ent.revoke_reason = f"refunded: {reason}"
    if notify and entry_id is not None:
        assert order.provider is not None and order.payment_ref is not None  # entry_id
        key = f"servekit:refund:{order.id}:{row.id}"
        outbox.queue_refund(order.provider, order.payment_ref, amount, key, session=session)
    session.flush()
    return order_info(order, session=session)


def refund_order(
    order_id: int,
    reason: str,
    *,
    amount_cents: int | None = None,
    notify_provider: bool = True,
    session: Session,
) -> OrderInfo:
    """Refund what is left of an order, or ``amount_cents`` of it: reverse that much of its
    sale, queue the provider refund, and revoke the entitlement once it is all refunded.

    The order row is locked first, so a concurrent refund (an operator's, a provider
    event's) waits and then sees this one.
    """
    order = _locked_order(order_id, session)
    if order.status is OrderStatus.REFUNDED:
        raise StoreConflictError(f"order {order_id} is already refunded")
    left = order.amount_cents - refunded_cents(order.id, session=session)
    amount = left if amount_cents is None else amount_cents
    if amount > left or amount < 0 or (amount == 0 and left > 0):
        raise StoreConflictError(
            f"cannot refund {amount} cents of order {order_id}: "
            f"{left} of its {order.amount_cents} are left to refund",
            hint="refund more than 0 and at most what is left",
        )
    return _refund(order, amount, reason, None, notify_provider, session)


def apply_provider_refund(
    order_id: int, refunded_total: int, currency: str, event_id: str, *, session: Session
) -> OrderInfo | None:
    """Bring an order's refunded total up to ``refunded_total``, the amount the provider
    reports as refunded of its payment (cumulative, as Stripe's ``amount_refunded``):
    None when nothing is left to do (a refund we asked for, a reordered event).
    :class:`StoreConflictError` when the provider reports more than the order was paid or
    another currency."""
    order = _locked_order(order_id, session)
    if currency != order.currency or refunded_total > order.amount_cents:
        raise StoreConflictError(
            f"order {order_id} was paid {order.amount_cents} {order.currency}; the provider "
            f"reports {refunded_total} {currency} refunded",
            hint="reconcile the payment at the provider by hand",
        )
    delta = refunded_total - refunded_cents(order.id, session=session)
    if delta <= 0:
        return None
    return _refund(order, delta, "refunded at the provider", event_id, False, session)
