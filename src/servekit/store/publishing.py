"""Publishing and retracting versions, the catalog, and the content-addressed kit store.

Publishing, step by step:
  0. refuse a draft (``status: draft``): a draft is never recorded, so it can never be sold;
     refuse a price that is not a number from 0 to $100,000,000 (:func:`cents`);
  1. build the kit with :func:`servekit.kit.build.build_kit`, which loads the package and
     refuses one that fails its claim rules, then signs it;
  2. read the package licence text the package names, and hash it: from the built kit,
     as every field recorded below is read from the kit's ``package.yaml`` (the bytes its
     receipt signs), not from the directory, which may have changed since the build;
  3. write the kit bytes under ``HOME/kits/sha256/<hex>.tar.gz`` (content-addressed, so a
     second write of the same bytes is a no-op);
  4. record the version: price and maintenance in integer cents from ``pricing``, tier,
     whether a licence is required, the licence text and its sha256. Re-publishing the
     same version with the same content (MANIFEST digest) and key returns the existing row;
     other content is refused. The receipt's signing time differs on every build.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from servekit.errors import (
    NotForSaleError,
    PackageError,
    PackageFileError,
    StoreConflictError,
    StoreError,
    StoreNotFoundError,
)
from servekit.kit.build import BuiltKit, build_kit
from servekit.package import load_package
from servekit.package.files import PACKAGE_FILE, license_kit_path
from servekit.package.load import parse_package
from servekit.package.models import Package, PackageStatus, Tier
from servekit.store.models import PackageVersion, utcnow
from servekit.store.results import PublishResult, VersionInfo

MAX_USD = Decimal(100_000_000)
"""The highest price (and maintenance price) a version may carry: a larger one is a typo."""


def cents(usd: float, field: str = "price") -> int:
    """Integer cents from a dollar figure: the decimal as written (the shortest form that
    reads back as the same float, so 0.1 + 0.2 never leaks in), rounded half up to the
    cent (0.125 -> 13 cents, 1.005 -> 101). Outside 0 to :data:`MAX_USD`, or not a
    number, it is a :class:`PackageError` naming ``field``."""
    amount = Decimal(repr(float(usd)))
    if not amount.is_finite() or not 0 <= amount <= MAX_USD:
        raise PackageError(
            f"{field} is {usd!r} US dollars; expected a number from 0 to {MAX_USD:,}",
            hint=f"correct {field}: a price in dollars and cents, e.g. 49.99",
        )
    return int((amount * 100).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def check_prices(package_dir: Path, package: Package) -> None:
    """Step 0: every price of the package converts to cents (see :func:`cents`)."""
    where = f"{package_dir / PACKAGE_FILE}: pricing"
    cents(package.pricing.usd, f"{where}.usd")
    maintenance = package.pricing.maintenance
    if maintenance.usd_per_year is not None:
        cents(maintenance.usd_per_year, f"{where}.maintenance.usd_per_year")


def needs_licence(package: Package, threshold_usd: float) -> bool:
    return package.pricing.tier is Tier.ENTERPRISE or cents(package.pricing.usd) >= cents(
        threshold_usd
    )


def kit_path(kits_dir: Path, sha256: str) -> Path:
    return kits_dir / "sha256" / f"{sha256}.tar.gz"


def _store_kit(kits_dir: Path, data: bytes) -> str:
    digest = hashlib.sha256(data).hexdigest()
    path = kit_path(kits_dir, digest)
    if path.exists():
        return digest
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    try:
        tmp.write_bytes(data)
        tmp.replace(path)
    except OSError as exc:
        raise StoreError(
            f"cannot write {path}: {exc.strerror}", hint="check SERVEKIT_HOME"
        ) from exc
    return digest


def version_info(row: PackageVersion) -> VersionInfo:
    return VersionInfo(
        package_id=row.package_id,
        version=row.version,
        name=row.name,
        summary=row.summary,
        tier=row.tier,
        currency=row.currency,
        price_cents=row.price_cents,
        maintenance_cents=row.maintenance_cents,
        licence_required=row.licence_required,
        licence_name=row.licence_name,
        licence_sha256=row.licence_sha256,
        kit_sha256=row.kit_sha256,
        kit_bytes=row.kit_bytes,
        placeholder_commit=row.placeholder_commit,
        published_at=row.published_at,
        retracted=row.retracted_at is not None,
        retract_reason=row.retract_reason,
    )


def _kit_text(kit: BuiltKit, path: str, what: str) -> str:
    """A text file of the kit, from the bytes the receipt signs."""
    data = next((f.data for f in kit.files if f.path == path), None)
    where = Path(f"{kit.package_id}-{kit.version} kit") / path
    if data is None:
        raise PackageFileError(
            f"the kit has no {what}", path=where, hint="publish the kit exactly as built"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PackageFileError(
            f"the {what} is not UTF-8 text (byte {exc.start}: {exc.reason})",
            path=where,
            hint=f"save {path} of the package as UTF-8 and build the kit again",
        ) from exc


def _row(
    package: Package, licence: str, kit_sha: str, kit: bytes, threshold: float
) -> PackageVersion:
    maintenance = package.pricing.maintenance
    return PackageVersion(
        package_id=package.id,
        version=package.version,
        name=package.name,
        summary=package.summary,
        tier=package.pricing.tier.value,
        currency="usd",
        price_cents=cents(package.pricing.usd),
        maintenance_cents=(
            cents(maintenance.usd_per_year)
            if maintenance.available and maintenance.usd_per_year is not None
            else None
        ),
        licence_required=needs_licence(package, threshold),
        licence_name=f"{package.license.name} {package.license.version}",
        licence_text=licence,
        licence_sha256=hashlib.sha256(licence.encode()).hexdigest(),
        kit_sha256=kit_sha,
        kit_bytes=len(kit),
        placeholder_commit=package.model.placeholder_commit,
        kit_digest="",
        key_id="",
    )


def refuse_draft(package_dir: Path, package: Package) -> None:
    """A draft is never published: only a version the publisher released can be bought."""
    if package.status is PackageStatus.DRAFT:
        raise NotForSaleError(
            f"{package_dir / PACKAGE_FILE}: {package.id} {package.version} has status "
            "draft (expected published); a draft is never published to the store, so it "
            "cannot be bought",
            hint="when it is ready for sale, set `status: published` and `published: DATE` "
            "in package.yaml and publish again; `servekit catalog export` and `servekit "
            "serve` show a draft for review, marked as not for sale",
        )


def publish(
    package_dir: Path, key: Path, *, kits_dir: Path, threshold_usd: float, session: Session
) -> PublishResult:
    """Check, build, sign, store and record a package version (steps in the module doc)."""
    package = load_package(package_dir).package
    refuse_draft(package_dir, package)  # 0, before the build's seconds
    check_prices(package_dir, package)
    kit = build_kit(package_dir, key)  # 1
    return publish_built(kit, kits_dir=kits_dir, threshold_usd=threshold_usd, session=session)


def publish_built(
    kit: BuiltKit, *, kits_dir: Path, threshold_usd: float, session: Session
) -> PublishResult:
    """Steps 0 and 2 to 4 for a kit :func:`servekit.kit.build.build_kit` built (by
    :func:`publish`; or once for several stores, as the test suite's shops do).

    What the version records (price, tier, licence text) is read from the kit's own
    ``package.yaml`` and licence file, the bytes its receipt signs, never again from the
    package directory, which may have changed since the build."""
    where = Path(f"{kit.package_id}-{kit.version} kit")
    package = parse_package(where / PACKAGE_FILE, _kit_text(kit, PACKAGE_FILE, PACKAGE_FILE))
    if (package.id, package.version) != (kit.package_id, kit.version):
        raise StoreConflictError(
            f"the kit's {PACKAGE_FILE} is of {package.id} {package.version}, its receipt "
            f"of {kit.package_id} {kit.version}",
            hint="publish the kit exactly as build_kit returned it",
        )
    refuse_draft(where, package)
    check_prices(where, package)
    licence = _kit_text(kit, license_kit_path(package.license.file), "package licence")  # 2
    existing = session.scalar(
        select(PackageVersion).where(
            PackageVersion.package_id == package.id, PackageVersion.version == package.version
        )
    )
    if existing is not None:
        # The receipt records its signing time, so a rebuild never has the archive's old
        # bytes; the MANIFEST digest covers every other file, and the key must be the same.
        same = (existing.kit_digest, existing.key_id) == (f"sha256:{kit.kit_digest}", kit.key_id)
        if not same:
            raise StoreConflictError(
                f"{package.id} {package.version} is published with other content "
                f"(kit digest {existing.kit_digest[7:19]} by key {existing.key_id[:12]}, "
                f"now {kit.kit_digest[:12]} by key {kit.key_id[:12]})",
                hint="a changed package is a new version: raise `version` in package.yaml",
            )
        return PublishResult(version=version_info(existing), created=False)
    kit_sha = _store_kit(kits_dir, kit.archive)  # 3
    row = _row(package, licence, kit_sha, kit.archive, threshold_usd)  # 4
    row.kit_digest = f"sha256:{kit.kit_digest}"
    row.key_id = kit.key_id
    session.add(row)
    session.flush()
    return PublishResult(version=version_info(row), created=True)


def get_version(package_id: str, version: str, *, session: Session) -> PackageVersion:
    row = session.scalar(
        select(PackageVersion).where(
            PackageVersion.package_id == package_id, PackageVersion.version == version
        )
    )
    if row is None:
        raise StoreNotFoundError(
            f"no published version {package_id} {version}", hint="see the catalog for versions"
        )
    return row


def retract(package_id: str, version: str, reason: str, *, session: Session) -> VersionInfo:
    """Hide a version from sale; entitlements keep it (and say it is retracted)."""
    row = get_version(package_id, version, session=session)
    if row.retracted_at is None:
        row.retracted_at = utcnow()
        row.retract_reason = reason
    return version_info(row)


def catalog(*, session: Session, include_retracted: bool = False) -> list[VersionInfo]:
    """Every version on sale (newest first within a package)."""
    query = select(PackageVersion).order_by(PackageVersion.package_id, PackageVersion.id.desc())
    if not include_retracted:
        query = query.where(PackageVersion.retracted_at.is_(None))
    return [version_info(r) for r in session.scalars(query)]


def latest_version(package_id: str, *, session: Session) -> PackageVersion | None:
    """The latest verified version on sale (every published version passed its rules)."""
    return session.scalar(
        select(PackageVersion)
        .where(PackageVersion.package_id == package_id, PackageVersion.retracted_at.is_(None))
        .order_by(PackageVersion.id.desc())
        .limit(1)
    )


_RETRACTED = (
    select(func.count())
    .select_from(PackageVersion)
    .where(PackageVersion.retracted_at.is_not(None))
    .scalar_subquery()
)
# Built once: every page runs it, and building a select costs more than SQLite running it.
_STATE = select(
    func.count(), func.coalesce(func.max(PackageVersion.id), 0), _RETRACTED
).select_from(PackageVersion)


def publication_state(*, session: Session) -> tuple[int, int, int]:
    """(versions, newest id, retracted): changes whenever a version is published or
    retracted, so a reader re-reads the catalog only then.

    Every page asks, so each count reads an index, never the rows: the retracted ones
    through the index on ``retracted_at`` (0.4 ms at 1 000 versions on SQLite, against
    5 ms for a count over the rows; docs/performance.md).
    """
    row = session.execute(_STATE).one()
    return int(row[0]), int(row[1]), int(row[2])


def retractions(*, session: Session) -> list[tuple[str, str, str, dt.datetime]]:
    """(package id, version, reason, when) of every retracted version, oldest first."""
    rows = session.execute(
        select(
            PackageVersion.package_id,
            PackageVersion.version,
            PackageVersion.retract_reason,
            PackageVersion.retracted_at,
        )
        .where(PackageVersion.retracted_at.is_not(None))
        .order_by(PackageVersion.retracted_at, PackageVersion.id)
    )
    return [(pid, ver, reason or "retracted", when) for pid, ver, reason, when in rows]
