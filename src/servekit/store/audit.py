"""``servekit store audit``: recompute the signature chain and the ledger sums.

Checks, in order, and reports the first break:
  1. signatures run seq 1..n without a gap, each ``prev_hash`` is the previous
     ``row_hash`` (genesis: 64 zeros) and each ``row_hash`` recomputes from the row;
  2. each signature's terms text hashes to its ``terms_sha256`` and each affirmation's
     clause text to its ``clause_sha256``; where the signer's personal data is still
     there, it matches the salted digest the chain holds (erased data is not a break);
  3. every journal entry is sealed and sums to zero per currency;
  4. every paid order with a price has exactly one sale entry that matches it;
  5. each order is refunded at most once in full and by at most its amount, its reversals
     in the ledger add up to its refunds, and it is marked refunded exactly when a full
     refund closed it;
  6. every live entitlement is backed by its order (same workspace, version and kind, not
     refunded; a subscription's by its subscription row), every entitlement to a version
     that requires a licence by a signature of its workspace and version, and every
     revocation by the order's full refund or a recorded reason;
  7. every download of a version that requires a licence by a signature of the workspace.
"""

from __future__ import annotations

from sqlalchemy import and_, case, func, select
from sqlalchemy.orm import Session

from servekit.store import ledger
from servekit.store.licences import GENESIS, personal_digest, row_hash, sha256_text
from servekit.store.models import (
    Download,
    Entitlement,
    JournalEntry,
    LicenceAffirmation,
    LicenceSignature,
    LicenceSigner,
    Order,
    OrderKind,
    OrderStatus,
    PackageVersion,
    Posting,
    Refund,
    Renewal,
    Subscription,
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


def _refund_break(session: Session) -> str | None:
    """Check 5, over every order in one statement."""
    refunds = (
        select(
            Refund.order_id,
            func.sum(Refund.amount_cents).label("total"),
            func.sum(case((Refund.full_refund, 1), else_=0)).label("full"),
        )
        .group_by(Refund.order_id)
        .subquery()
    )
    reversals = (
        select(JournalEntry.order_id, func.sum(Posting.amount_cents).label("total"))
        .join(Posting, Posting.entry_id == JournalEntry.id)
        .where(Posting.account == ledger.REVENUE, Posting.amount_cents > 0)
        .group_by(JournalEntry.order_id)
        .subquery()
    )
    rows = session.execute(
        select(
            Order.id,
            Order.amount_cents,
            Order.status,
            func.coalesce(refunds.c.total, 0),
            func.coalesce(refunds.c.full, 0),
            func.coalesce(reversals.c.total, 0),
        )
        .outerjoin(refunds, refunds.c.order_id == Order.id)
        .outerjoin(reversals, reversals.c.order_id == Order.id)
        .order_by(Order.id)
    )
    for order_id, amount, status, refunded, full, reversed_ in rows:
        problem = _order_refund_problem(amount, status, int(refunded), int(full), int(reversed_))
        if problem:
            return f"order {order_id}: {problem}"
    return None


def _order_refund_problem(
    amount: int, status: OrderStatus, refunded: int, full: int, reversed_: int
) -> str | None:
    if full > 1:
        return f"refunded in full {full} times"
    if refunded > amount:
        return f"refunded {refunded}, more than the {amount} it was paid"
    if reversed_ > amount:
        return f"reversed {reversed_} in the ledger, more than the {amount} it was paid"
    if reversed_ != refunded:
        return f"reversed {reversed_} in the ledger, but its refunds total {refunded}"
    if (status is OrderStatus.REFUNDED) != (full == 1):
        return f"marked {status.value}, but {full} full refund(s) recorded"
    return None


def _entitlement_break(session: Session) -> str | None:
    """Check 6, over every entitlement in one statement."""
    full_refund = (
        select(Refund.id).where(Refund.order_id == Entitlement.order_id, Refund.full_refund)
    ).exists()
    rows = session.execute(
        select(Entitlement, Order, PackageVersion.licence_required, LicenceSignature.id)
        .join(Order, Order.id == Entitlement.order_id)
        .join(PackageVersion, PackageVersion.id == Entitlement.version_id)
        .outerjoin(
            LicenceSignature,
            and_(
                LicenceSignature.id == Entitlement.signature_id,
                LicenceSignature.workspace_id == Entitlement.workspace_id,
                LicenceSignature.version_id == Entitlement.version_id,
            ),
        )
        .add_columns(
            full_refund,
            select(Subscription.id)
            .where(
                Subscription.entitlement_id == Entitlement.id,
                Subscription.workspace_id == Entitlement.workspace_id,
            )
            .exists(),
        )
        .order_by(Entitlement.id)
    )
    for ent, order, licensed, signature, refunded, subscribed in rows:
        problem = _entitlement_problem(ent, order, licensed and signature is None, refunded)
        if problem is None and ent.kind is OrderKind.SUBSCRIPTION and not subscribed:
            problem = "a subscription entitlement without its subscription"
        if problem:
            return f"entitlement {ent.id}: {problem}"
    return None


def _entitlement_problem(
    ent: Entitlement, order: Order, unsigned: bool, refunded: bool
) -> str | None:
    if unsigned:
        return "to a version that requires a licence, without a signature of its workspace"
    if (order.workspace_id, order.version_id, order.kind) != (
        ent.workspace_id,
        ent.version_id,
        ent.kind,
    ):
        return f"its order {order.id} is for another workspace, version or kind"
    if ent.revoked_at is None and order.status is not OrderStatus.PAID:
        return f"live, but its order {order.id} is {order.status.value}"
    if ent.revoked_at is not None and not refunded and not _recorded(ent.revoke_reason):
        return "revoked without a full refund of its order or a recorded reason"
    return None


def _recorded(reason: str | None) -> bool:
    """A reason of its own: "refunded: ..." is what a refund writes, not a reason."""
    return bool(reason and reason.strip()) and not str(reason).startswith("refunded")


def _download_break(session: Session) -> str | None:
    """Check 7: the first download of a licensed version its workspace never signed for."""
    signed = (
        select(LicenceSignature.id)
        .where(
            LicenceSignature.workspace_id == Download.workspace_id,
            LicenceSignature.version_id == Download.version_id,
        )
        .exists()
    )
    first = session.scalar(
        select(func.min(Download.id))
        .join(PackageVersion, PackageVersion.id == Download.version_id)
        .where(PackageVersion.licence_required.is_(True), ~signed)
    )
    if first is None:
        return None
    return f"download {first}: of a version that requires a licence, without a signature"


def audit(*, session: Session) -> AuditReport:
    """Recompute the chain, the ledger and the business rules; ``first_break`` is None
    when they all hold."""
    signatures, problem = _chain_break(session)
    problem = (
        problem
        or _ledger_break(session)
        or _refund_break(session)
        or _entitlement_break(session)
        or _download_break(session)
    )
    return AuditReport(
        signatures=signatures,
        entries=session.scalar(select(func.count(JournalEntry.id))) or 0,
        postings=session.scalar(select(func.count(Posting.id))) or 0,
        first_break=problem,
    )
