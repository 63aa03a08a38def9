"""Users, workspaces, members and API tokens: refusals name what is wrong, and a
lookup across a workspace boundary answers "not found"."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session

from servekit.errors import (
    AuthenticationError,
    PermissionDeniedError,
    StoreConflictError,
    StoreNotFoundError,
    UsageError,
)
from servekit.store import accounts
from servekit.store.models import Role


def _workspace(db: Session, slug: str = "acme") -> tuple[int, int]:
    owner = accounts.create_user(f"owner@{slug}.test", "long enough", session=db)
    return owner, accounts.create_workspace(slug, slug.title(), owner_id=owner, session=db)


@pytest.mark.parametrize(
    ("email", "password"), [("no-at-sign", "long enough"), ("a@b.test", "short")]
)
def test_a_user_needs_an_email_and_an_eight_character_password(
    db: Session, email: str, password: str
) -> None:
    with pytest.raises(UsageError, match="at least 8 characters") as info:
        accounts.create_user(email, password, session=db)
    assert info.value.hint == "choose a longer password"


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
