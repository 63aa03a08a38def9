"""A hypothesis state machine over publish / quote / sign / confirm / refund / subscribe /
cancel / retract / download / renew-due: after every step, every invariant holds."""

from __future__ import annotations

import contextlib
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from servekit.errors import Error
from servekit.store import ledger
from servekit.store.audit import audit
from servekit.store.checkout import PERIOD, confirm, create_quote, refund_order
from servekit.store.entitlements import cancel_subscription, download, downloadable
from servekit.store.models import (
    Entitlement,
    JournalEntry,
    LicenceSignature,
    Order,
    OrderKind,
    PackageVersion,
    Refund,
    Renewal,
    RenewalOutcome,
    Subscription,
    utcnow,
)
from servekit.store.providers import SandboxProvider
from servekit.store.publishing import latest_version, retract
from servekit.store.renewals import due_subscriptions, renew_subscription
from servekit.store.results import OrderInfo, Principal, RenewalInfo
from tests.store.conftest import Packages, member, publish_one
from tests.store.test_checkout import _sign

SANDBOX = SandboxProvider()
DECLINING = SandboxProvider(decline_renewals=True)
VERSIONS = {"test-free": ["1.0.0"], "test-priced": ["1.0.0", "1.1.0"], "kimi-k3-8xb300": ["1.0.0"]}


