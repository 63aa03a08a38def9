"""Quote, confirm, refund and what each grants, on both databases."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from servekit.errors import (
    AlreadyOwnedError,
    IdempotencyConflictError,
    LicenceRequiredError,
    NotForSaleError,
    PermissionDeniedError,
    StoreConflictError,
    StoreNotFoundError,
)
from servekit.store import ledger
from servekit.store.checkout import confirm, create_quote, refund_order
from servekit.store.entitlements import cancel_subscription, download, list_entitlements
from servekit.store.licences import CLAUSES, sign_licence, terms_for
from servekit.store.models import JournalEntry, OrderKind, OrderStatus, Posting, Quote, Role
from servekit.store.payments import SandboxProvider
from servekit.store.publishing import get_version, retract
from servekit.store.results import OrderInfo, Principal
from tests.store.conftest import Packages, member, publish_one

SANDBOX = SandboxProvider()


@pytest.fixture
def shop(db: Session, packages: Packages, key: Path, kits_dir: Path) -> Session:
    for path in (packages.free, packages.priced, packages.enterprise, packages.costly):
        publish_one(path, key, kits_dir, db)
    return db


def _buy(
    session: Session,
    who: Principal,
    pkg: str,
    version: str | None,
    key: str,
    kind: OrderKind = OrderKind.PURCHASE,
) -> OrderInfo:
    quote = create_quote(who, pkg, version, kind, session=session)
    return confirm(who, quote.id, key, provider=SANDBOX, session=session)


def _sign(session: Session, who: Principal, pkg: str, version: str) -> int:
    terms = terms_for(pkg, version, session=session)
    sig = sign_licence(
        who,
        pkg,
        version,
        licensed_entity="Example GmbH",
        signer_name="Ada Example",
        signer_title="CTO",
        authority_statement="Managing director with sole power of representation.",
        affirmed=set(CLAUSES),
        terms_sha256=terms.terms_sha256,
        ip="127.0.0.1",
        user_agent="pytest",
        session=session,
    )
    return sig.id


def test_a_quote_charges_nothing(shop: Session) -> None:
    who = member(shop, "acme")
    quote = create_quote(who, "test-priced", "1.0.0", OrderKind.PURCHASE, session=shop)
    assert quote.amount_cents == 4999 and quote.currency == "usd"
    assert shop.scalar(select(func.count(JournalEntry.id))) == 0
    assert list_entitlements(who, session=shop) == []


def test_confirm_charges_once_and_posts_a_balanced_entry(shop: Session) -> None:
    who = member(shop, "acme")
    order = _buy(shop, who, "test-priced", "1.0.0", "k1")
    assert order.status is OrderStatus.PAID and order.amount_cents == 4999
    assert order.payment_ref and order.provider == "sandbox"
    sums = {(b.account, b.amount_cents) for b in ledger.balances(session=shop)}
    assert sums == {("assets:provider:sandbox", 4999), (ledger.REVENUE, -4999)}
    assert [e.version for e in list_entitlements(who, session=shop)] == ["1.0.0"]


def test_the_same_key_returns_the_same_order_and_charges_once(shop: Session) -> None:
    who = member(shop, "acme")
    quote = create_quote(who, "test-priced", "1.0.0", OrderKind.PURCHASE, session=shop)
    first = confirm(who, quote.id, "double-click", provider=SANDBOX, session=shop)
    second = confirm(who, quote.id, "double-click", provider=SANDBOX, session=shop)
    assert first == second
    assert shop.scalar(select(func.count(Posting.id))) == 2


def test_a_different_request_under_the_same_key_is_refused(shop: Session) -> None:
    who = member(shop, "acme")
    _buy(shop, who, "test-priced", "1.0.0", "k1")
    quote = create_quote(who, "test-free", "1.0.0", OrderKind.PURCHASE, session=shop)
    with pytest.raises(IdempotencyConflictError):
        confirm(who, quote.id, "k1", provider=SANDBOX, session=shop)


def test_a_version_is_bought_once_per_workspace(shop: Session) -> None:
    who = member(shop, "acme")
    quote = create_quote(who, "test-priced", "1.0.0", OrderKind.PURCHASE, session=shop)
    _buy(shop, who, "test-priced", "1.0.0", "k1")
    with pytest.raises(AlreadyOwnedError):
        confirm(who, quote.id, "k2", provider=SANDBOX, session=shop)
    other = member(shop, "other")
    assert _buy(shop, other, "test-priced", "1.0.0", "k1").status is OrderStatus.PAID


def test_a_free_version_is_acquired_without_payment_or_journal_entry(shop: Session) -> None:
    who = member(shop, "acme")
    order = _buy(shop, who, "test-free", "1.0.0", "free")
    assert order.amount_cents == 0 and order.payment_ref is None and order.provider is None
    assert shop.scalar(select(func.count(JournalEntry.id))) == 0
    assert [e.package_id for e in list_entitlements(who, session=shop)] == ["test-free"]


def test_refund_revokes_reverses_and_allows_buying_again(shop: Session, kits_dir: Path) -> None:
    who = member(shop, "acme")
    order = _buy(shop, who, "test-priced", "1.0.0", "k1")
    refunded = refund_order(order.id, "customer asked", session=shop)
    assert refunded.status is OrderStatus.REFUNDED
    assert all(b.amount_cents == 0 for b in ledger.balances(session=shop))
    with pytest.raises(StoreNotFoundError):
        download(who, "test-priced", "1.0.0", kits_dir=kits_dir, session=shop)
    assert _buy(shop, who, "test-priced", "1.0.0", "k2").status is OrderStatus.PAID
    assert download(who, "test-priced", "1.0.0", kits_dir=kits_dir, session=shop).data


def test_enterprise_needs_a_signature_first(shop: Session) -> None:
    who = member(shop, "acme")
    quote = create_quote(who, "kimi-k3-8xb300", "1.0.0", OrderKind.PURCHASE, session=shop)
    assert quote.licence_required and quote.amount_cents == 2_500_000
    with pytest.raises(LicenceRequiredError):
        confirm(who, quote.id, "k1", provider=SANDBOX, session=shop)
    sig = _sign(shop, who, "kimi-k3-8xb300", "1.0.0")
    order = confirm(who, quote.id, "k1", provider=SANDBOX, session=shop)
    assert order.signature_id == sig


def test_a_signature_of_another_workspace_does_not_open_the_gate(shop: Session) -> None:
    signer, buyer = member(shop, "signer"), member(shop, "buyer")
    _sign(shop, signer, "kimi-k3-8xb300", "1.0.0")
    with pytest.raises(LicenceRequiredError):
        _buy(shop, buyer, "kimi-k3-8xb300", "1.0.0", "k1")


def test_the_price_threshold_gates_a_standard_version(shop: Session) -> None:
    who = member(shop, "acme")
    with pytest.raises(LicenceRequiredError):
        _buy(shop, who, "test-costly", "1.0.0", "k1")


def test_missing_affirmation_is_refused(shop: Session) -> None:
    who = member(shop, "acme")
    terms = terms_for("kimi-k3-8xb300", "1.0.0", session=shop)
    with pytest.raises(LicenceRequiredError, match="traceability"):
        sign_licence(
            who,
            "kimi-k3-8xb300",
            "1.0.0",
            licensed_entity="E",
            signer_name="N",
            signer_title="T",
            authority_statement="A",
            affirmed={c for c in CLAUSES if c.value != "traceability"},
            terms_sha256=terms.terms_sha256,
            ip="127.0.0.1",
            user_agent="pytest",
            session=shop,
        )


def test_a_member_cannot_buy(shop: Session) -> None:
    who = member(shop, "acme", Role.MEMBER)
    quote = create_quote(who, "test-priced", "1.0.0", OrderKind.PURCHASE, session=shop)
    with pytest.raises(PermissionDeniedError):
        confirm(who, quote.id, "k1", provider=SANDBOX, session=shop)


def test_retracted_is_not_sold_but_stays_with_its_owner(shop: Session, kits_dir: Path) -> None:
    owner, late = member(shop, "owner"), member(shop, "late")
    _buy(shop, owner, "test-priced", "1.0.0", "k1")
    retract("test-priced", "1.0.0", "figure re-run", session=shop)
    with pytest.raises(NotForSaleError):
        create_quote(late, "test-priced", "1.0.0", OrderKind.PURCHASE, session=shop)
    (ent,) = list_entitlements(owner, session=shop)
    assert ent.retracted and ent.downloadable == ("1.0.0",)
    assert download(owner, "test-priced", "1.0.0", kits_dir=kits_dir, session=shop).data


def test_subscription_follows_releases_and_keeps_them_after_it_ends(
    shop: Session, packages: Packages, key: Path, kits_dir: Path
) -> None:
    who = member(shop, "acme")
    order = _buy(shop, who, "test-priced", None, "sub", OrderKind.SUBSCRIPTION)
    assert order.amount_cents == 1900
    publish_one(packages.priced_v2, key, kits_dir, shop)
    got = download(who, "test-priced", "latest", kits_dir=kits_dir, session=shop)
    assert got.version == "1.1.0"
    cancel_subscription(who, order.entitlement_id, session=shop)
    later = dt.datetime.now(dt.UTC) + dt.timedelta(days=400)
    publish_one(packages.priced_v3, key, kits_dir, shop)
    v3 = get_version("test-priced", "1.2.0", session=shop)
    v3.published_at = later - dt.timedelta(days=1)  # released after the period ended
    (ent,) = list_entitlements(who, session=shop, now=later)
    assert ent.cancel_at_period_end and not ent.active
    assert ent.downloadable == ("1.0.0", "1.1.0")


def test_an_expired_quote_cannot_be_confirmed(shop: Session) -> None:
    who = member(shop, "acme")
    quote = create_quote(who, "test-priced", "1.0.0", OrderKind.PURCHASE, session=shop)
    shop.get_one(Quote, quote.id).expires_at = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)
    shop.flush()
    with pytest.raises(StoreConflictError, match="expired"):
        confirm(who, quote.id, "late", provider=SANDBOX, session=shop)
    assert shop.scalar(select(func.count(JournalEntry.id))) == 0


def test_another_workspaces_quote_is_not_found(shop: Session) -> None:
    mine, theirs = member(shop, "acme"), member(shop, "other")
    quote = create_quote(theirs, "test-priced", "1.0.0", OrderKind.PURCHASE, session=shop)
    with pytest.raises(StoreNotFoundError):
        confirm(mine, quote.id, "k", provider=SANDBOX, session=shop)
    with pytest.raises(StoreNotFoundError):
        confirm(mine, 10**9, "k2", provider=SANDBOX, session=shop)


def test_a_version_retracted_after_the_quote_cannot_be_confirmed(shop: Session) -> None:
    who = member(shop, "acme")
    quote = create_quote(who, "test-priced", "1.0.0", OrderKind.PURCHASE, session=shop)
    retract("test-priced", "1.0.0", "bad figures", session=shop)
    with pytest.raises(NotForSaleError, match="retracted"):
        confirm(who, quote.id, "after-retract", provider=SANDBOX, session=shop)
