"""Subscription renewal at period end, run by the operator (``servekit store renew-due``).

A maintenance subscription is paid a period (a year) at a time. When its period ends:
  - cancelled by the workspace: it ends there (``cancelled``);
  - the workspace already holds another running subscription to the package (bought while
    this one had lapsed): it ends (``superseded``), so nobody pays twice;
  - otherwise the provider is charged off-session for the price agreed at checkout, with
    an idempotency key of the subscription and the period, so a re-run never charges
    twice: paid, the period is extended and the sale posted (``renewed``); refused, the
    subscription ends (``failed``).
Each period end is recorded once (unique per subscription and period start). An ended
subscription keeps every version released while it ran (``entitlements``). Renewals are
due from the period end on, and run one transaction per subscription.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from sqlalchemy import ColumnElement, select
from sqlalchemy.orm import Session

from servekit.errors import PaymentError
from servekit.store import ledger
from servekit.store.checkout import PERIOD, active_subscription
from servekit.store.models import (
    Entitlement,
    Order,
    PackageVersion,
    Renewal,
    RenewalOutcome,
    Subscription,
)
from servekit.store.results import RenewalInfo

if TYPE_CHECKING:
    from servekit.store.providers import PaymentProvider


def _due(now: dt.datetime) -> list[ColumnElement[bool]]:
    return [
        Subscription.ended_at.is_(None),
        Subscription.period_end <= now,
        Entitlement.revoked_at.is_(None),  # refunded: nothing to renew
    ]


def due_subscriptions(*, session: Session, now: dt.datetime) -> list[int]:
    """Ids of running subscriptions whose period has ended, oldest period end first."""
    return list(
        session.scalars(
            select(Subscription.id)
            .join(Entitlement, Entitlement.id == Subscription.entitlement_id)
            .where(*_due(now))
            .order_by(Subscription.period_end, Subscription.id)
        )
    )


def renew_subscription(
    subscription_id: int, *, provider: PaymentProvider, session: Session, now: dt.datetime
) -> RenewalInfo | None:
    """Handle one period end (module doc); None when it is not due (any more)."""
    row = session.execute(
        select(Subscription, Order)
        .join(Entitlement, Entitlement.id == Subscription.entitlement_id)
        .join(Order, Order.id == Entitlement.order_id)
        .where(Subscription.id == subscription_id, *_due(now))
        .with_for_update(of=Subscription)  # a concurrent run waits, then finds it not due
    ).first()
    if row is None:
        return None
    sub, order = row
    start = sub.period_end
    ref: str | None = None
    detail = ""
    if sub.cancel_at_period_end:
        outcome, detail = RenewalOutcome.CANCELLED, "cancelled by the workspace"
    elif (
        other := active_subscription(sub.workspace_id, sub.package_id, session=session, now=now)
    ) is not None:
        outcome, detail = RenewalOutcome.SUPERSEDED, f"subscription {other.id} runs instead"
    elif order.amount_cents == 0:
        outcome, detail = RenewalOutcome.RENEWED, "free maintenance"
    else:
        try:
            ref = provider.renew(
                order.amount_cents,
                order.currency,
                idempotency_key=f"servekit:renew:{sub.id}:{start.isoformat()}",
                memo=f"{sub.package_id} maintenance from {start:%Y-%m-%d}",
            )
        except PaymentError as exc:
            outcome, detail = RenewalOutcome.FAILED, exc.message
        else:
            outcome, detail = RenewalOutcome.RENEWED, f"charged through {provider.name}"
    entry_id = None
    if outcome is RenewalOutcome.RENEWED:
        sub.period_end = start + PERIOD
        if ref is not None:
            entry_id = ledger.renewal(
                sub.id, order.id, order.amount_cents, order.currency, provider.name, session=session
            )
    else:
        sub.ended_at, sub.end_reason = start, f"{outcome.value}: {detail}"
    renewal = Renewal(
        subscription_id=sub.id,
        period_start=start,
        outcome=outcome,
        period_end=sub.period_end if outcome is RenewalOutcome.RENEWED else None,
        currency=order.currency,
        amount_cents=order.amount_cents if ref is not None else 0,
        provider=provider.name if ref is not None else None,
        payment_ref=ref,
        entry_id=entry_id,
        detail=detail,
        created_at=now,
    )
    session.add(renewal)
    session.flush()
    version = session.get_one(PackageVersion, order.version_id)
    return RenewalInfo(
        subscription_id=sub.id,
        workspace_id=sub.workspace_id,
        package_id=version.package_id,
        outcome=outcome,
        period_start=start,
        period_end=renewal.period_end,
        currency=order.currency,
        amount_cents=renewal.amount_cents,
        payment_ref=ref,
        detail=detail,
    )
