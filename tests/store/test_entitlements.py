"""The licence gate at every path to a version: subscription delivery, download, and the
database's refusal of raw entitlement and download rows, on both databases."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from servekit.errors import LicenceRequiredError, StoreNotFoundError
from servekit.store.checkout import refund_order
from servekit.store.entitlements import LATEST, download, list_entitlements
from servekit.store.models import OrderKind
from servekit.store.publishing import get_version
from servekit.store.results import Principal
from tests.store.conftest import Packages, make_variant, member, publish_one
from tests.store.test_checkout import _buy, _sign
from tests.store.test_invariants import _raw_order

PKG = "test-gated"


@pytest.fixture(scope="session")
def gated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """One package: 1.0.0 standard, then 2.0.0 of tier enterprise (needs a licence)."""
    root = tmp_path_factory.mktemp("gated")
    return (
        make_variant(root / "v1", pkg_id=PKG, version="1.0.0", usd=100, maint=20),
        make_variant(
            root / "v2", pkg_id=PKG, version="2.0.0", usd=100, maint=20, tier="enterprise"
        ),
    )


@pytest.fixture
def subscribed(
    db: Session, gated: tuple[Path, Path], key: Path, kits_dir: Path
) -> tuple[Session, Principal]:
    """A workspace that bought the standard 1.0.0 and added maintenance to it (it cannot
    be bought alone); then the enterprise 2.0.0 is published."""
    publish_one(gated[0], key, kits_dir, db)
    who = member(db, "acme")
    _buy(db, who, PKG, None, "buy")
    _buy(db, who, PKG, None, "sub", OrderKind.SUBSCRIPTION)
    publish_one(gated[1], key, kits_dir, db)
    return db, who


def test_a_subscription_offers_a_licensed_version_as_sign_to_receive(
    subscribed: tuple[Session, Principal], kits_dir: Path
) -> None:
    db, who = subscribed
    bought, held = list_entitlements(who, session=db)
    assert (bought.kind, held.kind) == (OrderKind.PURCHASE, OrderKind.SUBSCRIPTION)
    assert bought.downloadable == ("1.0.0",) and bought.sign_to_receive == ()
    assert held.downloadable == ("1.0.0",) and held.sign_to_receive == ("2.0.0",)
    with pytest.raises(StoreNotFoundError):
        download(who, PKG, "2.0.0", kits_dir=kits_dir, session=db)
    assert download(who, PKG, LATEST, kits_dir=kits_dir, session=db).version == "1.0.0"
    _sign(db, who, PKG, "2.0.0")
    _, held = list_entitlements(who, session=db)
    assert held.downloadable == ("1.0.0", "2.0.0") and held.sign_to_receive == ()
    assert download(who, PKG, LATEST, kits_dir=kits_dir, session=db).version == "2.0.0"


def test_another_workspaces_signature_delivers_nothing(
    subscribed: tuple[Session, Principal],
) -> None:
    db, who = subscribed
    _sign(db, member(db, "other"), PKG, "2.0.0")
    assert list_entitlements(who, session=db)[1].sign_to_receive == ("2.0.0",)


def _rejected(session: Session, sql: str, match: str, **params: Any) -> None:
    with pytest.raises(IntegrityError, match=match), session.begin_nested():
        session.execute(text(sql), params)


INSERT_DOWNLOAD = (
    "INSERT INTO downloads (workspace_id, version_id, user_id, created_at) "
    "VALUES (:w, :v, :u, CURRENT_TIMESTAMP)"
)


def test_the_database_refuses_a_download_of_a_licensed_version_without_a_signature(
    subscribed: tuple[Session, Principal],
) -> None:
    db, who = subscribed
    params = {
        "w": who.workspace_id,
        "v": get_version(PKG, "2.0.0", session=db).id,
        "u": who.user_id,
    }
    _rejected(db, INSERT_DOWNLOAD, "download of a licensed version needs a signature", **params)
    _sign(db, who, PKG, "2.0.0")
    db.execute(text(INSERT_DOWNLOAD), params)


INSERT_ENTITLEMENT = (
    "INSERT INTO entitlements (workspace_id, version_id, order_id, kind, created_at) "
    "VALUES (:w, :v, :o, 'purchase', CURRENT_TIMESTAMP)"
)


def _slip_in_unsigned(session: Session, who: Principal) -> int:
    """An entitlement to the enterprise 2.0.0 without a signature, written past the insert
    guard as a tamperer would (rolled back with the test); returns its version id."""
    enterprise = get_version(PKG, "2.0.0", session=session).id
    params = {
        "w": who.workspace_id,
        "v": enterprise,
        "o": _raw_order(session, who, enterprise, "raw"),
    }
    if session.get_bind().dialect.name == "sqlite":
        session.execute(text("DROP TRIGGER entitlements_need_signature"))
        session.execute(text(INSERT_ENTITLEMENT), params)
    else:
        session.execute(text("ALTER TABLE entitlements DISABLE TRIGGER entitlements_signature"))
        session.execute(text(INSERT_ENTITLEMENT), params)
        session.execute(text("ALTER TABLE entitlements ENABLE TRIGGER entitlements_signature"))
    return enterprise


def test_download_checks_the_signature_even_when_an_entitlement_slipped_in(
    subscribed: tuple[Session, Principal], kits_dir: Path
) -> None:
    """An unsigned entitlement written past the database's guard is still not served: the
    download function refuses before it reads the kit."""
    db, who = subscribed
    _slip_in_unsigned(db, who)
    with pytest.raises(LicenceRequiredError, match=r"2\.0\.0 requires a signed licence"):
        download(who, PKG, "2.0.0", kits_dir=kits_dir, session=db)


def test_the_database_refuses_any_update_of_an_unsigned_licensed_entitlement(
    subscribed: tuple[Session, Principal],
) -> None:
    """0002 guarded inserts only: a row rewritten later must be signed too."""
    db, who = subscribed
    version = _slip_in_unsigned(db, who)
    update = "UPDATE entitlements SET revoke_reason = 'touched' WHERE version_id = :v"
    _rejected(db, update, "needs a signature", v=version)


def test_the_database_refuses_repointing_an_entitlement_at_a_licensed_version(
    subscribed: tuple[Session, Principal],
) -> None:
    db, _ = subscribed
    enterprise = get_version(PKG, "2.0.0", session=db).id
    _rejected(
        db, "UPDATE entitlements SET version_id = :v", "keeps|needs a signature", v=enterprise
    )


def test_a_revoked_entitlement_stays_revoked(
    db: Session, packages: Packages, key: Path, kits_dir: Path
) -> None:
    publish_one(packages.priced, key, kits_dir, db)
    order = _buy(db, member(db, "acme"), "test-priced", "1.0.0", "k")
    refund_order(order.id, "x", session=db)
    _rejected(db, "UPDATE entitlements SET revoked_at = NULL", "stays revoked")
