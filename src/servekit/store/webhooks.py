"""Provider webhook events, applied exactly once, then their effects.

1. the provider's adapter verifies the delivery and reads it
   (:func:`servekit.store.providers.event_source`): an unverified one changes nothing;
2. the event id is recorded (``webhook_events``, ``ON CONFLICT DO NOTHING ... RETURNING``)
   in the transaction that applies it: a replay, or a duplicate delivered while the
   first is still being applied (it waits on the insert), is answered as a duplicate;
3. its effect: a refund report brings the order paid by exactly that payment up to the
   refunded total the provider reports (:func:`servekit.store.checkout.apply_provider_refund`).
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from servekit.errors import StoreConflictError
from servekit.store.checkout import apply_provider_refund
from servekit.store.models import Order, WebhookEvent, utcnow
from servekit.store.providers import ProviderEvent, ProviderName, RefundReport, event_source
from servekit.store.results import Result


class WebhookResult(Result):
    event_id: str
    type: str
    duplicate: bool
    action: str


def receive(
    provider: ProviderName,
    payload: bytes,
    headers: Mapping[str, str],
    secret: str | None,
    *,
    session: Session,
) -> WebhookResult:
    """Verify one delivery to ``provider``'s webhook (its signature in ``headers``, under
    ``secret``) and apply its event once (module doc)."""
    return apply_event(event_source(provider, secret).verify(payload, headers), session=session)


def apply_event(event: ProviderEvent, *, session: Session) -> WebhookResult:
    """Apply a verified event once: the event id is recorded with its effect."""
    if not _first_delivery(event, session):  # 2
        return WebhookResult(
            event_id=event.event_id, type=event.type, duplicate=True, action="none"
        )
    action = "recorded"
    if event.refusal is not None:
        action = f"refused: {event.refusal}"
    elif event.refund is not None:  # 3
        action = _refunded(event.provider, event.event_id, event.refund, session)
    return WebhookResult(event_id=event.event_id, type=event.type, duplicate=False, action=action)


def _first_delivery(event: ProviderEvent, session: Session) -> bool:
    """Record the event id; False when it is recorded already. A concurrent delivery of the
    same event waits on the insert (PostgreSQL: the unique key; SQLite: the one writer)
    and then finds it there, so a duplicate is answered as one, never as a failure."""
    conn = session.connection()
    values = {
        "event_id": event.event_id,
        "provider": event.provider.value,
        "type": event.type,
        "received_at": utcnow(),
    }
    insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    stmt = (
        insert(WebhookEvent)
        .values(values)
        .on_conflict_do_nothing(index_elements=["event_id"])
        .returning(WebhookEvent.event_id)
    )
    return conn.execute(stmt).first() is not None


def _refunded(provider: ProviderName, event_id: str, report: RefundReport, session: Session) -> str:
    """Apply a refund report to the order paid through ``provider`` by exactly its payment.

    The reported total is cumulative: the order's refunded total is brought up to it, so
    a partial refund stays partial and a refund we asked for (or a replay under another
    event id) adds nothing. A payment we do not know is only recorded.
    """
    order_id = session.scalar(
        select(Order.id).where(
            Order.provider == provider.value, Order.payment_ref == report.payment_ref
        )
    )
    if order_id is None:
        return "recorded"
    total, currency = report.refunded_total, report.currency
    try:
        done = apply_provider_refund(order_id, total, currency, event_id, session=session)
    except StoreConflictError as exc:
        return f"refused: {exc.message}"
    if done is None:
        return f"order {order_id} already refunded {total} {currency}"
    return f"refunded order {order_id}: {done.refunded_cents} of {done.amount_cents}"
