"""Publishing: checked, signed, stored by content, recorded from package.yaml; retraction."""

from __future__ import annotations

import dataclasses
import hashlib
import re
import shutil
import time
from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from servekit.errors import (
    ClaimRuleError,
    NotForSaleError,
    PackageError,
    StoreConflictError,
    StoreNotFoundError,
)
from servekit.kit.build import build_kit
from servekit.store.checkout import create_quote
from servekit.store.models import OrderKind
from servekit.store.publishing import (
    catalog,
    cents,
    kit_path,
    publish,
    publish_built,
    retract,
)
from servekit.store.results import PublishResult
from tests.store.conftest import ASSETS, THRESHOLD, Packages, make_variant, member


def _publish(path: Path, key: Path, kits_dir: Path, db: Session) -> PublishResult:
    return publish(path, key, kits_dir=kits_dir, threshold_usd=THRESHOLD, session=db)


def test_a_version_is_recorded_from_its_package(
    db: Session, packages: Packages, key: Path, kits_dir: Path
) -> None:
    result = _publish(packages.priced, key, kits_dir, db)
    v = result.version
    assert result.created and (v.package_id, v.version, v.tier) == (
        "test-priced",
        "1.0.0",
        "standard",
    )
    assert (v.price_cents, v.maintenance_cents, v.licence_required) == (4999, 1900, False)
    licence = (packages.priced / "licenses" / "PACKAGE_LICENSE.md").read_bytes()
    assert v.licence_sha256 == hashlib.sha256(licence).hexdigest()
    stored = kit_path(kits_dir, v.kit_sha256).read_bytes()
    assert hashlib.sha256(stored).hexdigest() == v.kit_sha256 and len(stored) == v.kit_bytes


def test_what_is_recorded_is_read_from_the_kit_not_from_the_directory_after_the_build(
    db: Session, key: Path, kits_dir: Path, tmp_path: Path
) -> None:
    package = make_variant(tmp_path / "p", pkg_id="test-later", version="1.0.0", usd=49.99)
    kit = build_kit(package, key)
    licence = (package / "licenses" / "PACKAGE_LICENSE.md").read_bytes()
    (package / "licenses" / "PACKAGE_LICENSE.md").write_text("Changed after the build.\n")
    yaml = package / "package.yaml"
    yaml.write_text(yaml.read_text().replace("usd: 49.99", "usd: 1.0"))
    v = publish_built(kit, kits_dir=kits_dir, threshold_usd=THRESHOLD, session=db).version
    assert (v.price_cents, v.licence_sha256) == (4999, hashlib.sha256(licence).hexdigest())
    assert v.kit_sha256 == hashlib.sha256(kit.archive).hexdigest()


def test_a_kit_without_its_definition_of_another_package_or_with_a_binary_licence_is_refused(
    db: Session, packages: Packages, key: Path, kits_dir: Path
) -> None:
    kit = build_kit(packages.priced, key)
    without = dataclasses.replace(
        kit, files=tuple(f for f in kit.files if f.path != "package.yaml")
    )
    with pytest.raises(PackageError, match=r"the kit has no package\.yaml"):
        publish_built(without, kits_dir=kits_dir, threshold_usd=THRESHOLD, session=db)
    other = build_kit(packages.free, key)
    with pytest.raises(
        StoreConflictError, match=r"is of test-free 1\.0\.0, its receipt of test-priced"
    ):
        publish_built(
            dataclasses.replace(other, package_id=kit.package_id),
            kits_dir=kits_dir,
            threshold_usd=THRESHOLD,
            session=db,
        )
    binary = tuple(
        dataclasses.replace(f, data=b"\xff\xfe") if f.path.endswith("PACKAGE_LICENSE.md") else f
        for f in kit.files
    )
    with pytest.raises(PackageError, match=r"the package licence is not UTF-8 text \(byte 0"):
        publish_built(
            dataclasses.replace(kit, files=binary),
            kits_dir=kits_dir,
            threshold_usd=THRESHOLD,
            session=db,
        )


def test_the_enterprise_tier_and_the_threshold_require_a_licence(
    db: Session, packages: Packages, key: Path, kits_dir: Path
) -> None:
    assert _publish(packages.enterprise, key, kits_dir, db).version.licence_required
    assert _publish(packages.costly, key, kits_dir, db).version.licence_required


def test_republishing_the_same_bytes_changes_nothing(
    db: Session, packages: Packages, key: Path, kits_dir: Path
) -> None:
    first = _publish(packages.priced, key, kits_dir, db)
    again = _publish(packages.priced, key, kits_dir, db)
    assert not again.created and again.version == first.version


def test_republishing_later_stores_no_second_kit(
    db: Session, packages: Packages, key: Path, kits_dir: Path
) -> None:
    """Each build signs at a new time (other receipt bytes); the content decides."""
    _publish(packages.priced, key, kits_dir, db)
    stored = sorted(kits_dir.rglob("*.tar.gz"))
    time.sleep(1.1)  # the receipt's signing time has one-second resolution
    assert not _publish(packages.priced, key, kits_dir, db).created
    assert sorted(kits_dir.rglob("*.tar.gz")) == stored


