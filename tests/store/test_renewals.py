"""Subscription renewal at period end (``renew-due``), on both databases."""

from __future__ import annotations

import contextlib
import datetime as dt
from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from servekit.errors import AlreadyOwnedError
from servekit.store import ledger
from servekit.store.audit import audit
from servekit.store.checkout import PERIOD, confirm, create_quote, refund_order
from servekit.store.entitlements import cancel_subscription, download, list_entitlements
from servekit.store.models import JournalEntry, OrderKind, Renewal, RenewalOutcome, Subscription
from servekit.store.providers import PaymentProvider, SandboxProvider, StripeProvider
from servekit.store.publishing import get_version
from servekit.store.renewals import due_subscriptions, renew_subscription
from servekit.store.results import EntitlementInfo, OrderInfo, Principal, RenewalInfo
from tests.store.conftest import Packages, member, publish_one
from tests.store.test_stripe_provider import FakeStripe
from tests.store.test_stripe_provider import provider as stripe_provider

__all__ = ["stripe_provider"]

SANDBOX = SandboxProvider()


@pytest.fixture
def shop(db: Session, packages: Packages, key: Path, kits_dir: Path) -> Session:
    publish_one(packages.priced, key, kits_dir, db)
    return db


def _subscribe(db: Session, who: Principal, key: str = "sub") -> OrderInfo:
    """Maintenance, after buying the version it adds to (once: later calls own it)."""
    with contextlib.suppress(AlreadyOwnedError):
        bought = create_quote(who, "test-priced", "1.0.0", OrderKind.PURCHASE, session=db)
        confirm(who, bought.id, f"{key}-buy", provider=SANDBOX, session=db)
    quote = create_quote(who, "test-priced", None, OrderKind.SUBSCRIPTION, session=db)
    return confirm(who, quote.id, key, provider=SANDBOX, session=db)


def _maintenance(held: list[EntitlementInfo]) -> list[EntitlementInfo]:
    return [e for e in held if e.kind is OrderKind.SUBSCRIPTION]


def _period_end(db: Session, order: OrderInfo) -> dt.datetime:
    return db.scalars(
        select(Subscription.period_end).where(Subscription.entitlement_id == order.entitlement_id)
    ).one()


def _renew_all(db: Session, now: dt.datetime, provider: PaymentProvider) -> list[RenewalInfo]:
    done = []
    for sub_id in due_subscriptions(session=db, now=now):
        info = renew_subscription(sub_id, provider=provider, session=db, now=now)
        assert info is not None
        done.append(info)
    return done


def _renewal_entries(db: Session) -> int:
    return db.scalar(select(func.count()).where(JournalEntry.memo.like("renewal %"))) or 0


def test_nothing_is_due_before_the_period_ends(shop: Session) -> None:
    order = _subscribe(shop, member(shop, "acme"))
    end = _period_end(shop, order)
    assert due_subscriptions(session=shop, now=end - dt.timedelta(seconds=1)) == []
    assert len(due_subscriptions(session=shop, now=end)) == 1


def test_a_running_subscription_renews_once_and_posts_the_sale(shop: Session) -> None:
    who = member(shop, "acme")
    order = _subscribe(shop, who)
    end = _period_end(shop, order)
    later = end + dt.timedelta(hours=1)
    (info,) = _renew_all(shop, later, SANDBOX)
    assert info.outcome is RenewalOutcome.RENEWED
    assert info.period_start == end and info.period_end == end + PERIOD
    assert info.amount_cents == order.amount_cents == 1900 and info.payment_ref
    assert _period_end(shop, order) == end + PERIOD
    assert _renewal_entries(shop) == 1
    revenue = sum(
        b.amount_cents for b in ledger.balances(session=shop) if b.account == ledger.REVENUE
    )
    assert revenue == -(4999 + 2 * 1900)  # the version, then two years of maintenance
    assert audit(session=shop).ok
    (ent,) = _maintenance(list_entitlements(who, session=shop, now=later))
    assert ent.active
    assert _renew_all(shop, later, SANDBOX) == []  # a re-run charges nothing
    assert _renewal_entries(shop) == 1


def test_the_database_refuses_a_second_record_of_one_period(shop: Session) -> None:
    order = _subscribe(shop, member(shop, "acme"))
    end = _period_end(shop, order)
    (info,) = _renew_all(shop, end, SANDBOX)
    row = shop.scalars(select(Renewal)).one()
    with pytest.raises(IntegrityError), shop.begin_nested():
        shop.add(
            Renewal(
                subscription_id=info.subscription_id,
                period_start=end,
                outcome=RenewalOutcome.RENEWED,
                currency="usd",
                amount_cents=row.amount_cents,
                detail="twice",
            )
        )
        shop.flush()


def test_cancel_stops_the_renewal(shop: Session) -> None:
    who = member(shop, "acme")
    order = _subscribe(shop, who)
    cancel_subscription(who, order.entitlement_id, session=shop)
    end = _period_end(shop, order)
    (info,) = _renew_all(shop, end, SANDBOX)
    assert info.outcome is RenewalOutcome.CANCELLED and info.payment_ref is None
    assert _renewal_entries(shop) == 0
    assert _period_end(shop, order) == end
    assert _renew_all(shop, end + PERIOD * 3, SANDBOX) == []  # ended: never due again


