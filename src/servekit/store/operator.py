"""Operator actions, one transaction each: what ``servekit store ...`` calls.

Each opens (and migrates) the store the settings name, runs one service in one
transaction, and returns a frozen result for the CLI to render.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from servekit.config import Settings
from servekit.errors import AuditError
from servekit.store import accounts, checkout, licences, publishing, renewals
from servekit.store.audit import audit
from servekit.store.db import Store, migrate, open_store
from servekit.store.models import Role, utcnow
from servekit.store.outbox import drain_outbox
from servekit.store.providers import provider_from_settings
from servekit.store.results import (
    AuditReport,
    NewToken,
    OrderInfo,
    PublishResult,
    RenewalInfo,
    VersionInfo,
)


def _open(settings: Settings) -> Store:
    return open_store(settings)


def migrate_store(settings: Settings) -> str:
    """Apply every migration; returns the revision in force."""
    store = open_store(settings, run_migrations=False)
    return migrate(store.engine)


def publish_package(settings: Settings, package_dir: Path, key: Path) -> PublishResult:
    store = _open(settings)
    with store.transaction() as s:
        return publishing.publish(
            package_dir,
            key,
            kits_dir=store.kits_dir,
            threshold_usd=settings.enterprise_threshold_usd,
            session=s,
        )


def retract_version(settings: Settings, package_id: str, version: str, reason: str) -> VersionInfo:
    with _open(settings).transaction() as s:
        return publishing.retract(package_id, version, reason, session=s)


def list_versions(settings: Settings) -> list[VersionInfo]:
    with _open(settings).transaction() as s:
        return publishing.catalog(session=s, include_retracted=True)


def audit_store(settings: Settings) -> AuditReport:
    """Recompute the chain and the ledger; raises :class:`AuditError` on the first break."""
    with _open(settings).transaction() as s:
        report = audit(session=s)
    if report.first_break:
        raise AuditError(
            f"audit failed: {report.first_break}",
            hint="restore from the last good backup and compare (docs/store.md, Backups)",
        )
    return report


def refund(
    settings: Settings, order_id: int, reason: str, *, amount_cents: int | None = None
) -> OrderInfo:
    """Refund all that is left of an order, or ``amount_cents`` of it."""
    with _open(settings).transaction() as s:
        return checkout.refund_order(order_id, reason, amount_cents=amount_cents, session=s)


def add_user(settings: Settings, email: str, password: str) -> int:
    with _open(settings).transaction() as s:
        return accounts.create_user(email, password, session=s)


def add_workspace(settings: Settings, slug: str, name: str, owner_email: str) -> int:
    with _open(settings).transaction() as s:
        owner = accounts.user_id_by_email(owner_email, session=s)
        return accounts.create_workspace(slug, name, owner_id=owner, session=s)


def add_member(settings: Settings, slug: str, email: str, role: Role) -> None:
    with _open(settings).transaction() as s:
        ws = accounts.workspace_id_by_slug(slug, session=s)
        accounts.add_member(ws, accounts.user_id_by_email(email, session=s), role, session=s)


def add_token(settings: Settings, slug: str, email: str, name: str) -> NewToken:
    with _open(settings).transaction() as s:
        user = accounts.user_id_by_email(email, session=s)
        principal = accounts.principal_for_user(user, slug, session=s)
        return accounts.create_token(principal, name, session=s)


def erase_signer(settings: Settings, signature_id: int) -> None:
    with _open(settings).transaction() as s:
        licences.erase_personal_data(signature_id, session=s)


def send_outbox(settings: Settings) -> int:
    provider = provider_from_settings(settings)
    with _open(settings).transaction() as s:
        return drain_outbox(provider, session=s)


def renew_due(settings: Settings, *, now: dt.datetime | None = None) -> list[RenewalInfo]:
    """Handle every subscription whose period has ended, one transaction each, so one
    provider failure or crash leaves the others done (a re-run picks up the rest)."""
    provider = provider_from_settings(settings)
    store = _open(settings)
    at = now or utcnow()
    with store.transaction() as s:
        due = renewals.due_subscriptions(session=s, now=at)
    done = []
    for sub_id in due:
        with store.transaction() as s:
            info = renewals.renew_subscription(sub_id, provider=provider, session=s, now=at)
        if info is not None:
            done.append(info)
    return done
