"""What a workspace holds, what it may download, and the download itself: the one gate.

A purchase grants that exact version for ever, retracted or not. A maintenance
subscription grants the version that was latest when it started and every version
released while it is active; after it ends, those stay downloadable. A full refund
revokes. Every download is logged. A version the workspace does not hold answers "not
found", whether or not it exists.

The licence gate is here, once, for every way a workspace comes to hold a version:
  - an entitlement row (a purchase, a subscription's first version) is built only by
    :func:`entitlement_row`, which calls :func:`licence_gate`; the database refuses the
    row on insert and on update without a signature of its workspace and version;
  - a subscription's (or a renewed subscription's) newer versions are computed, not
    written: :func:`_granted` delivers a version that requires a licence only once the
    workspace has signed for it, and lists it until then as ``sign_to_receive``;
  - :func:`download`, which every front end calls, checks the signature again before it
    reads the kit, and the database refuses the download's log row without it.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import NamedTuple

from sqlalchemy import select
from sqlalchemy.orm import Session

from servekit.errors import LicenceRequiredError, StoreError, StoreNotFoundError
from servekit.kit.archive import kit_filename
from servekit.seams import read_bytes
from servekit.store.accounts import require_buyer
from servekit.store.db import Rows
from servekit.store.models import (
    Download,
    Entitlement,
    LicenceSignature,
    OrderKind,
    PackageVersion,
    Subscription,
    utcnow,
)
from servekit.store.publishing import kit_path
from servekit.store.results import EntitlementInfo, KitDownload, Principal

LATEST = "latest"


def licence_gate(
    package_id: str, version: str, licence_required: bool, signature_id: int | None
) -> int | None:
    """The signature an entitlement to this version carries: None for a version that needs
    no licence; :class:`LicenceRequiredError` when one is needed and ``signature_id`` (the
    workspace's signature for this exact version) is None."""
    if not licence_required:
        return None
    if signature_id is None:
        raise LicenceRequiredError(
            f"{package_id} {version} requires a signed licence before purchase or delivery",
            hint="read the terms and sign them first (POST .../licence-signatures)",
        )
    return signature_id


def entitlement_row(
    entitlement_id: int,
    workspace_id: int,
    version: tuple[int, str, str, bool],
    order_id: int,
    kind: OrderKind,
    signature_id: int | None,
    now: dt.datetime,
) -> Rows:
    """The one way an entitlement row is built (``version``: id, package id, version and
    whether it requires a licence), for :func:`servekit.store.db.insert_rows`."""
    version_id, package_id, number, licence_required = version
    return [
        {
            "id": entitlement_id,
            "workspace_id": workspace_id,
            "version_id": version_id,
            "order_id": order_id,
            "kind": kind,
            "signature_id": licence_gate(package_id, number, licence_required, signature_id),
            "created_at": now,
        }
    ]


def _signed(workspace_id: int, versions: list[PackageVersion], session: Session) -> set[int]:
    """Which of ``versions`` the workspace has signed a licence for."""
    wanted = [v.id for v in versions if v.licence_required]
    if not wanted:
        return set()
    return set(
        session.scalars(
            select(LicenceSignature.version_id).where(
                LicenceSignature.workspace_id == workspace_id,
                LicenceSignature.version_id.in_(wanted),
            )
        )
    )


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


class _Granted(NamedTuple):
    delivered: list[PackageVersion]
    sign_to_receive: list[PackageVersion]
    subscription: Subscription | None


def _granted(ent: Entitlement, session: Session, now: dt.datetime) -> _Granted:
    """What an entitlement delivers now, and what it would deliver once signed for."""
    ver = session.get_one(PackageVersion, ent.version_id)
    if ent.kind is OrderKind.PURCHASE:
        return _Granted([] if ent.revoked_at else [ver], [], None)
    sub = session.scalars(select(Subscription).where(Subscription.entitlement_id == ent.id)).one()
    if ent.revoked_at:
        return _Granted([], [], sub)
    versions = _subscription_versions(ent, sub, ver.package_id, session, now)
    signed = _signed(ent.workspace_id, versions, session)
    ok = [v for v in versions if not v.licence_required or v.id in signed]
    return _Granted(ok, [v for v in versions if v not in ok], sub)


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
        versions, pending, sub = _granted(ent, session, now)
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
                sign_to_receive=tuple(v.version for v in pending),
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
        found.update((v.id, v) for v in _granted(ent, session, now).delivered)
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
    logged: bool = True,
) -> KitDownload:
    """Log and return the kit bytes of a version the workspace holds; a version that
    requires a licence is sent only with the workspace's signature for it (checked here
    and, when the download is logged, by the database). ``logged=False`` is for a HEAD:
    the same checks and answer, no download recorded (no bytes leave)."""
    ver = resolve_download(principal, package_id, version, session=session, now=now)
    licence_gate(
        package_id,
        ver.version,
        ver.licence_required,
        ver.id if ver.id in _signed(principal.workspace_id, [ver], session) else None,
    )
    path = kit_path(kits_dir, ver.kit_sha256)
    data = read_bytes(
        path,
        lambda failure: StoreError(
            f"kit bytes of {package_id} {ver.version} are missing at {path}",
            hint="restore SERVEKIT_HOME/kits from the backup (docs/store.md)",
        ),
    )
    if logged:
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
