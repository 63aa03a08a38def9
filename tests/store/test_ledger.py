"""The ledger's write protocol: every entry, whoever asks for it, is written open with its
postings and sealed by ``ledger.record``, which the database refuses unless it balances."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from servekit.store import ledger
from servekit.store.checkout import refund_order
from servekit.store.models import JournalEntry
from tests.store.conftest import Packages, sold_priced


def _entries(db: Session) -> list[tuple[str, bool]]:
    return [(e.memo, e.sealed) for e in db.scalars(select(JournalEntry).order_by(JournalEntry.id))]


def test_a_sale_and_its_refund_are_written_sealed_and_balanced(
    db: Session, packages: Packages, key: Path, kits_dir: Path
) -> None:
    order = sold_priced(db, packages, key, kits_dir)
    refund_order(order.id, "operator", amount_cents=1000, session=db)
    db.expire_all()
    assert _entries(db) == [(f"sale order {order.id}", True), (f"refund order {order.id}", True)]
    assert ledger.unbalanced_entries(session=db) == []
    balances = {b.account: b.amount_cents for b in ledger.balances(session=db)}
    assert balances == {ledger.REVENUE: -3999, ledger.provider_account("stripe"): 3999}


def test_record_refuses_an_unbalanced_entry(db: Session) -> None:
    conn = db.connection()
    entry_id = int(conn.scalar(select(ledger.next_entry_id(conn.dialect.name))) or 0)
    lopsided = ledger.Entry(entry_id, "lopsided", (("a", 500), ("b", -499)), "usd", None)
    with pytest.raises(IntegrityError, match="unbalanced"), db.begin_nested():
        ledger.record([lopsided], session=db)
    assert db.get(JournalEntry, entry_id) is None