def test_a_failed_renewal_ends_the_subscription_and_keeps_what_it_granted(
    shop: Session, packages: Packages, key: Path, kits_dir: Path
) -> None:
    who = member(shop, "acme")
    order = _subscribe(shop, who)
    publish_one(packages.priced_v2, key, kits_dir, shop)  # released while it runs
    end = _period_end(shop, order)
    (info,) = _renew_all(shop, end, SandboxProvider(decline_renewals=True))
    assert info.outcome is RenewalOutcome.FAILED and "declined" in info.detail
    assert _renewal_entries(shop) == 0 and audit(session=shop).ok
    publish_one(packages.priced_v3, key, kits_dir, shop)
    get_version("test-priced", "1.2.0", session=shop).published_at = end + dt.timedelta(days=1)
    later = end + dt.timedelta(days=2)
    (ent,) = _maintenance(list_entitlements(who, session=shop, now=later))
    assert not ent.active
    assert ent.downloadable == ("1.0.0", "1.1.0")
    got = download(who, "test-priced", "latest", kits_dir=kits_dir, session=shop, now=later)
    assert got.version == "1.1.0"
    # it ended, so the workspace may subscribe again (adding to the current version, which
    # it buys first), and that one is not renewed twice
    current = create_quote(who, "test-priced", "1.2.0", OrderKind.PURCHASE, session=shop)
    confirm(who, current.id, "buy-current", provider=SANDBOX, session=shop)
    again = _subscribe(shop, who, "again")
    assert again.entitlement_id != order.entitlement_id


def test_a_renewed_subscription_grants_what_is_released_in_the_new_period(
    shop: Session, packages: Packages, key: Path, kits_dir: Path
) -> None:
    who = member(shop, "acme")
    order = _subscribe(shop, who)
    end = _period_end(shop, order)
    _renew_all(shop, end, SANDBOX)
    publish_one(packages.priced_v2, key, kits_dir, shop)
    get_version("test-priced", "1.1.0", session=shop).published_at = end + dt.timedelta(days=30)
    got = download(
        who,
        "test-priced",
        "latest",
        kits_dir=kits_dir,
        session=shop,
        now=end + dt.timedelta(days=31),
    )
    assert got.version == "1.1.0"


def test_a_refunded_subscription_is_not_renewed(shop: Session) -> None:
    order = _subscribe(shop, member(shop, "acme"))
    refund_order(order.id, "changed mind", session=shop)
    assert due_subscriptions(session=shop, now=_period_end(shop, order) + PERIOD) == []


def test_a_lapsed_subscription_replaced_by_a_new_one_is_not_charged(shop: Session) -> None:
    who = member(shop, "acme")
    old = _subscribe(shop, who)
    # lapsed (period over, renew-due not run yet): the workspace subscribes anew
    sub = shop.scalars(
        select(Subscription).where(Subscription.entitlement_id == old.entitlement_id)
    ).one()
    sub.period_end = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)
    shop.flush()
    _subscribe(shop, who, "new")
    (info,) = _renew_all(shop, dt.datetime.now(dt.UTC), SANDBOX)
    assert info.outcome is RenewalOutcome.SUPERSEDED and info.payment_ref is None
    assert _renewal_entries(shop) == 0


def test_a_stripe_renewal_is_an_off_session_payment_intent(
    shop: Session, stripe_provider: StripeProvider
) -> None:
    order = _subscribe(shop, member(shop, "acme"))
    end = _period_end(shop, order)
    (info,) = _renew_all(shop, end, stripe_provider)
    assert info.outcome is RenewalOutcome.RENEWED and info.payment_ref == "pi_1"
    path, key, form = FakeStripe.seen[-1]
    assert path == "/v1/payment_intents" and form["off_session"] == ["true"]
    assert form["amount"] == ["1900"]
    assert key == f"servekit:renew:{info.subscription_id}:{end.isoformat()}"


def test_a_stripe_decline_ends_the_subscription(
    shop: Session, stripe_provider: StripeProvider
) -> None:
    order = _subscribe(shop, member(shop, "acme"))
    FakeStripe.decline = True
    (info,) = _renew_all(shop, _period_end(shop, order), stripe_provider)
    assert info.outcome is RenewalOutcome.FAILED and "declined" in info.detail
    assert _renewal_entries(shop) == 0


def test_audit_names_a_paid_renewal_without_its_sale(shop: Session) -> None:
    order = _subscribe(shop, member(shop, "acme"))
    (info,) = _renew_all(shop, _period_end(shop, order), SANDBOX)
    assert audit(session=shop).ok
    unposted = Renewal(
        subscription_id=info.subscription_id,
        period_start=info.period_end,
        outcome=RenewalOutcome.RENEWED,
        currency="usd",
        amount_cents=1900,
        payment_ref="sbx_pay_unposted",
        detail="charged, never posted",
    )
    shop.add(unposted)
    shop.flush()
    assert audit(session=shop).first_break == f"renewal {unposted.id}: no sale entry of 1900"
