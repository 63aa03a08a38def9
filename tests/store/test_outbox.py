"""The refund outbox: an operator's refund reaches the provider that was paid, once."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from servekit.store.checkout import refund_order
from servekit.store.models import OutboxMessage
from servekit.store.outbox import REFUND_TOPIC, drain_outbox
from servekit.store.providers import SandboxProvider
from tests.store.conftest import Packages, StripeLikeProvider, sold_priced


def test_an_operator_refund_goes_to_the_provider_through_the_outbox(
    db: Session, packages: Packages, key: Path, kits_dir: Path
) -> None:
    order = sold_priced(db, packages, key, kits_dir)
    refund_order(order.id, "operator", session=db)
    (queued,) = db.scalars(select(OutboxMessage).where(OutboxMessage.topic == REFUND_TOPIC))
    assert queued.payload["key"].startswith(f"servekit:refund:{order.id}:")
    assert drain_outbox(SandboxProvider(), session=db) == 0  # a Stripe payment: not the sandbox's
    provider = StripeLikeProvider()
    assert drain_outbox(provider, session=db) == 1
    assert provider.refunds == [(order.payment_ref, 4999)]
    assert drain_outbox(provider, session=db) == 0  # sent once
