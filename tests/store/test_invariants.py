"""The database itself refuses what the services never do: raw SQL, bypassing the services."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from servekit.store.checkout import confirm, create_quote
from servekit.store.models import OrderKind
from servekit.store.providers import SandboxProvider
from servekit.store.publishing import get_version
from servekit.store.results import Principal
from tests.store.conftest import Packages, member, publish_one
from tests.store.test_checkout import _sign


@pytest.fixture
def shop(db: Session, packages: Packages, key: Path, kits_dir: Path) -> Session:
    for path in (packages.priced, packages.enterprise):
        publish_one(path, key, kits_dir, db)
    return db


def _rejected(session: Session, sql: str, match: str, **params: Any) -> None:
    with pytest.raises(IntegrityError, match=match), session.begin_nested():
        session.execute(text(sql), params)


def _enterprise_buy(session: Session) -> tuple[Principal, int]:
    who = member(session, "acme")
    sig = _sign(session, who, "kimi-k3-8xb300", "1.0.0")
    quote = create_quote(who, "kimi-k3-8xb300", "1.0.0", OrderKind.PURCHASE, session=session)
    confirm(who, quote.id, "k", provider=SandboxProvider(), session=session)
    return who, sig


@pytest.mark.parametrize("table", ["licence_signatures", "licence_affirmations", "postings"])
def test_update_and_delete_are_rejected(shop: Session, table: str) -> None:
    _enterprise_buy(shop)
    column = {"licence_signatures": "licensed_entity", "licence_affirmations": "clause_text"}
    col = column.get(table, "account")
    _rejected(shop, f"UPDATE {table} SET {col} = 'forged'", "append-only")
    _rejected(shop, f"DELETE FROM {table}", "append-only")


def test_journal_entries_cannot_be_deleted_or_reopened(shop: Session) -> None:
    _enterprise_buy(shop)
    _rejected(shop, "DELETE FROM journal_entries", "append-only")
    _rejected(shop, "UPDATE journal_entries SET sealed = false", "append-only")
    _rejected(shop, "UPDATE journal_entries SET memo = 'x'", "append-only")


def _open_entry(session: Session, *amounts: int) -> int:
    entry = session.execute(
        text(
            "INSERT INTO journal_entries (memo, sealed, created_at) "
            "VALUES ('raw', false, CURRENT_TIMESTAMP) RETURNING id"
        )
    ).scalar_one()
    for n, amount in enumerate(amounts):
        session.execute(
            text(
                "INSERT INTO postings (entry_id, account, currency, amount_cents) "
                "VALUES (:e, :a, 'usd', :c)"
            ),
            {"e": entry, "a": f"acct:{n}", "c": amount},
        )
    return int(entry)


def test_an_unbalanced_entry_cannot_be_sealed(shop: Session) -> None:
    with shop.begin_nested():
        entry = _open_entry(shop, 500, -499)
        _rejected(
            shop, "UPDATE journal_entries SET sealed = true WHERE id = :e", "unbalanced", e=entry
        )


def test_a_single_posting_cannot_be_sealed(shop: Session) -> None:
    with shop.begin_nested():
        entry = _open_entry(shop, 0)
        _rejected(
            shop, "UPDATE journal_entries SET sealed = true WHERE id = :e", "unbalanced", e=entry
        )


def test_a_sealed_entry_takes_no_posting(shop: Session) -> None:
    with shop.begin_nested():
        entry = _open_entry(shop, 500, -500)
        shop.execute(text("UPDATE journal_entries SET sealed = true WHERE id = :e"), {"e": entry})
        _rejected(
            shop,
            "INSERT INTO postings (entry_id, account, currency, amount_cents) "
            "VALUES (:e, 'x', 'usd', 1)",
            "sealed",
            e=entry,
        )


def test_postgresql_checks_the_sum_at_commit(shop: Session) -> None:
    if shop.get_bind().dialect.name != "postgresql":
        pytest.skip("the deferred constraint trigger is PostgreSQL's; SQLite relies on sealing")
    with pytest.raises(IntegrityError, match="unbalanced"), shop.begin_nested():
        _open_entry(shop, 500, -1)
        shop.execute(text("SET CONSTRAINTS postings_balanced IMMEDIATE"))


def _raw_order(session: Session, who: Principal, version_id: int, key: str) -> int:
    return int(
        session.execute(
            text(
                "INSERT INTO orders (workspace_id, user_id, quote_id, version_id, kind, currency, "
                "amount_cents, idempotency_key, request_sha256, status, created_at) VALUES "
                "(:w, :u, (SELECT MIN(id) FROM quotes), :v, 'purchase', 'usd', 0, :k, 'x', "
                "'paid', CURRENT_TIMESTAMP) RETURNING id"
            ),
            {"w": who.workspace_id, "u": who.user_id, "v": version_id, "k": key},
        ).scalar_one()
    )


INSERT_ENTITLEMENT = (
    "INSERT INTO entitlements (workspace_id, version_id, order_id, kind, signature_id, created_at) "
    "VALUES (:w, :v, :o, 'purchase', :s, CURRENT_TIMESTAMP)"
)


def _entitlement_params(shop: Session, who: Principal, pkg: str, sig: int | None) -> dict[str, Any]:
    """A raw order for ``pkg`` and the parameters of a raw entitlement insert for it."""
    version = get_version(pkg, "1.0.0", session=shop).id
    order = _raw_order(shop, who, version, "raw")
    return {"w": who.workspace_id, "v": version, "o": order, "s": sig}


def test_an_enterprise_entitlement_without_signature_is_rejected(shop: Session) -> None:
    who = member(shop, "acme")
    create_quote(who, "kimi-k3-8xb300", "1.0.0", OrderKind.PURCHASE, session=shop)
    params = _entitlement_params(shop, who, "kimi-k3-8xb300", None)
    _rejected(shop, INSERT_ENTITLEMENT, "needs a signature", **params)


def test_a_signature_of_another_workspace_is_rejected_by_the_database(shop: Session) -> None:
    _, foreign_sig = _enterprise_buy(shop)
    params = _entitlement_params(shop, member(shop, "thief"), "kimi-k3-8xb300", foreign_sig)
    _rejected(shop, INSERT_ENTITLEMENT, "needs a signature", **params)


def test_an_entitlement_keeps_its_signature(shop: Session) -> None:
    _enterprise_buy(shop)
    _rejected(shop, "UPDATE entitlements SET signature_id = NULL", "keeps|needs a signature")


def test_a_standard_entitlement_needs_no_signature(shop: Session) -> None:
    who = member(shop, "acme")
    create_quote(who, "test-priced", "1.0.0", OrderKind.PURCHASE, session=shop)
    shop.execute(text(INSERT_ENTITLEMENT), _entitlement_params(shop, who, "test-priced", None))


def test_the_chain_refuses_a_row_that_does_not_follow_the_head(shop: Session) -> None:
    who, _ = _enterprise_buy(shop)
    version = get_version("kimi-k3-8xb300", "1.0.0", session=shop).id
    _rejected(
        shop,
        "INSERT INTO licence_signatures (seq, workspace_id, version_id, licensed_entity, "
        "authority_statement, terms_text, terms_sha256, personal_sha256, signed_at, prev_hash, "
        "row_hash) VALUES (2, :w, :v, 'e', 'a', 't', 'h', 'p', CURRENT_TIMESTAMP, :prev, 'r')",
        "broken chain",
        w=who.workspace_id,
        v=version,
        prev="f" * 64,
    )


def test_a_published_price_never_changes(shop: Session) -> None:
    _rejected(shop, "UPDATE package_versions SET price_cents = 1", "keeps its price")
    shop.execute(text("UPDATE package_versions SET retract_reason = 'allowed'"))
