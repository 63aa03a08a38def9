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
