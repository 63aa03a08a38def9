"""``servekit store audit``: recompute the signature chain and the ledger sums.

Checks, in order, and reports the first break:
  1. signatures run seq 1..n without a gap, each ``prev_hash`` is the previous
     ``row_hash`` (genesis: 64 zeros) and each ``row_hash`` recomputes from the row;
  2. each signature's terms text hashes to its ``terms_sha256`` and each affirmation's
     clause text to its ``clause_sha256``; where the signer's personal data is still
     there, it matches the salted digest the chain holds (erased data is not a break);
  3. every journal entry is sealed and sums to zero per currency;
  4. every paid order with a price has exactly one sale entry that matches it.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from servekit.store import ledger
from servekit.store.licences import GENESIS, personal_digest, row_hash, sha256_text
from servekit.store.models import (
    JournalEntry,
    LicenceAffirmation,
    LicenceSignature,
    LicenceSigner,
    Order,
    Posting,
    Renewal,
)
from servekit.store.results import AuditReport


def _signature_break(
    row: LicenceSignature, expected_seq: int, prev: str, session: Session
) -> str | None:
    where = f"signature seq {row.seq} (id {row.id})"
    if row.seq != expected_seq:
        return f"{where}: expected seq {expected_seq}, a row is missing"
    if row.prev_hash != prev:
        return f"{where}: prev_hash {row.prev_hash[:12]} is not the previous row_hash {prev[:12]}"
    affs = session.scalars(
        select(LicenceAffirmation).where(LicenceAffirmation.signature_id == row.id)
    ).all()
    if row_hash(row, [(a.clause.value, a.clause_sha256) for a in affs]) != row.row_hash:
        return f"{where}: row_hash does not recompute from the row"
    if sha256_text(row.terms_text) != row.terms_sha256:
        return f"{where}: terms text does not hash to terms_sha256"
    bad = [a.clause.value for a in affs if sha256_text(a.clause_text) != a.clause_sha256]
    if bad:
        return f"{where}: clause text of {', '.join(bad)} does not hash to its clause_sha256"
    person = session.get(LicenceSigner, row.id)
    if person is not None and row.personal_sha256 != personal_digest(
        person.salt, person.signer_name, person.signer_title, person.ip, person.user_agent
    ):
        return f"{where}: the signer's personal data does not match the chained digest"
    return None


def _chain_break(session: Session) -> tuple[int, str | None]:
    prev, count = GENESIS, 0
    for count, row in enumerate(
        session.scalars(select(LicenceSignature).order_by(LicenceSignature.seq)), start=1
    ):
        problem = _signature_break(row, count, prev, session)
        if problem:
            return count, problem
        prev = row.row_hash
    return count, None


def _ledger_break(session: Session) -> str | None:
    unsealed = session.scalar(
        select(func.min(JournalEntry.id)).where(JournalEntry.sealed.is_(False))
    )
    if unsealed is not None:
        return f"journal entry {unsealed} is not sealed"
    unbalanced = ledger.unbalanced_entries(session=session)
    if unbalanced:
        return f"journal entry {unbalanced[0]} does not sum to zero"
    for order in session.scalars(select(Order).where(Order.amount_cents > 0).order_by(Order.id)):
        sales = session.scalars(
            select(Posting.amount_cents)
            .join(JournalEntry, JournalEntry.id == Posting.entry_id)
            .where(JournalEntry.order_id == order.id, Posting.account == ledger.REVENUE)
            .order_by(Posting.id)
        ).all()
        if not sales or sales[0] != -order.amount_cents:
            return f"order {order.id}: no sale entry of {order.amount_cents} {order.currency}"
    paid = select(Renewal).where(Renewal.payment_ref.is_not(None)).order_by(Renewal.id)
    for renewal in session.scalars(paid):
        revenue = session.scalar(
            select(func.sum(Posting.amount_cents)).where(
                Posting.entry_id == renewal.entry_id, Posting.account == ledger.REVENUE
            )
        )
        if revenue != -renewal.amount_cents:
            return f"renewal {renewal.id}: no sale entry of {renewal.amount_cents}"
    return None


def audit(*, session: Session) -> AuditReport:
    """Recompute the chain and the ledger; ``first_break`` is None when both hold."""
    signatures, problem = _chain_break(session)
    problem = problem or _ledger_break(session)
    return AuditReport(
        signatures=signatures,
        entries=session.scalar(select(func.count(JournalEntry.id))) or 0,
        postings=session.scalar(select(func.count(Posting.id))) or 0,
        first_break=problem,
    )
