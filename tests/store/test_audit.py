"""``audit`` recomputes the chain and the ledger and names the first break."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from servekit.store.audit import audit
from servekit.store.licences import erase_personal_data
from tests.store.conftest import Packages, publish_one
from tests.store.test_invariants import _enterprise_buy, _open_entry

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
