"""The Stripe adapter against a local server that answers like the Stripe API (no network)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, ClassVar
from urllib.parse import parse_qs

import pytest
import stripe

from servekit.errors import PaymentError
from servekit.store.providers import StripeProvider
from tests.fakehttp import QuietHandler, serving


class FakeStripe(QuietHandler):
    """POST /v1/payment_intents and /v1/refunds, replaying a response per idempotency key."""

    seen: ClassVar[list[tuple[str, str | None, dict[str, list[str]]]]] = []
    replies: ClassVar[dict[str, dict[str, Any]]] = {}
    decline: ClassVar[bool] = False
    status: ClassVar[str] = "succeeded"

    def do_POST(self) -> None:  # noqa: N802 (http.server names it)
        form = parse_qs(self.rfile.read(int(self.headers["Content-Length"] or 0)).decode())
        key = self.headers.get("Idempotency-Key")
        self.seen.append((self.path, key, form))
        if self.decline:
            return self._send(
                402, {"error": {"type": "card_error", "message": "Your card was declined."}}
            )
        if key not in self.replies:
            n = len(self.replies) + 1
            kind = "payment_intent" if self.path == "/v1/payment_intents" else "refund"
            prefix = "pi" if kind == "payment_intent" else "re"
            self.replies[key or str(n)] = {
                "id": f"{prefix}_{n}",
                "object": kind,
                "status": self.status,
            }
        self._send(200, self.replies[key or ""])

    def _send(self, status: int, body: dict[str, Any]) -> None:
        self.send_body(status, "application/json", json.dumps(body).encode())


@pytest.fixture
def provider() -> Iterator[StripeProvider]:
    FakeStripe.seen, FakeStripe.replies, FakeStripe.decline = [], {}, False
    FakeStripe.status = "succeeded"
    with serving(FakeStripe) as base:
        client = stripe.StripeClient(
            "sk_test_fake", base_addresses={"api": base}, max_network_retries=0
        )
        yield StripeProvider(client)


def test_a_charge_is_a_confirmed_payment_intent_with_our_idempotency_key(
    provider: StripeProvider,
) -> None:
    first = provider.charge(4999, "usd", idempotency_key="servekit:1:k", memo="test-priced 1.0.0")
    again = provider.charge(4999, "usd", idempotency_key="servekit:1:k", memo="test-priced 1.0.0")
    assert first == again == "pi_1"
    path, key, form = FakeStripe.seen[0]
    assert path == "/v1/payment_intents" and key == "servekit:1:k"
    assert (
        form["amount"] == ["4999"] and form["currency"] == ["usd"] and form["confirm"] == ["true"]
    )


def test_a_refund_names_the_payment_intent(provider: StripeProvider) -> None:
    assert provider.refund("pi_1", 4999, idempotency_key="servekit:refund:1") == "re_1"
    path, key, form = FakeStripe.seen[0]
    assert (path, key, form["payment_intent"], form["amount"]) == (
        "/v1/refunds",
        "servekit:refund:1",
        ["pi_1"],
        ["4999"],
    )


def test_a_decline_is_a_payment_error(provider: StripeProvider) -> None:
    FakeStripe.decline = True
    with pytest.raises(PaymentError, match="declined"):
        provider.charge(100, "usd", idempotency_key="k", memo="m")


def test_a_payment_that_needs_the_customer_is_not_taken_as_paid(provider: StripeProvider) -> None:
    """A card that asks for 3-D Secure answers 'requires_action': no money has moved."""
    FakeStripe.status = "requires_action"
    with pytest.raises(PaymentError, match="pi_1 is requires_action, not succeeded"):
        provider.charge(100, "usd", idempotency_key="k", memo="m")
