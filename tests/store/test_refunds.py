"""Refunds (``checkout.refund_order``, ``apply_provider_refund``): money moves once, by at
most what was paid, on both databases. The database's own refusals are at the end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from servekit.errors import StoreConflictError, StoreNotFoundError
from servekit.store import ledger
from servekit.store.checkout import apply_provider_refund, refund_order
from servekit.store.entitlements import list_entitlements
from servekit.store.models import OrderStatus, OutboxMessage, Refund
from tests.store.conftest import Packages, member, publish_one
from tests.store.test_checkout import _buy


@pytest.fixture
def shop(db: Session, packages: Packages, key: Path, kits_dir: Path) -> Session:
    for path in (packages.free, packages.priced):
        publish_one(path, key, kits_dir, db)
    return db


def _revenue(db: Session) -> int:
    return next(b.amount_cents for b in ledger.balances(session=db) if b.account == ledger.REVENUE)


def test_a_partial_refund_is_partial_and_keeps_the_entitlement(shop: Session) -> None:
    who = member(shop, "acme")
    order = _buy(shop, who, "test-priced", "1.0.0", "k1")
    part = refund_order(order.id, "goodwill", amount_cents=1000, session=shop)
    assert part.status is OrderStatus.PAID and part.refunded_cents == 1000
    assert _revenue(shop) == -3999
    (held,) = list_entitlements(who, session=shop)
    assert held.active and not held.revoked and held.downloadable == ("1.0.0",)
    rest = refund_order(order.id, "customer asked", session=shop)
    assert rest.status is OrderStatus.REFUNDED and rest.refunded_cents == 4999
    assert _revenue(shop) == 0
    assert list_entitlements(who, session=shop)[0].revoked
    amounts = shop.scalars(select(OutboxMessage.payload)).all()
    assert [p["amount_cents"] for p in amounts if "amount_cents" in p] == [1000, 3999]


def test_a_refund_of_more_than_is_left_or_of_nothing_is_refused(shop: Session) -> None:
    order = _buy(shop, member(shop, "acme"), "test-priced", "1.0.0", "k1")
    for amount in (5000, 0, -1):
        with pytest.raises(StoreConflictError, match="4999 of its 4999 are left") as info:
            refund_order(order.id, "x", amount_cents=amount, session=shop)
        assert info.value.hint
    assert shop.scalar(select(func.count(Refund.id))) == 0


def test_a_refunded_order_is_not_refunded_again(shop: Session) -> None:
    order = _buy(shop, member(shop, "acme"), "test-priced", "1.0.0", "k1")
    refund_order(order.id, "x", session=shop)
    with pytest.raises(StoreConflictError, match="already refunded"):
        refund_order(order.id, "again", session=shop)
    with pytest.raises(StoreNotFoundError, match="no order 999999"):
        refund_order(999999, "none such", session=shop)
    assert _revenue(shop) == 0


def test_a_free_order_is_refunded_once_by_nothing(shop: Session) -> None:
    who = member(shop, "acme")
    order = _buy(shop, who, "test-free", "1.0.0", "k1")
    done = refund_order(order.id, "not wanted", session=shop)
    assert done.status is OrderStatus.REFUNDED and done.refunded_cents == 0
    assert list_entitlements(who, session=shop)[0].revoked


def test_a_provider_refund_brings_the_total_up_to_what_the_provider_reports(
    shop: Session,
) -> None:
    order = _buy(shop, member(shop, "acme"), "test-priced", "1.0.0", "k1")
    first = apply_provider_refund(order.id, 1500, "usd", "evt_a", session=shop)
    assert first is not None and first.refunded_cents == 1500
    assert apply_provider_refund(order.id, 1500, "usd", "evt_b", session=shop) is None
    assert apply_provider_refund(order.id, 1000, "usd", "evt_c", session=shop) is None
    last = apply_provider_refund(order.id, 4999, "usd", "evt_d", session=shop)
    assert last is not None and last.status is OrderStatus.REFUNDED
    assert _revenue(shop) == 0


def test_a_provider_refund_above_the_sale_or_in_another_currency_is_refused(
    shop: Session,
) -> None:
    order = _buy(shop, member(shop, "acme"), "test-priced", "1.0.0", "k1")
    for total, currency in ((5000, "usd"), (4999, "eur")):
        with pytest.raises(StoreConflictError, match=f"reports {total} {currency} refunded"):
            apply_provider_refund(order.id, total, currency, "evt_a", session=shop)
    assert apply_provider_refund(order.id, 0, "usd", "evt_b", session=shop) is None


# The database's own refusals: raw SQL, bypassing the functions above.

INSERT_REFUND = (
    "INSERT INTO refunds (order_id, amount_cents, full_refund, reason, created_at) "
    "VALUES (:o, :a, :f, 'raw', CURRENT_TIMESTAMP)"
)


def _rejected(session: Session, sql: str, match: str, **params: Any) -> None:
    with pytest.raises(IntegrityError, match=match), session.begin_nested():
        session.execute(text(sql), params)


def test_the_database_refuses_refunds_above_the_sale(shop: Session) -> None:
    order = _buy(shop, member(shop, "acme"), "test-priced", "1.0.0", "k1")
    _rejected(shop, INSERT_REFUND, "above the amount", o=order.id, a=5000, f=False)
    shop.execute(text(INSERT_REFUND), {"o": order.id, "a": 4000, "f": False})
    _rejected(shop, INSERT_REFUND, "above the amount", o=order.id, a=1000, f=True)
    _rejected(shop, INSERT_REFUND, "ck_refunds_amount|check", o=order.id, a=-1, f=False)


def test_the_database_refuses_a_second_full_refund(shop: Session) -> None:
    order = _buy(shop, member(shop, "acme"), "test-free", "1.0.0", "k1")
    refund_order(order.id, "x", session=shop)
    _rejected(shop, INSERT_REFUND, "uq_refunds_one_full|UNIQUE", o=order.id, a=0, f=True)


def test_refunds_are_append_only(shop: Session) -> None:
    order = _buy(shop, member(shop, "acme"), "test-priced", "1.0.0", "k1")
    refund_order(order.id, "x", amount_cents=10, session=shop)
    _rejected(shop, "UPDATE refunds SET amount_cents = 1", "append-only")
    _rejected(shop, "DELETE FROM refunds", "append-only")


def test_the_database_refuses_reversals_above_the_sale(shop: Session) -> None:
    order = _buy(shop, member(shop, "acme"), "test-priced", "1.0.0", "k1")
    refund_order(order.id, "x", session=shop)
    with pytest.raises(IntegrityError, match="reversals of an order"), shop.begin_nested():
        ledger.reversal(order.id, 1, "usd", "sandbox", session=shop)


def test_an_order_is_marked_refunded_only_by_its_full_refund_and_stays_so(
    shop: Session,
) -> None:
    order = _buy(shop, member(shop, "acme"), "test-priced", "1.0.0", "k1")
    refund_order(order.id, "x", amount_cents=10, session=shop)
    set_status = "UPDATE orders SET status = :s WHERE id = :o"
    _rejected(shop, set_status, "refunded only by a full refund", s="refunded", o=order.id)
    refund_order(order.id, "x", session=shop)
    _rejected(shop, set_status, "stays refunded", s="paid", o=order.id)
