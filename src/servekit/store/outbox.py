"""The provider side of refunds: queued in the refund's transaction, sent once later.

Beside :mod:`servekit.store.renewals`, the other job the operator runs against the
provider (``servekit store send-outbox``, ``servekit store renew-due``). A refund we make
(``servekit store refund``) must reach the provider, but a provider call cannot take part
in the database transaction: the refund writes an ``outbox`` row with it
(:func:`queue_refund`), and :func:`drain_outbox` sends each pending row once, with an
idempotency key of the order and the refund, so a drain that crashes before its commit
asks the provider for nothing more when it runs again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.orm import Session

from servekit.store.models import OutboxMessage, utcnow

if TYPE_CHECKING:
    from servekit.store.providers import PaymentProvider

REFUND_TOPIC = "provider.refund"


def queue_refund(
    provider: str, payment_ref: str, amount_cents: int, key: str, *, session: Session
) -> None:
    """Queue the provider refund of ``amount_cents`` of ``payment_ref``, sent under ``key``."""
    payload = {
        "provider": provider,
        "payment_ref": payment_ref,
        "amount_cents": amount_cents,
        "key": key,
    }
    session.add(OutboxMessage(topic=REFUND_TOPIC, payload=payload))


def drain_outbox(provider: PaymentProvider, *, session: Session, limit: int = 100) -> int:
    """Send the pending refunds of payments ``provider`` collected, once; returns how many
    were sent (another provider's are left for it)."""
    rows = session.scalars(
        select(OutboxMessage)
        .where(OutboxMessage.sent_at.is_(None), OutboxMessage.topic == REFUND_TOPIC)
        .order_by(OutboxMessage.id)
        .limit(limit)
    ).all()
    for row in rows:
        p = row.payload
        if p["provider"] == provider.name:
            provider.refund(p["payment_ref"], int(p["amount_cents"]), idempotency_key=p["key"])
            row.sent_at = utcnow()
    return sum(1 for r in rows if r.sent_at is not None)
