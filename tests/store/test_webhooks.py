"""Provider webhooks (Stripe's): signed in the test with a known secret, verified by the
SDK, applied once."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session
from stripe import WebhookSignature

from servekit.errors import WebhookSignatureError
from servekit.store import ledger
from servekit.store.checkout import confirm, create_quote
from servekit.store.entitlements import list_entitlements
from servekit.store.models import Order, OrderKind, OrderStatus
from servekit.store.outbox import drain_outbox
from servekit.store.providers import ProviderName
from servekit.store.webhooks import WebhookResult, receive
from tests.store.conftest import Packages, StripeLikeProvider, member, publish_one

SECRET = "whsec_test_servekit"


def _signed(event: dict[str, object], secret: str = SECRET) -> tuple[bytes, str]:
    payload = json.dumps(event)
    return payload.encode(), WebhookSignature.generate_signature_header(
        payload, secret, int(time.time())
    )


def handle_stripe_webhook(
    payload: bytes, header: str | None, secret: str | None, *, session: Session
) -> WebhookResult:
    """A delivery to the Stripe webhook, its signature in the header Stripe sends."""
    headers = {} if header is None else {"Stripe-Signature": header}
    return receive(ProviderName.STRIPE, payload, headers, secret, session=session)


def _refund_event(
    event_id: str, payment_intent: str | None, refunded: int | None = 4999
) -> dict[str, object]:
    """A ``charge.refunded`` event as Stripe sends it: ``amount_refunded`` is cumulative."""
    charge: dict[str, object] = {
        "id": "ch_1",
        "object": "charge",
        "payment_intent": payment_intent,
        "amount": 4999,
        "amount_refunded": refunded,
        "currency": "usd",
    }
    return {
        "id": event_id,
        "object": "event",
        "type": "charge.refunded",
        "data": {"object": charge},
    }


@pytest.fixture
def paid(db: Session, packages: Packages, key: Path, kits_dir: Path) -> tuple[Session, str]:
    publish_one(packages.priced, key, kits_dir, db)
    who = member(db, "acme")
    quote = create_quote(who, "test-priced", "1.0.0", OrderKind.PURCHASE, session=db)
    order = confirm(who, quote.id, "k", provider=StripeLikeProvider(), session=db)
    assert order.payment_ref and order.payment_ref.startswith("pi_")
    return db, order.payment_ref


def test_a_signed_refund_event_refunds_once_and_a_replay_changes_nothing(
    paid: tuple[Session, str],
) -> None:
    db, intent = paid
    payload, header = _signed(_refund_event("evt_1", intent))
    first = handle_stripe_webhook(payload, header, SECRET, session=db)
    assert not first.duplicate and first.action.startswith("refunded order")
    balances = ledger.balances(session=db)
    replay = handle_stripe_webhook(payload, header, SECRET, session=db)
    assert replay.duplicate and replay.action == "none"
    assert ledger.balances(session=db) == balances
    assert all(b.amount_cents == 0 for b in balances)


def test_a_webhook_refund_does_not_ask_the_provider_again(paid: tuple[Session, str]) -> None:
    db, intent = paid
    handle_stripe_webhook(*_signed(_refund_event("evt_1", intent)), SECRET, session=db)
    provider = StripeLikeProvider()
    assert drain_outbox(provider, session=db) == 0 and provider.refunds == []


@pytest.mark.parametrize(
    ("secret", "tamper"),
    [("whsec_wrong", False), (SECRET, True)],
    ids=["wrong-secret", "tampered-body"],
)
def test_an_unverified_webhook_is_refused_and_changes_nothing(
    paid: tuple[Session, str], secret: str, tamper: bool
) -> None:
    db, intent = paid
    payload, header = _signed(_refund_event("evt_1", intent), secret)
    if tamper:
        payload = payload.replace(b"evt_1", b"evt_2")
    with pytest.raises(WebhookSignatureError):
        handle_stripe_webhook(payload, header, SECRET, session=db)
    assert all(o.status is OrderStatus.PAID for o in _orders(db))


def _orders(db: Session) -> list[Order]:
    return list(db.scalars(select(Order)))


def test_a_refund_event_for_a_payment_we_do_not_know_is_only_recorded(
    paid: tuple[Session, str],
) -> None:
    db, _ = paid
    result = handle_stripe_webhook(
        *_signed(_refund_event("evt_9", "pi_elsewhere")), SECRET, session=db
    )
    assert result.action == "recorded" and not result.duplicate
    assert all(o.status is OrderStatus.PAID for o in _orders(db))


def test_a_second_refund_event_for_a_refunded_order_changes_nothing(
    paid: tuple[Session, str],
) -> None:
    db, intent = paid
    handle_stripe_webhook(*_signed(_refund_event("evt_1", intent)), SECRET, session=db)
    balances = ledger.balances(session=db)
    second = handle_stripe_webhook(*_signed(_refund_event("evt_2", intent)), SECRET, session=db)
    assert second.action.endswith("already refunded 4999 usd")
    assert ledger.balances(session=db) == balances


def test_other_event_types_are_recorded_once_and_do_nothing(paid: tuple[Session, str]) -> None:
    db, intent = paid
    event = dict(_refund_event("evt_5", intent), type="payment_intent.succeeded")
    assert handle_stripe_webhook(*_signed(event), SECRET, session=db).action == "recorded"
    assert all(o.status is OrderStatus.PAID for o in _orders(db))


def test_without_a_webhook_secret_every_event_is_refused(paid: tuple[Session, str]) -> None:
    db, intent = paid
    with pytest.raises(WebhookSignatureError, match="no webhook secret") as info:
        handle_stripe_webhook(*_signed(_refund_event("evt_1", intent)), None, session=db)
    assert info.value.hint == "set SERVEKIT_STRIPE_WEBHOOK_SECRET"


def test_a_refund_event_without_a_payment_intent_matches_no_free_order(
    paid: tuple[Session, str], packages: Packages, key: Path, kits_dir: Path
) -> None:
    """Another workspace's free order has no payment reference: a ``null`` one in an event
    must not find it (the lookup must never become ``IS NULL``)."""
    db, _ = paid
    publish_one(packages.free, key, kits_dir, db)
    other = member(db, "other")
    quote = create_quote(other, "test-free", "1.0.0", OrderKind.PURCHASE, session=db)
    free = confirm(other, quote.id, "free", provider=StripeLikeProvider(), session=db)
    assert free.payment_ref is None
    for n, ref in enumerate((None, "")):
        result = handle_stripe_webhook(
            *_signed(_refund_event(f"evt_{n}", ref, 0)), SECRET, session=db
        )
        assert result.action == "refused: the charge names no payment_intent"
    assert all(o.status is OrderStatus.PAID for o in _orders(db))
    assert not any(e.revoked for e in list_entitlements(other, session=db))


def test_a_refund_event_without_an_amount_is_refused(paid: tuple[Session, str]) -> None:
    db, intent = paid
    result = handle_stripe_webhook(
        *_signed(_refund_event("evt_1", intent, None)), SECRET, session=db
    )
    assert result.action.startswith("refused: the charge has no amount_refunded")
    assert all(o.status is OrderStatus.PAID for o in _orders(db))
    for n, data in enumerate(({}, None), start=2):
        event = dict(_refund_event(f"evt_{n}", intent), data=data)
        result = handle_stripe_webhook(*_signed(event), SECRET, session=db)
        assert result.action == "refused: the event carries no charge"
    assert all(o.status is OrderStatus.PAID for o in _orders(db))


def test_a_partial_refund_event_refunds_that_much(paid: tuple[Session, str]) -> None:
    db, intent = paid
    first = handle_stripe_webhook(
        *_signed(_refund_event("evt_1", intent, 1000)), SECRET, session=db
    )
    assert first.action.endswith(": 1000 of 4999")
    (order,) = _orders(db)
    assert order.status is OrderStatus.PAID
    revenue = {b.account: b.amount_cents for b in ledger.balances(session=db)}[ledger.REVENUE]
    assert revenue == -3999
    handle_stripe_webhook(*_signed(_refund_event("evt_2", intent, 4999)), SECRET, session=db)
    assert _orders(db)[0].status is OrderStatus.REFUNDED


def test_a_refund_event_above_the_sale_is_refused(paid: tuple[Session, str]) -> None:
    db, intent = paid
    result = handle_stripe_webhook(
        *_signed(_refund_event("evt_1", intent, 9999)), SECRET, session=db
    )
    assert result.action.startswith("refused: order") and "9999 usd refunded" in result.action
    assert all(o.status is OrderStatus.PAID for o in _orders(db))
