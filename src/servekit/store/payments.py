"""Payment providers: an embedded sandbox (the default) and a Stripe adapter.

A provider charges and refunds with an idempotency key, so a retried confirm never charges
twice at the provider either. The sandbox moves no money and says so in the log on every
start. The Stripe adapter creates confirmed PaymentIntents through the ``stripe`` SDK with
the idempotency key; webhooks are verified with the SDK (:func:`handle_stripe_webhook`),
each processed event id is recorded, and a replayed event changes nothing.
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any, Protocol

import stripe
from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session
from stripe.params import PaymentIntentCreateParams

from servekit.config import Settings
from servekit.errors import PaymentError, StoreConflictError, UsageError, WebhookSignatureError
from servekit.store.checkout import apply_provider_refund
from servekit.store.models import Order as OrderRow
from servekit.store.models import OutboxMessage, WebhookEvent, utcnow
from servekit.store.results import Result

log = logging.getLogger(__name__)


class PaymentProvider(Protocol):
    """What checkout needs from a provider."""

    name: str

    def charge(self, amount_cents: int, currency: str, *, idempotency_key: str, memo: str) -> str:
        """Collect ``amount_cents``; returns the provider's payment reference."""
        ...

    def renew(self, amount_cents: int, currency: str, *, idempotency_key: str, memo: str) -> str:
        """Collect a renewal off-session (nobody is at checkout); raises
        :class:`PaymentError` when refused. Returns the payment reference."""
        ...

    def refund(self, payment_ref: str, amount_cents: int, *, idempotency_key: str) -> str:
        """Return ``amount_cents`` of a payment; returns the provider's refund reference."""
        ...


class SandboxProvider:
    """Charges nothing: references are derived from the idempotency key, so retries agree.

    ``decline_renewals`` makes every renewal fail as a declined card would, to try the
    failure path end to end.
    """

    name = "sandbox"

    def __init__(self, *, decline_renewals: bool = False) -> None:
        log.warning(
            "payment provider is the SANDBOX: no money moves; set SERVEKIT_PAYMENT_PROVIDER"
        )
        self.decline_renewals = decline_renewals

    def charge(self, amount_cents: int, currency: str, *, idempotency_key: str, memo: str) -> str:
        return "sbx_pay_" + hashlib.sha256(idempotency_key.encode()).hexdigest()[:24]

    def renew(self, amount_cents: int, currency: str, *, idempotency_key: str, memo: str) -> str:
        if self.decline_renewals:
            raise PaymentError("the sandbox declined the renewal (decline_renewals is set)")
        return self.charge(amount_cents, currency, idempotency_key=idempotency_key, memo=memo)

    def refund(self, payment_ref: str, amount_cents: int, *, idempotency_key: str) -> str:
        return "sbx_ref_" + hashlib.sha256(idempotency_key.encode()).hexdigest()[:24]


class StripeProvider:
    """Stripe PaymentIntents, created confirmed, with our idempotency key."""

    name = "stripe"

    def __init__(
        self, client: stripe.StripeClient, *, payment_method: str = "pm_card_visa"
    ) -> None:
        self._client = client
        self._payment_method = payment_method

    def charge(self, amount_cents: int, currency: str, *, idempotency_key: str, memo: str) -> str:
        return self._intent(amount_cents, currency, idempotency_key, memo, off_session=False)

    def renew(self, amount_cents: int, currency: str, *, idempotency_key: str, memo: str) -> str:
        """An off-session PaymentIntent: Stripe declines rather than asks for the customer."""
        return self._intent(amount_cents, currency, idempotency_key, memo, off_session=True)

    def _intent(
        self, amount_cents: int, currency: str, key: str, memo: str, *, off_session: bool
    ) -> str:
        params: PaymentIntentCreateParams = {
            "amount": amount_cents,
            "currency": currency,
            "confirm": True,
            "payment_method": self._payment_method,
            "description": memo,
        }
        if off_session:
            params["off_session"] = True
        else:
            params["automatic_payment_methods"] = {"enabled": True, "allow_redirects": "never"}
        try:
            intent = self._client.v1.payment_intents.create(
                params=params, options={"idempotency_key": key}
            )
        except stripe.StripeError as exc:
            raise PaymentError(f"Stripe refused the charge: {exc.user_message or exc}") from exc
        if intent.status != "succeeded":
            raise PaymentError(f"Stripe payment {intent.id} is {intent.status}, not succeeded")
        return str(intent.id)

    def refund(self, payment_ref: str, amount_cents: int, *, idempotency_key: str) -> str:
        try:
            refund = self._client.v1.refunds.create(
                params={"payment_intent": payment_ref, "amount": amount_cents},
                options={"idempotency_key": idempotency_key},
            )
        except stripe.StripeError as exc:
            raise PaymentError(f"Stripe refused the refund: {exc.user_message or exc}") from exc
        return str(refund.id)


