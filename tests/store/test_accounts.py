"""Users, workspaces, members and API tokens: refusals name what is wrong, and a
lookup across a workspace boundary answers "not found"."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from servekit.errors import (
    AuthenticationError,
    PermissionDeniedError,
    StoreConflictError,
    StoreNotFoundError,
    TooManySignInsError,
    UsageError,
)
from servekit.store import accounts
from servekit.store.db import Store
from servekit.store.models import Role, User
from servekit.store.results import Principal


def _workspace(db: Session, slug: str = "acme") -> tuple[int, int]:
    owner = accounts.create_user(f"owner@{slug}.test", "long enough", session=db)
    return owner, accounts.create_workspace(slug, slug.title(), owner_id=owner, session=db)


def test_a_user_needs_an_email_address(db: Session) -> None:
    with pytest.raises(UsageError, match="'no-at-sign' is not an email address"):
        accounts.create_user("no-at-sign", "long enough", session=db)


@pytest.mark.parametrize("password", ["short", "12345678", "Password123!", "owner-acme-pass"])
def test_a_user_needs_a_password_the_policy_accepts(db: Session, password: str) -> None:
    with pytest.raises(UsageError, match="the password ") as info:
        accounts.create_user("owner@acme.test", password, session=db)
    assert "passphrase" in str(info.value.hint)


def test_emails_are_unique_whatever_their_case(db: Session) -> None:
    accounts.create_user("Ada@Example.test", "long enough", session=db)
    with pytest.raises(StoreConflictError, match=r"ada@example\.test exists"):
        accounts.create_user(" ada@example.TEST ", "another one", session=db)
    assert accounts.user_id_by_email("ADA@example.test", session=db) > 0


def test_an_unknown_email_says_how_to_create_the_user(db: Session) -> None:
    with pytest.raises(StoreNotFoundError, match=r"no user nobody@x\.test") as info:
        accounts.user_id_by_email("nobody@x.test", session=db)
    assert "servekit store add-user EMAIL" in str(info.value.hint)


@pytest.mark.parametrize("slug", ["A", "Acme", "-acme", "acme_corp", "a" * 64])
def test_workspace_slugs_are_short_lower_case_names(db: Session, slug: str) -> None:
    owner = accounts.create_user("o@x.test", "long enough", session=db)
    with pytest.raises(UsageError, match="is not valid") as info:
        accounts.create_workspace(slug, "Acme", owner_id=owner, session=db)
    assert "lower-case letters" in str(info.value.hint)


def test_a_taken_slug_is_a_conflict_and_an_unknown_one_not_found(db: Session) -> None:
    owner, wid = _workspace(db)
    with pytest.raises(StoreConflictError, match="workspace acme exists"):
        accounts.create_workspace("acme", "Other", owner_id=owner, session=db)
    assert accounts.workspace_id_by_slug("acme", session=db) == wid
    with pytest.raises(StoreNotFoundError, match="no workspace nope"):
        accounts.workspace_id_by_slug("nope", session=db)


def test_adding_a_member_again_changes_the_role(db: Session) -> None:
    _, wid = _workspace(db)
    bob = accounts.create_user("bob@x.test", "long enough", session=db)
    accounts.add_member(wid, bob, Role.MEMBER, session=db)
    accounts.add_member(wid, bob, Role.BUYER, session=db)
    db.flush()
    owner = accounts.principal_for_user(
        accounts.user_id_by_email("owner@acme.test", session=db), "acme", session=db
    )
    assert accounts.members(owner, session=db) == [
        ("bob@x.test", Role.BUYER),
        ("owner@acme.test", Role.OWNER),
    ]


def test_only_owners_change_members_and_only_buyers_buy(db: Session) -> None:
    _, wid = _workspace(db)
    bob = accounts.create_user("bob@x.test", "long enough", session=db)
    accounts.add_member(wid, bob, Role.MEMBER, session=db)
    member = accounts.principal_for_user(bob, "acme", session=db)
    with pytest.raises(PermissionDeniedError, match="only an owner of acme"):
        accounts.require_owner(member)
    with pytest.raises(PermissionDeniedError, match="role member cannot buy in workspace acme"):
        accounts.require_buyer(member)


def test_a_token_is_revoked_once_and_only_by_its_owner(db: Session) -> None:
    owner_id, wid = _workspace(db)
    bob = accounts.create_user("bob@x.test", "long enough", session=db)
    accounts.add_member(wid, bob, Role.BUYER, session=db)
    owner = accounts.principal_for_user(owner_id, "acme", session=db)
    new = accounts.create_token(owner, "ci", session=db)
    assert accounts.principal_for_token(new.token, session=db).user_id == owner_id
    someone_else = accounts.principal_for_user(bob, "acme", session=db)
    with pytest.raises(StoreNotFoundError, match=f"no token {new.id}"):
        accounts.revoke_token(someone_else, new.id, session=db)
    accounts.revoke_token(owner, new.id, session=db)
    (first,) = accounts.list_tokens(owner, session=db)
    accounts.revoke_token(owner, new.id, session=db)  # again: the first revocation stands
    (again,) = accounts.list_tokens(owner, session=db)
    assert first.revoked and again.revoked
    with pytest.raises(AuthenticationError, match="unknown or revoked API token"):
        accounts.principal_for_token(new.token, session=db)
    with pytest.raises(StoreNotFoundError, match="no token 999999"):
        accounts.revoke_token(owner, 999_999, session=db)


# --- sign-in throttling (docs/store.md, "Sign-in throttling") ---------------------------


def _fail(db: Session, email: str, client: str, times: int) -> None:
    """``times`` attempts whose password was wrong: each is recorded as a failure when it
    begins, and only a correct password removes that record (so no check is needed)."""
    for _ in range(times):
        accounts.begin_sign_in(email, client, session=db)


def test_an_account_waits_a_doubling_backoff_after_its_free_failures(db: Session) -> None:
    _fail(db, "ada@acme.test", "192.0.2.1", accounts.ACCOUNT_FREE)
    with pytest.raises(TooManySignInsError, match="5 failed sign-ins for this acc") as info:
        accounts.begin_sign_in("ADA@acme.test", "192.0.2.1", session=db)
    assert 55 <= info.value.retry_after <= 60
    assert "password reset" not in str(info.value).lower()
    # a guesser at one address cannot make the account's owner, elsewhere, wait
    accounts.begin_sign_in("ada@acme.test", "198.51.100.7", session=db)
    assert [accounts.backoff(n).total_seconds() for n in (4, 5, 6, 7, 12, 60)] == [
        0,
        60,
        120,
        240,
        3600,
        3600,
    ]


def test_failures_from_many_addresses_close_the_account_at_the_daily_limit(
    db: Session,
) -> None:
    per_address = accounts.ACCOUNT_FREE
    for n in range(accounts.ACCOUNT_DAILY_MAX // per_address):
        _fail(db, "ada@acme.test", f"10.0.{n}.1", per_address)
    with pytest.raises(TooManySignInsError, match="100 failed sign-ins for this account in the"):
        accounts.begin_sign_in("ada@acme.test", "10.9.9.9", session=db)  # a fresh address
    accounts.begin_sign_in("bob@acme.test", "10.9.9.9", session=db)  # another account


def test_a_correct_password_clears_the_account_failures(db: Session) -> None:
    accounts.create_user("ada@acme.test", "long enough", session=db)
    _fail(db, "ada@acme.test", "192.0.2.1", accounts.ACCOUNT_FREE - 1)
    accounts.begin_sign_in("ada@acme.test", "192.0.2.1", session=db)
    assert accounts.sign_in("ada@acme.test", "long enough", session=db)
    _fail(db, "ada@acme.test", "192.0.2.1", accounts.ACCOUNT_FREE)  # free again


def test_a_colleagues_typos_do_not_lock_out_another_account(db: Session) -> None:
    office = "192.0.2.50"
    accounts.create_user("ada@acme.test", "long enough", session=db)
    accounts.create_user("bob@acme.test", "bobs own phrase", session=db)
    _fail(db, "ada@acme.test", office, accounts.ACCOUNT_FREE)
    with pytest.raises(TooManySignInsError):
        accounts.begin_sign_in("ada@acme.test", office, session=db)
    accounts.begin_sign_in("bob@acme.test", office, session=db)
    assert accounts.sign_in("bob@acme.test", "bobs own phrase", session=db)


def test_failures_across_many_accounts_close_the_address(db: Session) -> None:
    sprayer = "203.0.113.66"
    for n in range(accounts.ADDRESS_ACCOUNTS):
        _fail(db, f"user{n}@acme.test", sprayer, 1)
    with pytest.raises(TooManySignInsError, match="10 other accounts from your address") as info:
        accounts.begin_sign_in("next@acme.test", sprayer, session=db)
    assert 0 < info.value.retry_after <= accounts.ADDRESS_WINDOW.total_seconds()
    accounts.begin_sign_in("next@acme.test", "198.51.100.8", session=db)  # not another address


def _parameters(db: Session, email: str) -> str:
    """The argon2 parameters of ``email``'s stored hash (``m=...,t=...,p=...``)."""
    stored = db.scalar(select(User.password_hash).where(User.email == email))
    assert stored is not None
    return stored.split("$")[3]


