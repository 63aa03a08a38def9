"""Payment providers, one adapter each: an embedded sandbox (the default) and Stripe.

A provider charges, renews and refunds with an idempotency key, so a retried confirm never
charges twice at the provider either. The sandbox moves no money and says so in the log on
every start. The Stripe adapter creates confirmed PaymentIntents through the ``stripe``
SDK with the idempotency key, and verifies and reads its webhook events
(:class:`StripeEvents`) into the store's neutral :class:`ProviderEvent`, which
:mod:`servekit.store.webhooks` applies once.

Nothing outside this module names a provider: the rest of the store, the web layer and
the CLI use :class:`ProviderName`, :class:`PaymentProvider` and :func:`event_source`.
The ``stripe`` SDK is imported when a Stripe adapter is used (it costs about 0.6 s), so
checkout, which types against this module, does not pay for it.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from servekit.config import ProviderName
from servekit.errors import PaymentError, UsageError, WebhookSignatureError

if TYPE_CHECKING:
    import stripe

    from servekit.config import Settings

__all__ = [
    "TEST_PROVIDERS",
    "WEBHOOK_PROVIDERS",
    "EventSource",
    "PaymentProvider",
    "ProviderEvent",
    "ProviderName",
    "RefundReport",
    "SandboxProvider",
    "StripeEvents",
    "StripeProvider",
    "event_source",
    "provider_from_settings",
    "webhook_secret",
]

log = logging.getLogger(__name__)

TEST_PROVIDERS = frozenset({ProviderName.SANDBOX})
"""Payment providers that charge nothing: buying through them is a test purchase."""


class PaymentProvider(Protocol):
    """What checkout, renewals and the refund outbox need from a provider."""

    @property
    def name(self) -> ProviderName:
        """Recorded with each order and renewal it collects, and its ledger account."""
        ...

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

    name = ProviderName.SANDBOX

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

    name = ProviderName.STRIPE

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
        import stripe

        params: stripe.params.PaymentIntentCreateParams = {
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
        import stripe

        try:
            refund = self._client.v1.refunds.create(
                params={"payment_intent": payment_ref, "amount": amount_cents},
                options={"idempotency_key": idempotency_key},
            )
        except stripe.StripeError as exc:
            raise PaymentError(f"Stripe refused the refund: {exc.user_message or exc}") from exc
        return str(refund.id)


def provider_from_settings(settings: Settings) -> PaymentProvider:
    """The provider ``SERVEKIT_PAYMENT_PROVIDER`` names (the settings refuse any other)."""
    match settings.payment_provider:
        case ProviderName.SANDBOX:
            return SandboxProvider()
        case ProviderName.STRIPE:
            if not settings.stripe_api_key:
                raise UsageError(
                    "SERVEKIT_PAYMENT_PROVIDER=stripe needs SERVEKIT_STRIPE_API_KEY",
                    hint="set the secret key, or use the sandbox",
                )
            import stripe

            return StripeProvider(stripe.StripeClient(settings.stripe_api_key))


# --- webhook events ------------------------------------------------------------------


@dataclass(frozen=True)
class RefundReport:
    """A provider reports ``refunded_total`` (cumulative) of the payment ``payment_ref``."""

    payment_ref: str
    refunded_total: int
    currency: str


@dataclass(frozen=True)
class ProviderEvent:
    """A verified provider event, in the store's terms.

    ``refund`` is set for an event that reports a refund the store can apply; ``refusal``
    says why an event of a kind the store applies cannot be (it is recorded, not applied).
    """

    provider: ProviderName
    event_id: str
    type: str
    refund: RefundReport | None = None
    refusal: str | None = None


class EventSource(Protocol):
    """A provider's webhook: verifies a delivery and reads it as a :class:`ProviderEvent`."""

    @property
    def name(self) -> ProviderName: ...

    def verify(self, payload: bytes, headers: Mapping[str, str]) -> ProviderEvent:
        """The event in ``payload``; :class:`WebhookSignatureError` unless ``headers``
        carry a signature of exactly these bytes under the configured secret."""
        ...


class StripeEvents:
    """Stripe's webhook events, verified with the SDK against the endpoint's secret.

    ``charge.refunded`` reports the charge's cumulative ``amount_refunded`` of its
    ``payment_intent`` (our payment reference); other types are recorded only.
    """

    name = ProviderName.STRIPE
    signature_header = "Stripe-Signature"

    def __init__(self, secret: str | None) -> None:
        self._secret = secret

    def verify(self, payload: bytes, headers: Mapping[str, str]) -> ProviderEvent:
        event = self._verified(payload, headers.get(self.signature_header))
        event_id, kind = str(event["id"]), str(event["type"])
        if kind != "charge.refunded":
            return ProviderEvent(self.name, event_id, kind)
        data = event.get("data")
        charge = data.get("object") if isinstance(data, dict) else None
        if not isinstance(charge, dict):
            return ProviderEvent(self.name, event_id, kind, refusal="the event carries no charge")
        return _charge_refunded(ProviderEvent(self.name, event_id, kind), charge)

    def _verified(self, payload: bytes, signature: str | None) -> dict[str, Any]:
        if not self._secret:
            raise WebhookSignatureError(
                "no webhook secret is configured", hint="set SERVEKIT_STRIPE_WEBHOOK_SECRET"
            )
        import stripe

        try:
            stripe.Webhook.construct_event(payload, signature, self._secret)
        except stripe.SignatureVerificationError as exc:
            raise WebhookSignatureError(f"webhook signature does not verify: {exc}") from exc
        except ValueError as exc:
            raise WebhookSignatureError(f"webhook payload is not JSON: {exc}") from exc
        data: dict[str, Any] = json.loads(payload)  # verified bytes, parsed once
        return data


def _charge_refunded(event: ProviderEvent, charge: dict[str, Any]) -> ProviderEvent:
    """An event without a payment intent or an amount matches nothing: refused, so no
    lookup ever compares a missing reference (``IS NULL`` would find a free order)."""
    ref, total, currency = (
        charge.get("payment_intent"),
        charge.get("amount_refunded"),
        charge.get("currency"),
    )
    if not isinstance(ref, str) or not ref:
        return _refused(event, "the charge names no payment_intent")
    if type(total) is not int or total < 0 or not isinstance(currency, str):
        return _refused(event, "the charge has no amount_refunded and currency")
    report = RefundReport(payment_ref=ref, refunded_total=total, currency=currency)
    return ProviderEvent(event.provider, event.event_id, event.type, refund=report)


def _refused(event: ProviderEvent, why: str) -> ProviderEvent:
    return ProviderEvent(event.provider, event.event_id, event.type, refusal=why)


WEBHOOK_PROVIDERS = (ProviderName.STRIPE,)
"""The providers that post events to the store (the web layer serves a route for each)."""


def event_source(name: ProviderName, secret: str | None) -> EventSource:
    """The webhook of provider ``name``, verifying with ``secret`` (None: every event is
    refused); :class:`UsageError` for a provider that posts no events."""
    match name:
        case ProviderName.STRIPE:
            return StripeEvents(secret)
        case ProviderName.SANDBOX:
            raise UsageError(f"the {name} provider posts no webhook events")


def webhook_secret(settings: Settings) -> str | None:
    """The secret the webhook events of :data:`WEBHOOK_PROVIDERS` are signed with (one
    provider posts events today: a second would make this a mapping by name)."""
    return settings.stripe_webhook_secret