def machine(
    db: Session,
    packages: Packages,
    key: Path,
    kits_dir: Path,
    people: list[Principal],
    confirmed: list[int],
    renewed: list[RenewalOutcome],
) -> type:
    class Store(RuleBasedStateMachine):
        quotes = Bundle("quotes")
        orders = Bundle("orders")

        def __init__(self) -> None:
            super().__init__()
            self.tx = db.begin_nested()

        def teardown(self) -> None:
            self.tx.rollback()

        @initialize(target=orders, who=st.sampled_from(people))
        def publish_catalog(self, who: Principal) -> Any:
            """Publish; one workspace starts with maintenance (it buys the version first,
            then adds it), so the renewal rules have work from the first step on."""
            for path in (packages.free, packages.priced, packages.enterprise):
                publish_one(path, key, kits_dir, db)
            return self.subscribe(who, 0)

        @rule()
        def publish_a_new_version(self) -> None:
            publish_one(packages.priced_v2, key, kits_dir, db)

        @rule(
            target=quotes,
            who=st.sampled_from(people),
            pkg=st.sampled_from(sorted(VERSIONS)),
            pick=st.integers(0, 1),
            kind=st.sampled_from(list(OrderKind)),
        )
        def quote(self, who: Principal, pkg: str, pick: int, kind: OrderKind) -> Any:
            return (who, self._quote(who, pkg, pick, kind))

        def _quote(self, who: Principal, pkg: str, pick: int, kind: OrderKind) -> int:
            version = VERSIONS[pkg][pick % len(VERSIONS[pkg])]
            try:
                return create_quote(who, pkg, version, kind, session=db).id
            except Error:
                return -1

        @rule(who=st.sampled_from(people))
        def sign(self, who: Principal) -> None:
            with contextlib.suppress(Error):  # not published yet
                _sign(db, who, "kimi-k3-8xb300", "1.0.0")

        @rule(target=orders, q=quotes, idem=st.sampled_from(["a", "b", "c"]))
        def confirm(self, q: tuple[Principal, int], idem: str) -> Any:
            who, quote_id = q
            try:
                with db.begin_nested():
                    order = confirm(who, quote_id, idem, provider=SANDBOX, session=db)
            except Error:
                return None
            confirmed.append(order.id)
            return order

        @rule(
            who=st.sampled_from(people),
            pkg=st.sampled_from(sorted(VERSIONS)),
            kind=st.sampled_from(list(OrderKind)),
        )
        def two_tabs(self, who: Principal, pkg: str, kind: OrderKind) -> None:
            """Two quotes for the same thing, both confirmed under different keys."""
            quotes = [self._quote(who, pkg, 0, kind) for _ in range(2)]
            for n, quote_id in enumerate(quotes):
                self.confirm((who, quote_id), f"tab-{n}-{len(confirmed)}")

        @rule(target=orders, who=st.sampled_from(people), n=st.integers(0, 9))
        def subscribe(self, who: Principal, n: int) -> Any:
            """Buy the current version, then add maintenance to it (it cannot be bought
            alone), so renewals get something to do."""
            current = latest_version("test-priced", session=db)
            if current is None:  # every published version retracted: nothing for sale
                return None
            bought = self._quote(
                who,
                "test-priced",
                VERSIONS["test-priced"].index(current.version),
                OrderKind.PURCHASE,
            )
            self.confirm((who, bought), f"buy-{n}-{len(confirmed)}")  # refused if owned
            quote_id = self._quote(who, "test-priced", 0, OrderKind.SUBSCRIPTION)
            return self.confirm((who, quote_id), f"sub-{n}-{len(confirmed)}")

        @rule(order=orders, amount=st.one_of(st.none(), st.integers(-1, 6000)))
        def refund(self, order: OrderInfo | None, amount: int | None) -> None:
            """All that is left (None), or part of it; more than is left is refused."""
            if order is None:
                return
            with contextlib.suppress(Error), db.begin_nested():  # already refunded, too much
                refund_order(order.id, "state machine", amount_cents=amount, session=db)

        @rule(order=orders, who=st.sampled_from(people))
        def cancel(self, order: OrderInfo | None, who: Principal) -> None:
            if order is None:
                return
            with contextlib.suppress(Error):  # not a subscription, or not this workspace's
                cancel_subscription(who, order.entitlement_id, session=db)

        @rule(pkg=st.sampled_from(sorted(VERSIONS)))
        def retract(self, pkg: str) -> None:
            with contextlib.suppress(Error):  # not published yet
                retract(pkg, VERSIONS[pkg][0], "state machine", session=db)

        def _something_to_renew(self) -> bool:
            """A running subscription comes due within the rules' furthest horizon."""
            return bool(due_subscriptions(session=db, now=utcnow() + PERIOD * 2))

        @precondition(_something_to_renew)
        @rule(years=st.integers(1, 2))
        def renew_due(self, years: int) -> None:
            """The operator's daily run, ``years`` periods from now (time is a parameter)."""
            for info in self._renew(years, SANDBOX):
                assert info.outcome is not RenewalOutcome.FAILED  # the sandbox accepts

        @precondition(_something_to_renew)
        @rule(years=st.integers(1, 2))
        def renew_due_with_a_declined_card(self, years: int) -> None:
            for info in self._renew(years, DECLINING):
                if info.outcome is RenewalOutcome.RENEWED:  # declined: only free renews
                    assert info.payment_ref is None and info.detail == "free maintenance"

        def _renew(self, years: int, provider: SandboxProvider) -> list[RenewalInfo]:
            at = utcnow() + PERIOD * years
            done = []
            for sub_id in due_subscriptions(session=db, now=at):
                with db.begin_nested():
                    info = renew_subscription(sub_id, provider=provider, session=db, now=at)
                assert info is not None
                renewed.append(info.outcome)
                done.append(info)
            return done

        @rule(who=st.sampled_from(people), pkg=st.sampled_from(sorted(VERSIONS)))
        def download(self, who: Principal, pkg: str) -> None:
            held = {v.version for v in downloadable(who, pkg, session=db)}
            for version in VERSIONS[pkg]:
                try:
                    got = download(who, pkg, version, kits_dir=kits_dir, session=db)
                    assert version in held and got.version == version
                except Error:
                    assert version not in held

        @invariant()
        def entries_balance_and_are_sealed(self) -> None:
            assert ledger.unbalanced_entries(session=db) == []
            assert db.scalar(select(func.count()).where(JournalEntry.sealed.is_(False))) == 0

        @invariant()
        def revenue_is_what_orders_cost_less_their_refunds(self) -> None:
            sold = db.scalar(select(func.coalesce(func.sum(Order.amount_cents), 0)))
            refunded = db.scalar(select(func.coalesce(func.sum(Refund.amount_cents), 0)))
            paid = int(sold or 0) - int(refunded or 0)  # a partial refund keeps the rest
            renewed = db.scalar(
                select(func.coalesce(func.sum(Renewal.amount_cents), 0)).where(
                    Renewal.payment_ref.is_not(None)
                )
            )
            revenue = sum(
                b.amount_cents for b in ledger.balances(session=db) if b.account == ledger.REVENUE
            )
            assert revenue == -int(paid or 0) - int(renewed or 0)

        @invariant()
        def an_ended_subscription_is_never_renewed_again(self) -> None:
            for sub in db.scalars(select(Subscription)):
                outcomes = db.scalars(
                    select(Renewal.outcome)
                    .where(Renewal.subscription_id == sub.id)
                    .order_by(Renewal.period_start)
                ).all()
                ended = [o for o in outcomes if o is not RenewalOutcome.RENEWED]
                assert len(ended) <= 1 and (not ended or outcomes[-1] is ended[0])
                assert (sub.ended_at is not None) == bool(ended)

        @invariant()
        def one_sale_per_priced_order(self) -> None:
            sales = Counter(
                db.scalars(
                    select(JournalEntry.order_id).where(JournalEntry.memo.like("sale %"))
                ).all()
            )
            assert all(n == 1 for n in sales.values())

        @invariant()
        def one_live_purchase_per_version_and_workspace(self) -> None:
            live = db.execute(
                select(Entitlement.workspace_id, Entitlement.version_id).where(
                    Entitlement.kind == OrderKind.PURCHASE, Entitlement.revoked_at.is_(None)
                )
            ).all()
            assert len(live) == len(set(live))

        @invariant()
        def one_active_subscription_per_package_and_workspace(self) -> None:
            now = utcnow()
            live = db.execute(
                select(Subscription.workspace_id, Subscription.package_id)
                .join(Entitlement, Entitlement.id == Subscription.entitlement_id)
                .where(
                    Entitlement.revoked_at.is_(None),
                    Subscription.period_end > now,
                    Subscription.ended_at.is_(None),
                )
            ).all()
            assert len(live) == len(set(live))

        @invariant()
        def every_licensed_entitlement_has_its_signature(self) -> None:
            rows = db.execute(
                select(Entitlement, LicenceSignature)
                .join(PackageVersion, PackageVersion.id == Entitlement.version_id)
                .outerjoin(LicenceSignature, LicenceSignature.id == Entitlement.signature_id)
                .where(PackageVersion.licence_required.is_(True))
            ).all()
            for ent, sig in rows:
                assert sig is not None and sig.workspace_id == ent.workspace_id

        @invariant()
        def audit_passes(self) -> None:
            assert audit(session=db).ok

    return Store


def test_random_sequences_keep_every_invariant(
    db: Session, packages: Packages, key: Path, kits_dir: Path
) -> None:
    people = [member(db, "alpha"), member(db, "bravo")]
    confirmed: list[int] = []
    renewed: list[RenewalOutcome] = []
    run_state_machine_as_test(
        machine(db, packages, key, kits_dir, people, confirmed, renewed),
        settings=settings(
            max_examples=10,
            stateful_step_count=20,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
            derandomize=True,
            phases=[Phase.explicit, Phase.generate],  # no shrinking: keep failures fast
        ),
    )
    assert confirmed, "no sequence confirmed a purchase: the machine explored nothing"
    explored = {RenewalOutcome.RENEWED, RenewalOutcome.FAILED}
    assert explored <= set(renewed), f"renewal went unexplored: only {set(renewed)}"
