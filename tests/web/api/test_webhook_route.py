"""The published webhook path still answers a signed provider event, through the store's
neutral ``webhooks.receive`` (the route reads no provider's header itself)."""

from __future__ import annotations

from tests.store.test_webhooks import _refund_event, _signed
from tests.web.api.world import WEBHOOK_SECRET, World

PATH = "/api/v1/webhooks/stripe"  # the path given to Stripe: it must keep working


def test_a_signed_event_is_applied_once_over_http(world: World) -> None:
    payload, header = _signed(_refund_event("evt_http_1", "pi_unknown"), WEBHOOK_SECRET)
    headers = {"Stripe-Signature": header, "Content-Type": "application/json"}
    first = world.client.post(PATH, content=payload, headers=headers)
    assert first.status_code == 200, first.text
    assert first.json() == {
        "event_id": "evt_http_1",
        "type": "charge.refunded",
        "duplicate": False,
        "action": "recorded",  # no order was paid with pi_unknown
    }
    replay = world.client.post(PATH, content=payload, headers=headers)
    assert replay.status_code == 200 and replay.json()["duplicate"] is True


def test_an_event_signed_with_another_secret_is_a_400(world: World) -> None:
    payload, header = _signed(_refund_event("evt_http_2", "pi_unknown"), "whsec_other")
    r = world.client.post(PATH, content=payload, headers={"Stripe-Signature": header})
    assert r.status_code == 400, r.text
    assert r.json()["type"] == "urn:servekit:problem:webhook-signature"
    unsigned = world.client.post(PATH, content=payload)
    assert unsigned.status_code == 400, unsigned.text
