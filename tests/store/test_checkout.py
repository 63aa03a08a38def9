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
from servekit.store import ledger, publishing
from servekit.store.checkout import (
    PERIOD,
    PLACEHOLDER_RULE,
    confirm,
    create_quote,
    maintenance_offer,
    quote_notes,
    refund_order,
)
from servekit.store.entitlements import (
    cancel_subscription,
    download,
    downloadable,
    list_entitlements,
)
from servekit.store.licences import CLAUSES, sign_licence, terms_for
from servekit.store.models import (
    JournalEntry,
    OrderKind,
    OrderStatus,
    Posting,
    Quote,
    Role,
    utcnow,
)
from servekit.store.providers import ProviderName, SandboxProvider
from servekit.store.publishing import get_version, retract
from servekit.store.renewals import due_subscriptions, renew_subscription
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
    _buy(shop, who, "test-priced", "1.0.0", "buy")  # maintenance adds to a bought version
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
    (ent,) = [
        e for e in list_entitlements(who, session=shop, now=later) if e.kind == "subscription"
    ]
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


# --- price rules (docs/store.md): maintenance adds to a bought version; placeholders ----


def test_maintenance_cannot_be_bought_alone(shop: Session) -> None:
    who = member(shop, "acme")
    with pytest.raises(StoreConflictError, match="add-on to a purchased version"):
        create_quote(who, "test-priced", None, OrderKind.SUBSCRIPTION, session=shop)
    bought = _buy(shop, who, "test-priced", "1.0.0", "buy")
    quote = create_quote(who, "test-priced", None, OrderKind.SUBSCRIPTION, session=shop)
    assert quote.amount_cents == 1900 and quote.version == "1.0.0"
    # confirm checks again: the version refunded after the quote, maintenance is refused
    refund_order(bought.id, "changed their mind", session=shop)
    with pytest.raises(StoreConflictError, match="add-on to a purchased version"):
        confirm(who, quote.id, "sub", provider=SANDBOX, session=shop)


def test_maintenance_adds_to_the_current_version_only(
    shop: Session, packages: Packages, key: Path, kits_dir: Path
) -> None:
    who = member(shop, "acme")
    _buy(shop, who, "test-priced", "1.0.0", "buy")
    publish_one(packages.priced_v2, key, kits_dir, shop)
    ver = publishing.version_info(get_version("test-priced", "1.1.0", session=shop))
    old = publishing.version_info(get_version("test-priced", "1.0.0", session=shop))
    assert maintenance_offer(who, ver, session=shop) == (
        "buy this version first: maintenance is an add-on to it"
    )
    assert maintenance_offer(who, old, session=shop) == (
        "maintenance is added to the current version only"
    )
    with pytest.raises(StoreConflictError, match=r"does not own test-priced 1\.1\.0"):
        create_quote(who, "test-priced", None, OrderKind.SUBSCRIPTION, session=shop)
    _buy(shop, who, "test-priced", "1.1.0", "buy-2")
    assert maintenance_offer(who, ver, session=shop) is None
    _buy(shop, who, "test-priced", None, "sub", OrderKind.SUBSCRIPTION)
    assert maintenance_offer(who, ver, session=shop) == (
        "the workspace has maintenance for this package already"
    )


def test_maintenance_is_offered_only_where_checkout_sells_it(
    shop: Session, packages: Packages, key: Path, kits_dir: Path
) -> None:
    """A version delivered by maintenance that has ended is kept, but not bought: the buy
    page must not offer maintenance on it that the quote then refuses."""
    who = member(shop, "acme")
    _buy(shop, who, "test-priced", "1.0.0", "buy")
    sub = _buy(shop, who, "test-priced", None, "sub", OrderKind.SUBSCRIPTION)
    publish_one(packages.priced_v2, key, kits_dir, shop)  # delivered by the maintenance
    cancel_subscription(who, sub.entitlement_id, session=shop)
    (due,) = due_subscriptions(session=shop, now=utcnow() + PERIOD)
    renew_subscription(due, provider=SANDBOX, session=shop, now=utcnow() + PERIOD)
    assert [v.version for v in downloadable(who, "test-priced", session=shop)] == [
        "1.0.0",
        "1.1.0",
    ]
    ver = publishing.version_info(get_version("test-priced", "1.1.0", session=shop))
    assert maintenance_offer(who, ver, session=shop) == (
        "buy this version first: maintenance is an add-on to it"
    )
    with pytest.raises(StoreConflictError, match=r"does not own test-priced 1\.1\.0"):
        create_quote(who, "test-priced", None, OrderKind.SUBSCRIPTION, session=shop)


def test_the_quote_warns_before_buying_what_maintenance_delivered(
    shop: Session, packages: Packages, key: Path, kits_dir: Path
) -> None:
    who = member(shop, "acme")
    _buy(shop, who, "test-priced", "1.0.0", "buy")
    _buy(shop, who, "test-priced", None, "sub", OrderKind.SUBSCRIPTION)
    publish_one(packages.priced_v2, key, kits_dir, shop)  # delivered by the maintenance
    quote = create_quote(who, "test-priced", "1.1.0", OrderKind.PURCHASE, session=shop)
    (note,) = quote_notes(who, quote, session=shop)
    assert note.startswith("This workspace already has test-priced 1.1.0")
    other = member(shop, "other")
    fresh = create_quote(other, "test-priced", "1.1.0", OrderKind.PURCHASE, session=shop)
    assert quote_notes(other, fresh, session=shop) == []


class LiveProvider:
    """A provider that is not a test one; checkout must refuse before charging it."""

    name = ProviderName.STRIPE

    def charge(self, amount_cents: int, currency: str, *, idempotency_key: str, memo: str) -> str:
        raise AssertionError("a placeholder kit was charged")

    renew = charge

    def refund(self, payment_ref: str, amount_cents: int, *, idempotency_key: str) -> str:
        raise AssertionError("not reached")


def test_a_placeholder_commit_is_sold_only_in_test_mode(shop: Session) -> None:
    assert get_version("kimi-k3-8xb300", "1.0.0", session=shop).placeholder_commit
    assert not get_version("test-priced", "1.0.0", session=shop).placeholder_commit
    who = member(shop, "acme")
    _sign(shop, who, "kimi-k3-8xb300", "1.0.0")
    quote = create_quote(who, "kimi-k3-8xb300", "1.0.0", OrderKind.PURCHASE, session=shop)
    assert PLACEHOLDER_RULE in quote_notes(who, quote, session=shop)
    with pytest.raises(NotForSaleError, match="sold only in test mode"):
        confirm(who, quote.id, "live", provider=LiveProvider(), session=shop)
    assert confirm(who, quote.id, "test", provider=SANDBOX, session=shop).status == "paid"