def test_the_production_cost_is_the_default_and_rfc_9106s(
    db: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SERVEKIT_PASSWORD_HASHING")
    accounts.create_user("ada@acme.test", "long enough", session=db)
    assert _parameters(db, "ada@acme.test") == "m=65536,t=3,p=4"


def test_a_hash_made_at_other_parameters_is_rehashed_at_sign_in(
    db: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    accounts.create_user("ada@acme.test", "long enough", session=db)
    cheap = _parameters(db, "ada@acme.test")
    assert cheap != "m=65536,t=3,p=4"
    with pytest.raises(AuthenticationError):  # a wrong password changes nothing
        accounts.sign_in("ada@acme.test", "wrong guess", session=db)
    monkeypatch.setenv("SERVEKIT_PASSWORD_HASHING", "rfc9106-low-memory")
    with pytest.raises(AuthenticationError):
        accounts.sign_in("ada@acme.test", "wrong guess", session=db)
    assert _parameters(db, "ada@acme.test") == cheap
    accounts.sign_in("ada@acme.test", "long enough", session=db)
    assert _parameters(db, "ada@acme.test") == "m=65536,t=3,p=4"
    accounts.sign_in("ada@acme.test", "long enough", session=db)  # the new hash checks


def test_the_test_suites_cost_never_rehashes_a_real_hash_down(
    db: Session, monkeypatch: pytest.MonkeyPatch, production_cost: None
) -> None:
    accounts.create_user("ada@acme.test", "long enough", session=db)
    monkeypatch.setenv("SERVEKIT_PASSWORD_HASHING", "cheapest-for-tests")
    accounts.sign_in("ada@acme.test", "long enough", session=db)
    assert _parameters(db, "ada@acme.test") == "m=65536,t=3,p=4"


@pytest.mark.usefixtures("production_cost")
def test_an_unknown_email_costs_the_same_argon2_check(db: Session) -> None:
    accounts.create_user("ada@acme.test", "long enough", session=db)

    def timed(email: str) -> float:
        start = time.perf_counter()
        with pytest.raises(AuthenticationError, match="wrong email or password"):
            accounts.sign_in(email, "wrong guess", session=db)
        return time.perf_counter() - start

    timed("nobody@acme.test")  # the dummy hash is made once, on first use
    known = min(timed("ada@acme.test") for _ in range(2))
    unknown = min(timed("nobody@acme.test") for _ in range(2))
    assert 0.5 < unknown / known < 2, (known, unknown)


# --- sign-up that cannot tell who has an account ---------------------------------------


def test_sign_up_of_a_taken_email_leaves_the_same_visible_state(db: Session) -> None:
    ada = accounts.create_user("ada@acme.test", "long enough", session=db)
    accounts.sign_up("new@acme.test", "a fresh phrase", "fresh", session=db)
    accounts.sign_up(" ADA@acme.test", "an attacker guess", "taken", session=db)
    for slug in ("fresh", "taken"):  # both slugs are taken now
        with pytest.raises(StoreConflictError, match=f"workspace {slug} exists"):
            accounts.sign_up("zed@acme.test", "yet another phrase", slug, session=db)
    assert accounts.workspaces_of(ada, session=db) == []  # ada's account gained nothing
    with pytest.raises(AuthenticationError):  # and its password is unchanged
        accounts.sign_in("ada@acme.test", "an attacker guess", session=db)
    new = accounts.user_id_by_email("new@acme.test", session=db)
    assert accounts.workspaces_of(new, session=db) == [("fresh", "fresh", Role.OWNER)]


def test_sign_up_refusals_depend_on_the_form_only(db: Session) -> None:
    accounts.create_user("ada@acme.test", "long enough", session=db)
    for email in ("ada@acme.test", "nobody@acme.test"):
        with pytest.raises(UsageError, match="the password is one of the most common"):
            accounts.sign_up(email, "password123", "some-ws", session=db)
        with pytest.raises(UsageError, match="workspace slug 'Bad Slug' is not valid"):
            accounts.sign_up(email, "a fine phrase", "Bad Slug", session=db)


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda db, p: accounts.create_token(p, "x" * 201, session=db), "token name"),
        (lambda db, p: accounts.create_token(p, "ci\x00", session=db), "token name"),
        (lambda db, p: accounts.create_token(p, "ci\u202e", session=db), "token name"),
        (
            lambda db, p: accounts.create_user("a" * 250 + "@x.test", "ok phrase", session=db),
            "email",
        ),
        (
            lambda db, p: accounts.create_workspace(
                "w2", "W" * 201, owner_id=p.user_id, session=db
            ),
            "workspace name",
        ),
    ],
)
def test_names_are_bounded_in_the_store_whoever_calls(
    db: Session, make: Callable[[Session, Principal], object], said: str
) -> None:
    """The operator's CLI reaches these without the web layer's bounds: on PostgreSQL a NUL
    or a name over its column's size was a database error with a traceback."""
    owner_id, _ = _workspace(db)
    owner = accounts.principal_for_user(owner_id, "acme", session=db)
    with pytest.raises(UsageError, match=f"the {said} must be 1 to"):
        make(db, owner)


def test_a_value_the_database_refuses_is_a_usage_error(fresh_store: Store) -> None:
    """The backstop behind the front ends' bounds: PostgreSQL refuses NUL in text (a
    DataError, once a 500); SQLite stores it, so there the lookup just finds nobody."""
    postgres = fresh_store.engine.dialect.name == "postgresql"
    expected = UsageError if postgres else StoreNotFoundError
    with pytest.raises(expected) as info, fresh_store.transaction() as s:
        accounts.user_id_by_email("a\x00b@x.test", session=s)
    if postgres:
        assert "the database refused a value" in info.value.message
        assert "NUL" in str(info.value)
