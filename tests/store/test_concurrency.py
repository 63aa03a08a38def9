"""Concurrent confirms charge once; a fault after any statement of confirm leaves nothing.

These need real commits, so each test has a database of its own (``fresh_store``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, func, select

from servekit.errors import AlreadyOwnedError
from servekit.store.checkout import confirm, create_quote
from servekit.store.db import Store
from servekit.store.models import (
    Entitlement,
    JournalEntry,
    Order,
    OrderKind,
    OrderStatus,
    OutboxMessage,
    Posting,
    Refund,
    Subscription,
)
from servekit.store.providers import SandboxProvider
from servekit.store.results import OrderInfo, Principal
from tests.store.conftest import Packages, member, publish_one
from tests.store.test_checkout import _sign

THREADS = 16


class CountingProvider(SandboxProvider):
    """The sandbox, counting the charges it is asked to make."""

    def __init__(self) -> None:
        super().__init__()
        self.charges: list[str] = []
        self._lock = threading.Lock()

    def charge(self, amount_cents: int, currency: str, *, idempotency_key: str, memo: str) -> str:
        with self._lock:
            self.charges.append(idempotency_key)
        return super().charge(amount_cents, currency, idempotency_key=idempotency_key, memo=memo)


def _setup(store: Store, packages: Packages, key: Path, pkg: Path, slug: str = "acme") -> Principal:
    with store.transaction() as s:
        publish_one(pkg, key, store.kits_dir, s)
        return member(s, slug)


def _race(work: Callable[[int], Any]) -> list[Any]:
    barrier = threading.Barrier(THREADS)
    results: list[Any] = [None] * THREADS

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = work(i)
        except Exception as exc:  # collected and asserted on below
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return results


def _counts(store: Store) -> dict[str, int]:
    with store.transaction() as s:
        return {
            m.__tablename__: s.scalar(select(func.count()).select_from(m)) or 0
            for m in (Order, Entitlement, JournalEntry, Posting, OutboxMessage, Subscription)
        }


def test_concurrent_confirms_with_one_key_charge_once(
    fresh_store: Store, packages: Packages, key: Path
) -> None:
    who = _setup(fresh_store, packages, key, packages.priced)
    with fresh_store.transaction() as s:
        quote = create_quote(who, "test-priced", "1.0.0", OrderKind.PURCHASE, session=s)
    provider = CountingProvider()

    def work(_: int) -> OrderInfo:
        with fresh_store.transaction() as s:
            return confirm(who, quote.id, "same-key", provider=provider, session=s)

    results = _race(work)
    assert all(isinstance(r, OrderInfo) for r in results), results
    assert len({r.id for r in results}) == 1
    assert len(provider.charges) == 1
    assert _counts(fresh_store) | {"outbox": 1} == {
        "orders": 1,
        "entitlements": 1,
        "journal_entries": 1,
        "postings": 2,
        "outbox": 1,
        "subscriptions": 0,
    }


def test_concurrent_confirms_with_distinct_keys_buy_once(
    fresh_store: Store, packages: Packages, key: Path
) -> None:
    who = _setup(fresh_store, packages, key, packages.priced)
    with fresh_store.transaction() as s:
        quotes = [
            create_quote(who, "test-priced", "1.0.0", OrderKind.PURCHASE, session=s).id
            for _ in range(THREADS)
        ]
    provider = CountingProvider()

    def work(i: int) -> OrderInfo:
        with fresh_store.transaction() as s:
            return confirm(who, quotes[i], f"key-{i}", provider=provider, session=s)

    results = _race(work)
    assert sum(isinstance(r, OrderInfo) for r in results) == 1
    assert sum(isinstance(r, AlreadyOwnedError) for r in results) == THREADS - 1, results
    assert len(provider.charges) == 1
    assert _counts(fresh_store)["postings"] == 2


class InjectedFaultError(Exception):
    pass


def test_a_fault_after_any_statement_of_confirm_leaves_nothing(
    fresh_store: Store, packages: Packages, key: Path
) -> None:
    who = _setup(fresh_store, packages, key, packages.enterprise)
    with fresh_store.transaction() as s:
        _sign(s, who, "kimi-k3-8xb300", "1.0.0")
        quote = create_quote(who, "kimi-k3-8xb300", "1.0.0", OrderKind.PURCHASE, session=s)
    before = _counts(fresh_store)
    state = {"n": 0, "fail_at": 0}

    def after(_conn: object, cursor: Any, *_: object) -> None:
        state["n"] += 1
        if state["n"] == state["fail_at"]:
            cursor.close()  # as a failed statement would leave it
            raise InjectedFaultError(f"statement {state['n']}")

    def attempt(fail_at: int) -> None:
        state.update(n=0, fail_at=fail_at)
        with fresh_store.transaction() as s:
            confirm(who, quote.id, "k", provider=SandboxProvider(), session=s)

    event.listen(fresh_store.engine, "after_cursor_execute", after)
    try:
        with pytest.raises(InjectedFaultError), fresh_store.transaction() as s:  # count, roll back
            confirm(who, quote.id, "k", provider=SandboxProvider(), session=s)
            statements = state["n"]
            raise InjectedFaultError("dry run")
        assert _counts(fresh_store) == before
        # PostgreSQL: lock, facts, one INSERT of every row, seal. SQLite: BEGIN IMMEDIATE,
        # facts, an INSERT per table (order, entry, postings, entitlement, outbox), seal.
        dialect = fresh_store.engine.dialect.name
        assert statements == {"postgresql": 4, "sqlite": 8}[dialect], statements
        for fail_at in range(1, statements + 1):
            with pytest.raises(InjectedFaultError):
                attempt(fail_at)
            assert _counts(fresh_store) == before, f"partial write after statement {fail_at}"
        attempt(0)
    finally:
        event.remove(fresh_store.engine, "after_cursor_execute", after)
    after_counts = _counts(fresh_store)
    assert after_counts["orders"] == before["orders"] + 1
    assert after_counts["postings"] == before["postings"] + 2


def _refund_worker(url: str, home: str, job: tuple[str, str], gate: Any, out: Any) -> None:
    """One process: a Stripe delivery through the store, as the web route makes it, or
    ``servekit store refund`` through the operator function; reports what happened."""
    from servekit.config import load_settings
    from servekit.store import operator
    from servekit.store.db import make_engine
    from tests.store.test_webhooks import SECRET, _refund_event, _signed, handle_stripe_webhook

    kind, arg = job
    store = Store(engine=make_engine(url), home=Path(home))
    gate.wait()
    try:
        if kind == "refund":
            settings = load_settings({"SERVEKIT_DATABASE_URL": url, "SERVEKIT_HOME": home})
            done = operator.refund(settings, int(arg), "operator")
            out.put((job, "ok", done.status.value))
        else:
            payment, event_id = arg.split("/")
            with store.transaction() as s:
                res = handle_stripe_webhook(
                    *_signed(_refund_event(event_id, payment)), SECRET, session=s
                )
            out.put((job, "ok", "duplicate" if res.duplicate else res.action))
    except Exception as exc:  # reported to the parent, which asserts on it
        out.put((job, type(exc).__name__, str(exc)))
    finally:
        store.engine.dispose()


def test_refunds_racing_in_several_processes_reverse_one_payment_once(
    fresh_store: Store, packages: Packages, key: Path
) -> None:
    """Provider events (two of them the same event, delivered twice) and an operator's
    ``store refund`` at one payment, each in its own process behind a barrier: one
    reversal, one refund row, the duplicate answered as a duplicate, nothing fails but
    the operator's "already refunded"."""
    import multiprocessing

    from tests.store.conftest import StripeLikeProvider

    who = _setup(fresh_store, packages, key, packages.priced)
    ctx = multiprocessing.get_context("fork")
    for rnd in range(2):
        with fresh_store.transaction() as s:
            quote = create_quote(who, "test-priced", "1.0.0", OrderKind.PURCHASE, session=s)
            order = confirm(who, quote.id, f"r{rnd}", provider=StripeLikeProvider(), session=s)
        ref = order.payment_ref
        jobs = [
            ("event", f"{ref}/evt_{rnd}_a"),
            ("event", f"{ref}/evt_{rnd}_a"),
            ("event", f"{ref}/evt_{rnd}_b"),
            ("refund", str(order.id)),
        ]
        fresh_store.engine.dispose()  # the children open their own connections
        gate, out = ctx.Barrier(len(jobs)), ctx.Queue()
        url = fresh_store.engine.url.render_as_string(hide_password=False)
        procs = [
            ctx.Process(target=_refund_worker, args=(url, str(fresh_store.home), j, gate, out))
            for j in jobs
        ]
        for p in procs:
            p.start()
        results = [out.get(timeout=120) for _ in jobs]
        for p in procs:
            p.join(timeout=60)
        failed = [r for r in results if r[1] != "ok"]
        assert all(r[1] == "StoreConflictError" and "already" in r[2] for r in failed), results
        assert [r[2] for r in results if r[0][1].endswith("_a")].count("duplicate") == 1, results
        with fresh_store.transaction() as s:
            reversals = s.scalar(
                select(func.count(JournalEntry.id)).where(
                    JournalEntry.order_id == order.id, JournalEntry.memo.like("refund %")
                )
            )
            refunds = s.scalar(select(func.count(Refund.id)).where(Refund.order_id == order.id))
            status = s.scalar(select(Order.status).where(Order.id == order.id))
        assert (reversals, refunds, status) == (1, 1, OrderStatus.REFUNDED), results
