"""The double-entry ledger, in integer minor units; it owns the write protocol.

A journal entry holds postings that sum to zero per currency. The database enforces it
(``0002_invariants``): an entry is written open, its postings inserted, then sealed; the
sealing UPDATE is refused unless the postings balance, a sealed entry takes no posting,
and on PostgreSQL a deferred constraint trigger re-checks every entry at commit.
Balances are derived from the postings of sealed entries; nothing stores a balance.

"Open, post, seal" lives here only, in :func:`record`: a caller asks for an entry
(:func:`sale_entry`, or :func:`sale`, :func:`renewal`, :func:`reversal`, which write
one) and never seals by hand. Checkout writes its sale in the same statement as its
order (``record(..., with_rows=...)``), renewals and refunds through :func:`post`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import ColumnElement, Table, bindparam, func, select, update
from sqlalchemy.orm import Session

from servekit.store.db import Rows, insert_rows, next_id
from servekit.store.models import JournalEntry, Posting, utcnow
from servekit.store.results import Balance

REVENUE = "revenue:sales"
ENTRIES: Table = JournalEntry.__table__  # type: ignore[assignment]
POSTINGS: Table = Posting.__table__  # type: ignore[assignment]
_SEAL = update(ENTRIES).where(ENTRIES.c.id == bindparam("entry_id")).values(sealed=True)


def provider_account(provider: str) -> str:
    """The asset account holding what a payment provider collected for us."""
    return f"assets:provider:{provider}"


@dataclass(frozen=True)
class Entry:
    """A journal entry to write: ``postings`` are (account, signed cents) in ``currency``.

    ``id`` is taken before the write (:func:`next_entry_id`), so rows written in the same
    statement may refer to it."""

    id: int
    memo: str
    postings: tuple[tuple[str, int], ...]
    currency: str
    order_id: int | None
    created_at: dt.datetime | None = None  # None: when it is written

    def rows(self) -> list[tuple[Table, Rows]]:
        """The open entry and its postings, for :func:`servekit.store.db.insert_rows`."""
        entry = {
            "id": self.id,
            "order_id": self.order_id,
            "memo": self.memo,
            "sealed": False,
            "created_at": self.created_at or utcnow(),
        }
        postings = [
            {"entry_id": self.id, "account": a, "currency": self.currency, "amount_cents": c}
            for a, c in self.postings
        ]
        return [(ENTRIES, [entry]), (POSTINGS, postings)]


def next_entry_id(dialect: str) -> ColumnElement[int]:
    """The id the next entry gets, as a column a caller's own read can take it with."""
    return next_id(ENTRIES, dialect)


def record(
    entries: Sequence[Entry],
    *,
    with_rows: Sequence[tuple[Table, Rows]] = (),
    session: Session,
) -> None:
    """The write protocol: ``with_rows`` (rows the entries belong with, such as their
    order, written first) and each entry open with its postings, in one
    :func:`~servekit.store.db.insert_rows`; then each entry sealed, which the database
    refuses unless its postings balance."""
    insert_rows(session, [*with_rows, *(rows for e in entries for rows in e.rows())])
    for entry in entries:
        session.connection().execute(_SEAL, {"entry_id": entry.id})


def post(
    memo: str,
    postings: Sequence[tuple[str, int]],
    *,
    currency: str,
    order_id: int | None,
    session: Session,
) -> int:
    """Write a sealed journal entry with ``postings`` (account, signed cents); returns its id.

    Three statements, in Core (the ORM's unit of work tripled confirm's cost): the entry's
    id, the open entry with its postings, then the seal (:func:`record`).
    """
    conn = session.connection()
    entry_id = int(conn.scalar(select(next_entry_id(conn.dialect.name))) or 0)
    record([Entry(entry_id, memo, tuple(postings), currency, order_id)], session=session)
    return entry_id


def sale_entry(
    entry_id: int, order_id: int, amount: int, currency: str, provider: str, now: dt.datetime
) -> Entry:
    """:func:`sale` as an entry to :func:`record`, for confirm's one write."""
    postings = _collect(amount, provider)
    return Entry(entry_id, _sale_memo(order_id), postings, currency, order_id, now)


def sale(order_id: int, amount: int, currency: str, provider: str, *, session: Session) -> int:
    """Money collected by ``provider`` for an order: debit the provider, credit revenue."""
    return _collected(_sale_memo(order_id), order_id, amount, currency, provider, session)


def _sale_memo(order_id: int) -> str:
    return f"sale order {order_id}"


def _collect(amount: int, provider: str) -> tuple[tuple[str, int], ...]:
    return ((provider_account(provider), amount), (REVENUE, -amount))


def _collected(
    memo: str, order_id: int, amount: int, currency: str, provider: str, session: Session
) -> int:
    return post(
        memo, _collect(amount, provider), currency=currency, order_id=order_id, session=session
    )


def reversal(order_id: int, amount: int, currency: str, provider: str, *, session: Session) -> int:
    """The mirror of :func:`sale`, for a refund."""
    return post(
        f"refund order {order_id}",
        [(REVENUE, amount), (provider_account(provider), -amount)],
        currency=currency,
        order_id=order_id,
        session=session,
    )


def renewal(
    subscription_id: int,
    order_id: int,
    amount: int,
    currency: str,
    provider: str,
    *,
    session: Session,
) -> int:
    """A subscription renewed for another period: a sale tied to the subscription's order."""
    memo = f"renewal subscription {subscription_id}"
    return _collected(memo, order_id, amount, currency, provider, session)


def balances(*, session: Session) -> list[Balance]:
    """Every account's balance, summed from the postings of sealed entries."""
    rows = session.execute(
        select(Posting.account, Posting.currency, func.sum(Posting.amount_cents))
        .join(JournalEntry, JournalEntry.id == Posting.entry_id)
        .where(JournalEntry.sealed.is_(True))
        .group_by(Posting.account, Posting.currency)
        .order_by(Posting.account, Posting.currency)
    )
    return [Balance(account=a, currency=c, amount_cents=int(s)) for a, c, s in rows]


def unbalanced_entries(*, session: Session) -> list[int]:
    """Ids of entries whose postings do not sum to zero in some currency (should be none)."""
    sums = (
        select(Posting.entry_id)
        .group_by(Posting.entry_id, Posting.currency)
        .having(func.sum(Posting.amount_cents) != 0)
    )
    return sorted(set(session.scalars(sums)))