def test_the_same_version_signed_by_another_key_is_refused(
    db: Session, packages: Packages, key: Path, kits_dir: Path, tmp_path: Path
) -> None:
    _publish(packages.priced, key, kits_dir, db)
    other = tmp_path / "other.key"
    shutil.copyfile(ASSETS / "keys" / "untrusted.key", other)
    other.chmod(0o600)
    with pytest.raises(StoreConflictError, match="by key"):
        _publish(packages.priced, other, kits_dir, db)


def test_the_same_version_with_other_bytes_is_refused(
    db: Session, packages: Packages, key: Path, kits_dir: Path, tmp_path: Path
) -> None:
    _publish(packages.priced, key, kits_dir, db)
    changed = shutil.copytree(packages.priced, tmp_path / "changed")
    yaml = changed / "package.yaml"
    yaml.write_text(yaml.read_text().replace("summary: ", "summary: Changed. ", 1))
    with pytest.raises(StoreConflictError, match="new version"):
        _publish(changed, key, kits_dir, db)


def test_a_package_that_fails_its_claim_rules_is_refused(
    db: Session, packages: Packages, key: Path, kits_dir: Path, tmp_path: Path
) -> None:
    bad = shutil.copytree(packages.priced, tmp_path / "bad")
    yaml = bad / "package.yaml"
    text = yaml.read_text()
    text = re.sub(
        r"(\n\s+value: )(\d+(?:\.\d+)?)",
        lambda m: f"{m.group(1)}{float(m.group(2)) * 3 + 1}",
        text,
        count=1,
    )
    yaml.write_text(text)
    with pytest.raises(ClaimRuleError):
        _publish(bad, key, kits_dir, db)
    assert catalog(session=db) == []


def test_retracted_versions_leave_the_catalog(
    db: Session, packages: Packages, key: Path, kits_dir: Path
) -> None:
    _publish(packages.priced, key, kits_dir, db)
    _publish(packages.priced_v2, key, kits_dir, db)
    retract("test-priced", "1.0.0", "figures re-run", session=db)
    assert [v.version for v in catalog(session=db)] == ["1.1.0"]
    assert [v.retracted for v in catalog(session=db, include_retracted=True)] == [False, True]


@pytest.mark.parametrize(
    ("usd", "expected"),
    [
        (0, 0),
        (49.99, 4999),
        (0.1 + 0.2, 30),
        (25000, 2_500_000),
        (0.125, 13),  # half a cent rounds up, as docs/store.md says (not to even: 12)
        (0.005, 1),
        (1.005, 101),  # the decimal as written, not the float below it (100.49999...)
        (49.995, 5000),
        (100_000_000, 10_000_000_000),
    ],
)
def test_dollars_become_integer_cents(usd: float, expected: int) -> None:
    assert cents(usd) == expected


@pytest.mark.parametrize("usd", [1e30, -0.01, float("inf"), float("nan"), 100_000_000.01])
def test_a_price_out_of_range_is_a_package_error_naming_the_field(usd: float) -> None:
    with pytest.raises(PackageError, match=r"pricing\.usd is .* US dollars; expected a number"):
        cents(usd, "pricing.usd")


def test_a_package_priced_1e30_is_refused_before_its_kit_is_built(
    db: Session, tmp_path: Path, key: Path, kits_dir: Path
) -> None:
    costly = make_variant(tmp_path / "costly", pkg_id="test-1e30", version="1.0.0", usd=1e30)
    with pytest.raises(PackageError) as info:
        _publish(costly, key, kits_dir, db)
    assert f"{costly / 'package.yaml'}: pricing.usd is 1e+30 US dollars" in info.value.message
    assert not kits_dir.exists() and catalog(session=db) == []


def test_a_draft_is_never_published_so_it_can_never_be_bought(
    db: Session, tmp_path: Path, key: Path, kits_dir: Path
) -> None:
    draft = make_variant(tmp_path / "draft", pkg_id="test-draft", version="1.0.0", usd=10)
    manifest = draft / "package.yaml"
    manifest.write_text(re.sub(r"^status: .*$", "status: draft", manifest.read_text(), flags=re.M))
    with pytest.raises(NotForSaleError) as info:
        _publish(draft, key, kits_dir, db)
    assert info.value.exit_code == 38
    assert str(manifest) in info.value.message and "status draft" in info.value.message
    assert info.value.hint and "status: published" in info.value.hint
    assert [v.package_id for v in catalog(session=db, include_retracted=True)] == []
    assert not kits_dir.exists()  # no kit was built or stored
    buyer = member(db, "drafty")
    with pytest.raises(StoreNotFoundError):
        create_quote(buyer, "test-draft", "1.0.0", OrderKind.PURCHASE, session=db)