def provider_from_settings(settings: Settings) -> PaymentProvider:
    """The provider ``SERVEKIT_PAYMENT_PROVIDER`` names."""
    if settings.payment_provider == "sandbox":
        return SandboxProvider()
    if settings.payment_provider == "stripe":
        if not settings.stripe_api_key:
            raise UsageError(
                "SERVEKIT_PAYMENT_PROVIDER=stripe needs SERVEKIT_STRIPE_API_KEY",
                hint="set the secret key, or use the sandbox",
            )
        return StripeProvider(stripe.StripeClient(settings.stripe_api_key))
    raise UsageError(
        f"unknown payment provider {settings.payment_provider!r}", hint="use sandbox or stripe"
    )


class WebhookResult(Result):
    event_id: str
    type: str
    duplicate: bool
    action: str


def _event(payload: bytes, signature: str | None, secret: str | None) -> dict[str, Any]:
    if not secret:
        raise WebhookSignatureError(
            "no webhook secret is configured", hint="set SERVEKIT_STRIPE_WEBHOOK_SECRET"
        )
    try:
        stripe.Webhook.construct_event(payload, signature, secret)
    except stripe.SignatureVerificationError as exc:
        raise WebhookSignatureError(f"webhook signature does not verify: {exc}") from exc
    except ValueError as exc:
        raise WebhookSignatureError(f"webhook payload is not JSON: {exc}") from exc
    data: dict[str, Any] = json.loads(payload)  # verified bytes, parsed once
    return data


def _first_delivery(event_id: str, kind: str, session: Session) -> bool:
    """Record the event id; False when it is recorded already. A concurrent delivery of the
    same event waits on the insert (PostgreSQL: the unique key; SQLite: the one writer)
    and then finds it there, so a duplicate is answered as one, never as a failure."""
    conn = session.connection()
    values = {"event_id": event_id, "provider": "stripe", "type": kind, "received_at": utcnow()}
    insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    stmt = (
        insert(WebhookEvent)
        .values(values)
        .on_conflict_do_nothing(index_elements=["event_id"])
        .returning(WebhookEvent.event_id)
    )
    return conn.execute(stmt).first() is not None


def _charge_refunded(event_id: str, charge: dict[str, Any], session: Session) -> str:
    """Apply a ``charge.refunded`` event to the order paid by exactly its payment intent.

    The charge's ``amount_refunded`` is cumulative: the order's refunded total is brought
    up to it, so a partial refund stays partial and a refund we asked for (or a replay
    under another event id) adds nothing. An event without a payment intent or an amount
    matches nothing and is only recorded.
    """
    ref, total, currency = (
        charge.get("payment_intent"),
        charge.get("amount_refunded"),
        charge.get("currency"),
    )
    if not isinstance(ref, str) or not ref:
        return "refused: the charge names no payment_intent"
    if type(total) is not int or total < 0 or not isinstance(currency, str):
        return "refused: the charge has no amount_refunded and currency"
    order_id = session.scalar(
        select(OrderRow.id).where(OrderRow.provider == "stripe", OrderRow.payment_ref == ref)
    )
    if order_id is None:
        return "recorded"
    try:
        done = apply_provider_refund(order_id, total, currency, event_id, session=session)
    except StoreConflictError as exc:
        return f"refused: {exc.message}"
    if done is None:
        return f"order {order_id} already refunded {total} {currency}"
    return f"refunded order {order_id}: {done.refunded_cents} of {done.amount_cents}"


def handle_stripe_webhook(
    payload: bytes, signature: str | None, secret: str | None, *, session: Session
) -> WebhookResult:
    """Verify and apply one Stripe event, once: the event id is recorded with its effect."""
    event = _event(payload, signature, secret)
    event_id, kind = str(event["id"]), str(event["type"])
    if not _first_delivery(event_id, kind, session):
        return WebhookResult(event_id=event_id, type=kind, duplicate=True, action="none")
    action = "recorded"
    charge = event.get("data", {}).get("object") if isinstance(event.get("data"), dict) else None
    if kind == "charge.refunded":
        action = (
            _charge_refunded(event_id, charge, session)
            if isinstance(charge, dict)
            else "refused: the event carries no charge"
        )
    return WebhookResult(event_id=event_id, type=kind, duplicate=False, action=action)


def drain_outbox(provider: PaymentProvider, *, session: Session, limit: int = 100) -> int:
    """Send pending provider side effects (refunds) once; returns how many were sent."""
    rows = session.scalars(
        select(OutboxMessage)
        .where(OutboxMessage.sent_at.is_(None), OutboxMessage.topic == "provider.refund")
        .order_by(OutboxMessage.id)
        .limit(limit)
    ).all()
    for row in rows:
        p = row.payload
        if p["provider"] == provider.name:
            provider.refund(p["payment_ref"], int(p["amount_cents"]), idempotency_key=p["key"])
            row.sent_at = utcnow()
    return sum(1 for r in rows if r.sent_at is not None)
