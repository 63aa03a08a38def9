"""What a workspace holds, what it may download, and the download itself.

A purchase grants that exact version for ever, retracted or not. A maintenance
subscription grants the version that was latest when it started and every version
released while it is active; after it ends, those stay downloadable. A refund revokes.
Every download is logged. A version the workspace does not hold answers "not found",
whether or not it exists.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from servekit.errors import StoreError, StoreNotFoundError
from servekit.kit.archive import kit_filename
from servekit.store.accounts import require_buyer
from servekit.store.models import (
    Download,
    Entitlement,
    OrderKind,
    PackageVersion,
    Subscription,
    utcnow,
)
from servekit.store.publishing import kit_path
from servekit.store.results import EntitlementInfo, KitDownload, Principal

LATEST = "latest"


def _subscription_versions(
    ent: Entitlement, sub: Subscription, package_id: str, session: Session, now: dt.datetime
) -> list[PackageVersion]:
    rows = session.scalars(
        select(PackageVersion)
        .where(
            PackageVersion.package_id == package_id,
            PackageVersion.id >= ent.version_id,
            PackageVersion.published_at < min(sub.period_end, now + dt.timedelta(seconds=1)),
        )
        .order_by(PackageVersion.id)
    )
    return [v for v in rows if v.id == ent.version_id or v.retracted_at is None]


def _granted(
    ent: Entitlement, session: Session, now: dt.datetime
) -> tuple[list[PackageVersion], Subscription | None]:
    ver = session.get_one(PackageVersion, ent.version_id)
    if ent.kind is OrderKind.PURCHASE:
        return ([] if ent.revoked_at else [ver]), None
    sub = session.scalars(select(Subscription).where(Subscription.entitlement_id == ent.id)).one()
    if ent.revoked_at:
        return [], sub
    return _subscription_versions(ent, sub, ver.package_id, session, now), sub


def list_entitlements(
    principal: Principal, *, session: Session, now: dt.datetime | None = None
) -> list[EntitlementInfo]:
    """Every entitlement of the principal's workspace, with what each lets it download."""
    now = now or utcnow()
    out = []
    ents = session.scalars(
        select(Entitlement)
        .where(Entitlement.workspace_id == principal.workspace_id)
        .order_by(Entitlement.id)
    )
    for ent in ents:
        versions, sub = _granted(ent, session, now)
        ver = session.get_one(PackageVersion, ent.version_id)
        out.append(
            EntitlementInfo(
                id=ent.id,
                package_id=ver.package_id,
                version=ver.version,
                kind=ent.kind,
                order_id=ent.order_id,
                active=ent.revoked_at is None
                and (sub is None or (sub.period_end > now and sub.ended_at is None)),
                revoked=ent.revoked_at is not None,
                retracted=ver.retracted_at is not None,
                period_end=sub.period_end if sub else None,
                cancel_at_period_end=sub.cancel_at_period_end if sub else False,
                downloadable=tuple(v.version for v in versions),
            )
        )
    return out


def downloadable(
    principal: Principal, package_id: str, *, session: Session, now: dt.datetime | None = None
) -> list[PackageVersion]:
    """Versions of ``package_id`` the workspace may download, oldest first."""
    now = now or utcnow()
    found: dict[int, PackageVersion] = {}
    ents = session.scalars(
        select(Entitlement)
        .join(PackageVersion, PackageVersion.id == Entitlement.version_id)
        .where(
            Entitlement.workspace_id == principal.workspace_id,
            PackageVersion.package_id == package_id,
            Entitlement.revoked_at.is_(None),
        )
    )
    for ent in ents:
        found.update((v.id, v) for v in _granted(ent, session, now)[0])
    return [found[k] for k in sorted(found)]


def resolve_download(
    principal: Principal,
    package_id: str,
    version: str,
    *,
    session: Session,
    now: dt.datetime | None = None,
) -> PackageVersion:
    """The version to send: the exact one, or the newest held for ``latest``."""
    held = downloadable(principal, package_id, session=session, now=now)
    pick = held[-1:] if version == LATEST else [v for v in held if v.version == version]
    if not pick:
        raise StoreNotFoundError(
            f"no {package_id} {version} in workspace {principal.workspace}",
            hint="buy it first, or check the version",
        )
    return pick[0]


def download(
    principal: Principal,
    package_id: str,
    version: str,
    *,
    kits_dir: Path,
    session: Session,
    now: dt.datetime | None = None,
) -> KitDownload:
    """Log and return the kit bytes of a version the workspace holds."""
    ver = resolve_download(principal, package_id, version, session=session, now=now)
    path = kit_path(kits_dir, ver.kit_sha256)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise StoreError(
            f"kit bytes of {package_id} {ver.version} are missing at {path}",
            hint="restore SERVEKIT_HOME/kits from the backup (docs/store.md)",
        ) from exc
    session.add(
        Download(
            workspace_id=principal.workspace_id,
            version_id=ver.id,
            user_id=principal.user_id,
            token_id=principal.token_id,
        )
    )
    session.flush()
    return KitDownload(
        package_id=package_id,
        version=ver.version,
        kit_sha256=ver.kit_sha256,
        filename=kit_filename(package_id, ver.version),
        data=data,
    )


def cancel_subscription(
    principal: Principal, entitlement_id: int, *, session: Session
) -> EntitlementInfo:
    """Cancel at period end: versions released until then stay the workspace's."""
    require_buyer(principal)
    ent = session.get(Entitlement, entitlement_id)
    if (
        ent is None
        or ent.workspace_id != principal.workspace_id
        or ent.kind is not OrderKind.SUBSCRIPTION
    ):
        raise StoreNotFoundError(f"no subscription {entitlement_id}")
    sub = session.scalars(select(Subscription).where(Subscription.entitlement_id == ent.id)).one()
    sub.cancel_at_period_end = True
    session.flush()
    return next(e for e in list_entitlements(principal, session=session) if e.id == ent.id)
