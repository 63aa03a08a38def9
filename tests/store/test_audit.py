"""``audit`` recomputes the chain and the ledger and names the first break."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from servekit.store import ledger
from servekit.store.audit import audit
from servekit.store.checkout import refund_order
from servekit.store.licences import erase_personal_data
from servekit.store.models import OrderKind
from servekit.store.publishing import get_version
from tests.store.conftest import Packages, member, publish_one
from tests.store.test_checkout import _buy
from tests.store.test_invariants import (
    INSERT_ENTITLEMENT,
    _enterprise_buy,
    _open_entry,
    _raw_order,
)
from tests.store.test_refunds import INSERT_REFUND

TRIGGERS = {  # the trigger a tamperer would have to drop first, per dialect
    "sqlite": "DROP TRIGGER licence_signatures_no_update",
    "postgresql": "DROP TRIGGER licence_signatures_append_only ON licence_signatures",
}


@pytest.fixture
def shop(db: Session, packages: Packages, key: Path, kits_dir: Path) -> Session:
    publish_one(packages.enterprise, key, kits_dir, db)
    return db


def test_a_clean_store_passes(shop: Session) -> None:
    _enterprise_buy(shop)
    report = audit(session=shop)
    assert report.ok and report.signatures == 1 and report.postings == 2


def test_erasing_personal_data_keeps_the_chain(shop: Session) -> None:
    _, sig = _enterprise_buy(shop)
    erase_personal_data(sig, session=shop)
    assert audit(session=shop).ok


def test_a_forged_signature_row_is_the_first_break(shop: Session) -> None:
    _enterprise_buy(shop)
    shop.execute(text(TRIGGERS[shop.get_bind().dialect.name]))  # rolled back with the test
    shop.execute(text("UPDATE licence_signatures SET licensed_entity = 'Someone Else'"))
    report = audit(session=shop)
    assert report.first_break is not None and "seq 1" in report.first_break
    assert "row_hash" in report.first_break


def test_forged_personal_data_is_a_break(shop: Session) -> None:
    _enterprise_buy(shop)
    shop.execute(text("UPDATE licence_signers SET signer_name = 'Mallory'"))
    assert "personal data" in (audit(session=shop).first_break or "")


def test_an_unsealed_entry_is_a_break(shop: Session) -> None:
    _enterprise_buy(shop)
    entry = _open_entry(shop, 5, -4)
    assert audit(session=shop).first_break == f"journal entry {entry} is not sealed"


def _allow_updates(session: Session, table: str) -> None:
    """Drop the append-only trigger a tamperer would drop first (rolled back with the test)."""
    if session.get_bind().dialect.name == "sqlite":
        session.execute(text(f"DROP TRIGGER {table}_no_update"))
    else:
        session.execute(text(f"DROP TRIGGER {table}_append_only ON {table}"))


@pytest.mark.parametrize(
    ("table", "tamper", "named"),
    [
        ("licence_signatures", "SET seq = 2", "expected seq 1, a row is missing"),
        ("licence_signatures", f"SET prev_hash = '{'f' * 64}'", "is not the previous row_hash"),
        (
            "licence_signatures",
            "SET terms_text = terms_text || ' (amended)'",
            "terms text does not hash to terms_sha256",
        ),
        (
            "licence_affirmations",
            "SET clause_text = clause_text || ' (amended)'",
            "does not hash to its clause_sha256",
        ),
    ],
    ids=["row-missing", "chain-spliced", "terms-edited", "clause-edited"],
)
def test_each_kind_of_signature_tampering_is_named(
    shop: Session, table: str, tamper: str, named: str
) -> None:
    _enterprise_buy(shop)
    _allow_updates(shop, table)
    shop.execute(text(f"UPDATE {table} {tamper}"))
    report = audit(session=shop)
    assert not report.ok and named in (report.first_break or "")
    assert "signature seq" in (report.first_break or "")


def test_an_edited_posting_unbalances_its_entry(shop: Session) -> None:
    _enterprise_buy(shop)
    _allow_updates(shop, "postings")
    shop.execute(text("UPDATE postings SET amount_cents = amount_cents + 1"))
    report = audit(session=shop)
    assert report.first_break is not None and report.first_break.endswith("does not sum to zero")


def test_an_order_whose_amount_differs_from_its_sale_is_a_break(shop: Session) -> None:
    _enterprise_buy(shop)
    shop.execute(text("UPDATE orders SET amount_cents = amount_cents + 100"))
    report = audit(session=shop)
    assert report.first_break is not None and "no sale entry of" in report.first_break


# The business rules (checks 5-7): each broken by hand, past the database's guard where it
# has one, and named by the audit.


@pytest.fixture
def sold(db: Session, packages: Packages, key: Path, kits_dir: Path) -> tuple[Session, int, int]:
    """A store with a priced and a free order (one workspace each); returns the session
    and the two order ids. ``_enterprise`` publishes the enterprise version when needed."""
    for path in (packages.priced, packages.free):
        publish_one(path, key, kits_dir, db)
    db.info["publish_enterprise"] = lambda: publish_one(packages.enterprise, key, kits_dir, db)
    priced = _buy(db, member(db, "acme"), "test-priced", "1.0.0", "k").id
    free = _buy(db, member(db, "other"), "test-free", "1.0.0", "k").id
    return db, priced, free


def _enterprise(db: Session) -> int:
    db.info.pop("publish_enterprise")()
    return get_version("kimi-k3-8xb300", "1.0.0", session=db).id


def _drop(session: Session, name: str, table: str) -> None:
    """Drop a guard a tamperer would drop first (rolled back with the test)."""
    on = "" if session.get_bind().dialect.name == "sqlite" else f" ON {table}"
    session.execute(text(f"DROP TRIGGER {name}{on}"))


def test_refunds_partial_full_and_free_pass_the_audit(sold: tuple[Session, int, int]) -> None:
    db, priced, free = sold
    refund_order(priced, "goodwill", amount_cents=1000, session=db)
    assert audit(session=db).ok
    refund_order(priced, "asked", session=db)
    refund_order(free, "asked", session=db)
    assert audit(session=db).ok
    third = _buy(db, member(db, "third"), "test-priced", "1.0.0", "k").entitlement_id
    revoke = "UPDATE entitlements SET revoked_at = CURRENT_TIMESTAMP, revoke_reason = :r"
    db.execute(text(revoke + " WHERE id = :e"), {"r": "licence breach", "e": third})
    assert audit(session=db).ok  # an operator's revocation with a recorded reason


def _refunded_twice_in_full(db: Session, priced: int, free: int) -> None:
    refund_order(free, "x", session=db)
    db.execute(text("DROP INDEX uq_refunds_one_full"))
    db.execute(text(INSERT_REFUND), {"o": free, "a": 0, "f": True})


def _refunded_above_the_sale(db: Session, priced: int, free: int) -> None:
    refund_order(priced, "x", amount_cents=1000, session=db)
    _drop(db, "refunds_bounded", "refunds")
    db.execute(text(INSERT_REFUND), {"o": priced, "a": 4999, "f": False})


def _reversed_twice(db: Session, priced: int, free: int) -> None:
    refund_order(priced, "x", session=db)
    _drop(db, "journal_entries_reversal_bounded", "journal_entries")
    ledger.reversal(priced, 4999, "usd", "sandbox", session=db)


def _reversed_without_a_refund(db: Session, priced: int, free: int) -> None:
    ledger.reversal(priced, 1000, "usd", "sandbox", session=db)


def _marked_paid_after_its_full_refund(db: Session, priced: int, free: int) -> None:
    refund_order(priced, "x", session=db)
    _drop(db, "orders_refund_closed", "orders")
    db.execute(text("UPDATE orders SET status = 'paid' WHERE id = :o"), {"o": priced})


def _live_after_its_full_refund(db: Session, priced: int, free: int) -> None:
    refund_order(priced, "x", session=db)
    sqlite = db.get_bind().dialect.name == "sqlite"
    _drop(db, "entitlements_stay_revoked" if sqlite else "entitlements_signature", "entitlements")
    db.execute(text("UPDATE entitlements SET revoked_at = NULL WHERE order_id = :o"), {"o": priced})


def _licensed_without_a_signature(db: Session, priced: int, free: int) -> None:
    who = member(db, "thief")
    version = _enterprise(db)
    sqlite = db.get_bind().dialect.name == "sqlite"
    _drop(db, "entitlements_need_signature" if sqlite else "entitlements_signature", "entitlements")
    db.execute(
        text(INSERT_ENTITLEMENT),
        {"w": who.workspace_id, "v": version, "o": _raw_order(db, who, version, "raw"), "s": None},
    )


def _downloaded_without_a_signature(db: Session, priced: int, free: int) -> None:
    who = member(db, "thief")
    version = _enterprise(db)
    sqlite = db.get_bind().dialect.name == "sqlite"
    _drop(db, "downloads_need_signature" if sqlite else "downloads_signature", "downloads")
    db.execute(
        text(
            "INSERT INTO downloads (workspace_id, version_id, user_id, created_at) "
            "VALUES (:w, :v, :u, CURRENT_TIMESTAMP)"
        ),
        {"w": who.workspace_id, "v": version, "u": who.user_id},
    )


def _order_of_another_kind(db: Session, priced: int, free: int) -> None:
    db.execute(text("UPDATE orders SET kind = 'subscription' WHERE id = :o"), {"o": priced})


def _subscription_without_its_row(db: Session, priced: int, free: int) -> None:
    subs = member(db, "subs")
    _buy(db, subs, "test-priced", None, "p")  # maintenance is an add-on to a bought version
    order = _buy(db, subs, "test-priced", None, "s", OrderKind.SUBSCRIPTION)
    db.execute(
        text("DELETE FROM subscriptions WHERE entitlement_id = :e"), {"e": order.entitlement_id}
    )


def _revoked_without_a_reason(db: Session, priced: int, free: int) -> None:
    db.execute(
        text("UPDATE entitlements SET revoked_at = CURRENT_TIMESTAMP WHERE order_id = :o"),
        {"o": priced},
    )


@pytest.mark.parametrize(
    ("tamper", "named"),
    [
        (_refunded_twice_in_full, "refunded in full 2 times"),
        (_refunded_above_the_sale, "refunded 5999, more than the 4999 it was paid"),
        (_reversed_twice, "reversed 9998 in the ledger, more than the 4999 it was paid"),
        (_reversed_without_a_refund, "reversed 1000 in the ledger, but its refunds total 0"),
        (_marked_paid_after_its_full_refund, "marked paid, but 1 full refund(s) recorded"),
        (_live_after_its_full_refund, "live, but its order"),
        (_licensed_without_a_signature, "requires a licence, without a signature"),
        (_downloaded_without_a_signature, "requires a licence, without a signature"),
        (_revoked_without_a_reason, "revoked without a full refund of its order"),
        (_order_of_another_kind, "is for another workspace, version or kind"),
        (_subscription_without_its_row, "a subscription entitlement without its subscription"),
    ],
    ids=lambda v: getattr(v, "__name__", "")[1:] or None,
)
def test_each_broken_business_rule_is_named(
    sold: tuple[Session, int, int], tamper: Callable[[Session, int, int], None], named: str
) -> None:
    db, priced, free = sold
    assert audit(session=db).ok
    tamper(db, priced, free)
    report = audit(session=db)
    assert report.first_break is not None and named in report.first_break, report.first_break
