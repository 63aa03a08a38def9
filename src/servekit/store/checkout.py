"""Checkout: a quote, then an explicit, idempotent confirm; refunds.

Nothing is charged before confirm. Confirm, step by step (one transaction):
  1. an order under the same workspace and idempotency key answers the retry: the same
     result for the same request, :class:`IdempotencyConflictError` for another;
  2. lock the workspace row (PostgreSQL ``FOR UPDATE``; SQLite's ``BEGIN IMMEDIATE``
     already serializes writers) and look for the key again: concurrent confirms queue here;
  3. the quote must be the workspace's and unexpired, its version still for sale, and not
     already held (a live purchase, or an active subscription to the package);
  4. a version that requires a licence needs the workspace's signature for it;
  5. write the order; charge through the provider with the key (price 0: no charge and no
     journal entry) and post the sale to the ledger;
  6. write the entitlement (the database refuses a licensed one without its signature),
     the subscription for maintenance, and an outbox message.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.orm import Session

from servekit.errors import (
    AlreadyOwnedError,
    IdempotencyConflictError,
    LicenceRequiredError,
    NotForSaleError,
    StoreConflictError,
    StoreNotFoundError,
)
from servekit.receipts.canonical import canonical_json
from servekit.store import ledger
from servekit.store.accounts import require_buyer
from servekit.store.licences import signature_for
from servekit.store.models import (
    Entitlement,
    Order,
    OrderKind,
    OrderStatus,
    OutboxMessage,
    PackageVersion,
    Quote,
    Subscription,
    Workspace,
    utcnow,
)
from servekit.store.publishing import get_version, latest_version
from servekit.store.results import OrderInfo, Principal, QuoteInfo

if TYPE_CHECKING:
    from servekit.store.payments import PaymentProvider

QUOTE_TTL = dt.timedelta(hours=1)
PERIOD = dt.timedelta(days=365)


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


def active_subscription(
    workspace_id: int, package_id: str, *, session: Session, now: dt.datetime | None = None
) -> Subscription | None:
    return session.scalar(
        select(Subscription)
        .join(Entitlement, Entitlement.id == Subscription.entitlement_id)
        .where(
            Subscription.workspace_id == workspace_id,
            Subscription.package_id == package_id,
            Subscription.period_end > (now or utcnow()),
            Entitlement.revoked_at.is_(None),
        )
    )


def _refuse_held(workspace_id: int, ver: PackageVersion, kind: OrderKind, session: Session) -> None:
    if kind is OrderKind.SUBSCRIPTION:
        if active_subscription(workspace_id, ver.package_id, session=session) is not None:
            raise AlreadyOwnedError(
                f"the workspace already has an active subscription to {ver.package_id}"
            )
        return
    held = session.scalar(
        select(Entitlement.id).where(
            Entitlement.workspace_id == workspace_id,
            Entitlement.version_id == ver.id,
            Entitlement.kind == OrderKind.PURCHASE,
            Entitlement.revoked_at.is_(None),
        )
    )
    if held is not None:
        raise AlreadyOwnedError(
            f"the workspace already owns {ver.package_id} {ver.version}",
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


def _for_sale(ver: PackageVersion) -> None:
    if ver.retracted_at is not None:
        raise NotForSaleError(
            f"{ver.package_id} {ver.version} was retracted: {ver.retract_reason}",
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
    _for_sale(ver)
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


def _lock_workspace(workspace_id: int, session: Session) -> None:
    session.execute(select(Workspace.id).where(Workspace.id == workspace_id).with_for_update())


def _open_quote(principal: Principal, quote_id: int, session: Session) -> Quote:
    quote = session.get(Quote, quote_id)
    if quote is None or quote.workspace_id != principal.workspace_id:
        raise StoreNotFoundError(f"no quote {quote_id}")
    if quote.expires_at <= utcnow():
        raise StoreConflictError(f"quote {quote_id} expired", hint="ask for a new quote")
    return quote


def _signature(
    principal: Principal, quote: Quote, ver: PackageVersion, session: Session
) -> int | None:
    if not quote.licence_required:
        return None
    sig = signature_for(principal.workspace_id, ver.id, session=session)
    if sig is None:
        raise LicenceRequiredError(
            f"{ver.package_id} {ver.version} requires a signed licence before purchase",
            hint="read the terms and sign them first (POST .../licence-signatures)",
        )
    return sig


def confirm(
    principal: Principal,
    quote_id: int,
    idempotency_key: str,
    *,
    provider: PaymentProvider,
    session: Session,
) -> OrderInfo:
    """Charge once and grant the entitlement (steps in the module doc)."""
    require_buyer(principal)
    digest = _request_sha(quote_id)
    if (done := _replay(principal, idempotency_key, digest, session)) is not None:  # 1
        return done
    _lock_workspace(principal.workspace_id, session)  # 2
    if (done := _replay(principal, idempotency_key, digest, session)) is not None:
        return done
    quote = _open_quote(principal, quote_id, session)  # 3
    ver = session.get_one(PackageVersion, quote.version_id)
    _for_sale(ver)
    _refuse_held(principal.workspace_id, ver, quote.kind, session)
    signature_id = _signature(principal, quote, ver, session)  # 4
    payment_ref = None
    if quote.amount_cents > 0:  # 5
        payment_ref = provider.charge(
            quote.amount_cents,
            quote.currency,
            idempotency_key=f"servekit:{principal.workspace_id}:{idempotency_key}",
            memo=f"{ver.package_id} {ver.version} ({quote.kind})",
        )
    order = _write_order(principal, quote, idempotency_key, digest, signature_id, session)
    order.payment_ref = payment_ref
    order.provider = provider.name if payment_ref is not None else None
    session.flush()
    if payment_ref is not None:
        ledger.sale(order.id, quote.amount_cents, quote.currency, provider.name, session=session)
    entitlement_id = _grant(order, ver, session)  # 6
    return order_info(order, session=session, entitlement_id=entitlement_id)


def _write_order(
    principal: Principal,
    quote: Quote,
    key: str,
    digest: str,
    signature_id: int | None,
    session: Session,
) -> Order:
    order = Order(
        workspace_id=principal.workspace_id,
        user_id=principal.user_id,
        quote_id=quote.id,
        version_id=quote.version_id,
        kind=quote.kind,
        currency=quote.currency,
        amount_cents=quote.amount_cents,
        idempotency_key=key,
        request_sha256=digest,
        status=OrderStatus.PAID,
        signature_id=signature_id,
    )
    session.add(order)
    return order


def _grant(order: Order, ver: PackageVersion, session: Session) -> int:
    ent = Entitlement(
        workspace_id=order.workspace_id,
        version_id=ver.id,
        order_id=order.id,
        kind=order.kind,
        signature_id=order.signature_id,
    )
    session.add(ent)
    session.flush()
    if order.kind is OrderKind.SUBSCRIPTION:
        now = utcnow()
        session.add(
            Subscription(
                workspace_id=order.workspace_id,
                package_id=ver.package_id,
                entitlement_id=ent.id,
                started_at=now,
                period_end=now + PERIOD,
            )
        )
    session.add(
        OutboxMessage(
            topic="entitlement.granted",
            payload={
                "order_id": order.id,
                "entitlement_id": ent.id,
                "workspace": order.workspace_id,
            },
        )
    )
    session.flush()
    return ent.id


def refund_order(
    order_id: int, reason: str, *, notify_provider: bool = True, session: Session
) -> OrderInfo:
    """Refund an order: revoke its entitlement, reverse its sale, queue the provider refund."""
    order = session.get(Order, order_id)
    if order is None:
        raise StoreNotFoundError(f"no order {order_id}")
    if order.status is OrderStatus.REFUNDED:
        raise StoreConflictError(f"order {order_id} is already refunded")
    order.status = OrderStatus.REFUNDED
    ent = session.scalars(select(Entitlement).where(Entitlement.order_id == order.id)).one()
    ent.revoked_at = utcnow()
    ent.revoke_reason = f"refunded: {reason}"
    if order.amount_cents > 0 and order.provider is not None and order.payment_ref is not None:
        ledger.reversal(
            order.id, order.amount_cents, order.currency, order.provider, session=session
        )
        if notify_provider:
            session.add(
                OutboxMessage(
                    topic="provider.refund",
                    payload={
                        "provider": order.provider,
                        "payment_ref": order.payment_ref,
                        "amount_cents": order.amount_cents,
                        "key": f"servekit:refund:{order.id}",
                    },
                )
            )
    session.flush()
    return order_info(order, session=session)
