"""The double-entry ledger, in integer minor units.

A journal entry holds postings that sum to zero per currency. The database enforces it
(``0002_invariants``): an entry is written open, its postings inserted, then sealed; the
sealing UPDATE is refused unless the postings balance, a sealed entry takes no posting,
and on PostgreSQL a deferred constraint trigger re-checks every entry at commit.
Balances are derived from the postings of sealed entries; nothing stores a balance.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from sqlalchemy import Table, bindparam, func, select, update
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
    id, the open entry with its postings (:func:`entry_rows`), then :func:`seal`.
    """
    conn = session.connection()
    entry_id = int(conn.scalar(select(next_id(ENTRIES, conn.dialect.name))) or 0)
    insert_rows(session, entry_rows(entry_id, memo, postings, currency, order_id, utcnow()))
    seal(entry_id, session=session)
    return entry_id


def entry_rows(
    entry_id: int,
    memo: str,
    postings: Sequence[tuple[str, int]],
    currency: str,
    order_id: int | None,
    now: dt.datetime,
) -> list[tuple[Table, Rows]]:
    """The open entry ``entry_id`` (an id from :func:`servekit.store.db.next_id`) and its
    postings, for :func:`servekit.store.db.insert_rows`: a caller may write them in the
    same statement as the rows they belong with. :func:`seal` must follow."""
    return [
        (
            ENTRIES,
            [
                {
                    "id": entry_id,
                    "order_id": order_id,
                    "memo": memo,
                    "sealed": False,
                    "created_at": now,
                }
            ],
        ),
        (
            POSTINGS,
            [
                {"entry_id": entry_id, "account": a, "currency": currency, "amount_cents": c}
                for a, c in postings
            ],
        ),
    ]


def sale_rows(
    entry_id: int, order_id: int, amount: int, currency: str, provider: str, now: dt.datetime
) -> list[tuple[Table, Rows]]:
    """:func:`sale` as rows (see :func:`entry_rows`), for confirm's one write."""
    return entry_rows(
        entry_id, _sale_memo(order_id), _collect(amount, provider), currency, order_id, now
    )


def seal(entry_id: int, *, session: Session) -> None:
    """Seal an open entry; the database refuses unless its postings balance."""
    session.connection().execute(_SEAL, {"entry_id": entry_id})


def sale(order_id: int, amount: int, currency: str, provider: str, *, session: Session) -> int:
    """Money collected by ``provider`` for an order: debit the provider, credit revenue."""
    return _collected(_sale_memo(order_id), order_id, amount, currency, provider, session)


def _sale_memo(order_id: int) -> str:
    return f"sale order {order_id}"


def _collect(amount: int, provider: str) -> list[tuple[str, int]]:
    return [(provider_account(provider), amount), (REVENUE, -amount)]


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
