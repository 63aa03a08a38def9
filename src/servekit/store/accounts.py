"""Users, sessions, workspaces, memberships and API tokens.

Passwords are hashed with argon2 (``argon2-cffi``) and must pass the policy of
:mod:`servekit.store.passwords`. Session and API tokens are 32 random bytes, shown once and
stored as their sha256 (they carry their own entropy, so a slow hash adds nothing). Every
lookup that crosses a workspace boundary answers "not found", so a caller cannot learn
what another workspace holds. A sign-in for an email with no account checks the password
against a dummy hash, so it takes as long as one for an account.

Sign-in throttling (docs/store.md, "Sign-in throttling"): each attempt is recorded as a
failure *before* its password is checked (:func:`begin_sign_in`), in a transaction that
holds a lock on the account and on the address (PostgreSQL advisory locks; SQLite's one
writer), so concurrent guesses are counted one after another and a burst cannot get more
passwords checked than the limit; a correct password deletes the account's failures.

* per account, from one address: :data:`ACCOUNT_FREE` failures in
  :data:`ACCOUNT_LOOKBACK` are free; each further one waits a backoff from the latest
  failure that doubles from :data:`BACKOFF_FIRST` up to :data:`BACKOFF_MAX` (a guesser
  elsewhere cannot make the account's owner wait);
* per account, from all addresses: :data:`ACCOUNT_DAILY_MAX` failures in
  :data:`ACCOUNT_LOOKBACK` close the account until the oldest leaves the window (guesses
  spread over many addresses);
* per address: failures for :data:`ADDRESS_ACCOUNTS` different emails within
  :data:`ADDRESS_WINDOW` (password spraying) close the address until the oldest of them
  leaves the window. One person's typos are one email, so they never close an address,
  and a browser that signed in to an account before (a device cookie, set by the web
  layer) is not held by its address's limit for that account.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import re
import secrets
from functools import cache

from argon2 import PasswordHasher, profiles
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from servekit.config import PasswordHashing, load_settings
from servekit.errors import (
    AuthenticationError,
    PermissionDeniedError,
    StoreConflictError,
    StoreNotFoundError,
    TooManySignInsError,
    UsageError,
)
from servekit.store.models import (
    ApiToken,
    LoginSession,
    Membership,
    Role,
    SignInFailure,
    User,
    Workspace,
    utcnow,
)
from servekit.store.passwords import check_password
from servekit.store.results import NewToken, Principal, TokenInfo

SESSION_DAYS = 14
EMAIL_MAX = 254  # RFC 5321's longest forward path, less its angle brackets
NAME_MAX = 200  # workspace and token names (their columns' size)
TOKEN_PREFIX = "sk_"
SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{1,62}$")
BUYING_ROLES = frozenset({Role.OWNER, Role.BUYER})
ACCOUNT_FREE = 5  # failed sign-ins per account and address before the backoff starts
ACCOUNT_DAILY_MAX = 100  # failed sign-ins per account from all addresses (800-63B: <= 100)
ACCOUNT_LOOKBACK = dt.timedelta(hours=24)
BACKOFF_FIRST = dt.timedelta(minutes=1)
BACKOFF_MAX = dt.timedelta(hours=1)
ADDRESS_ACCOUNTS = 10  # other emails failing from one address in the window: spraying
ADDRESS_WINDOW = dt.timedelta(minutes=15)

_PROFILES = {
    PasswordHashing.RFC9106_LOW_MEMORY: profiles.RFC_9106_LOW_MEMORY,
    PasswordHashing.CHEAPEST_FOR_TESTS: profiles.CHEAPEST,
}


def _hashing() -> PasswordHashing:
    """``SERVEKIT_PASSWORD_HASHING``, read from the environment on each use (never at
    import), so a test suite's setting reaches every process it starts."""
    return load_settings().password_hashing


def _hasher() -> PasswordHasher:
    return _hasher_of(_hashing())


@cache
def _hasher_of(hashing: PasswordHashing) -> PasswordHasher:
    return PasswordHasher.from_parameters(_PROFILES[hashing])


def _sha(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@cache
def _dummy_hash(hasher: PasswordHasher) -> str:
    """What an email with no account is checked against: the same argon2 work."""
    return hasher.hash(secrets.token_urlsafe(16))


def bounded(value: str, what: str, limit: int = NAME_MAX) -> str:
    """``value`` if it is 1 to ``limit`` printable characters (no control, direction or
    invisible character), else a :class:`UsageError`: every way in (the web forms, the
    API, the operator's CLI) is bounded here before the database, whose columns hold
    ``limit`` and PostgreSQL refuses NUL."""
    if not 0 < len(value) <= limit or not value.isprintable():
        raise UsageError(
            f"the {what} must be 1 to {limit} printable characters; got {len(value)}"
            + ("" if value.isprintable() else ", with a control or invisible character"),
            hint=f"give a shorter {what}, without control characters",
        )
    return value


def _valid_email(email: str) -> str:
    email = bounded(email.strip().lower(), "email", EMAIL_MAX)
    if "@" not in email:
        raise UsageError(f"{email!r} is not an email address", hint="give name@domain")
    return email


def create_user(email: str, password: str, *, session: Session) -> int:
    """A new user; refuses a taken email or a password the policy refuses."""
    email = _valid_email(email)
    check_password(password, email=email)
    if session.scalar(select(User.id).where(User.email == email)) is not None:
        raise StoreConflictError(f"a user with email {email} exists", hint="sign in instead")
    user = User(email=email, password_hash=_hasher().hash(password))
    session.add(user)
    session.flush()
    return user.id


def user_id_by_email(email: str, *, session: Session) -> int:
    uid = session.scalar(select(User.id).where(User.email == email.strip().lower()))
    if uid is None:
        raise StoreNotFoundError(
            f"no user {email}", hint="create it: servekit store add-user EMAIL"
        )
    return uid


def _lock(key: str, session: Session) -> None:
    """Serialize sign-in attempts on ``key`` until the transaction ends (PostgreSQL; on
    SQLite every writing transaction already holds the database's one write lock)."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(select(func.pg_advisory_xact_lock(func.hashtextextended(key, 0))))


def backoff(failures: int) -> dt.timedelta:
    """How long after its latest failure an account with ``failures`` waits (0: free)."""
    if failures < ACCOUNT_FREE:
        return dt.timedelta(0)
    doubled: dt.timedelta = BACKOFF_FIRST * 2 ** min(failures - ACCOUNT_FREE, 32)
    return min(doubled, BACKOFF_MAX)


def _throttled(seconds: float, message: str, hint: str) -> TooManySignInsError:
    wait = max(1, math.ceil(seconds))
    return TooManySignInsError(
        f"{message}; try again in {wait} seconds", retry_after=wait, hint=hint
    )


def _check_account(email: str, client: str, now: dt.datetime, session: Session) -> None:
    since = now - ACCOUNT_LOOKBACK
    of_account = (SignInFailure.email == email, SignInFailure.at > since)
    count, latest = session.execute(
        select(func.count(SignInFailure.id), func.max(SignInFailure.at)).where(
            *of_account, SignInFailure.client == client
        )
    ).one()
    if latest is not None and (wait := latest + backoff(count) - now).total_seconds() > 0:
        raise _throttled(
            wait.total_seconds(),
            f"{count} failed sign-ins for this account from your address",
            "wait, then type the password carefully: each failure doubles the wait",
        )
    total, oldest = session.execute(
        select(func.count(SignInFailure.id), func.min(SignInFailure.at)).where(*of_account)
    ).one()
    if total >= ACCOUNT_DAILY_MAX and oldest is not None:
        raise _throttled(
            (oldest + ACCOUNT_LOOKBACK - now).total_seconds(),
            f"{total} failed sign-ins for this account in the last day, from any address",
            "the account is being guessed at; wait, or ask the operator",
        )


def _check_address(email: str, client: str, now: dt.datetime, session: Session) -> None:
    since = now - ADDRESS_WINDOW
    others = (
        select(SignInFailure.email, func.min(SignInFailure.at).label("first"))
        .where(SignInFailure.client == client, SignInFailure.at > since)
        .where(SignInFailure.email != email)
        .group_by(SignInFailure.email)
        .subquery()
    )
    count, oldest = session.execute(select(func.count(), func.min(others.c.first))).one()
    if count >= ADDRESS_ACCOUNTS and oldest is not None:
        raise _throttled(
            (oldest + ADDRESS_WINDOW - now).total_seconds(),
            f"failed sign-ins for {count} other accounts from your address",
            "this looks like password guessing across accounts; wait, or sign in from "
            "another network",
        )


def begin_sign_in(email: str, client: str, *, session: Session, known_device: bool = False) -> None:
    """Refuse a throttled attempt, else record it as a failure before the password is
    checked (the policy above); run it in a transaction of its own, committed first.
    ``known_device``: the browser proved an earlier sign-in to this account (a device
    cookie), so the address's limit does not apply; the account's limits still do."""
    email, client = email.strip().lower(), client[:64]
    for key in sorted((f"sign-in:email:{email}", f"sign-in:client:{client}")):
        _lock(key, session)
    now = utcnow()
    _check_account(email, client, now, session)
    if not known_device:
        _check_address(email, client, now, session)
    session.add(SignInFailure(email=email, client=client, at=now))


def sign_in(email: str, password: str, *, session: Session) -> str:
    """Check the password and open a session; returns the session token (shown once).

    An unknown email is checked against a dummy hash (the same time as a known one). A
    correct password deletes the account's recorded failures. Throttling is the
    caller's: :func:`begin_sign_in` first, committed, for every attempt from outside.
    """
    email = email.strip().lower()
    user = session.scalar(select(User).where(User.email == email))
    hashing = _hashing()
    hasher = _hasher_of(hashing)
    try:  # argon2 raises on a mismatch; the dummy hash's password is random and unkept
        hasher.verify(user.password_hash if user else _dummy_hash(hasher), password)
    except (VerificationError, InvalidHashError):
        user = None
    if user is None:
        raise AuthenticationError("wrong email or password")
    # a hash made at other parameters is brought up to the store's; never down to the
    # test suite's (a real account's hash would stay that cheap after the setting goes)
    upgrade = hashing is PasswordHashing.RFC9106_LOW_MEMORY
    if upgrade and hasher.check_needs_rehash(user.password_hash):
        user.password_hash = hasher.hash(password)
    session.execute(delete(SignInFailure).where(SignInFailure.email == email))
    token = secrets.token_urlsafe(32)
    expires = utcnow() + dt.timedelta(days=SESSION_DAYS)
    session.add(LoginSession(user_id=user.id, token_sha256=_sha(token), expires_at=expires))
    return token


def sign_out(token: str, *, session: Session) -> None:
    """End the session ``token`` opened (a no-op for an unknown one)."""
    session.execute(delete(LoginSession).where(LoginSession.token_sha256 == _sha(token)))


def workspaces_of(user_id: int, *, session: Session) -> list[tuple[str, str, Role]]:
    """(slug, name, role) of every workspace the user belongs to."""
    rows = session.execute(
        select(Workspace.slug, Workspace.name, Membership.role)
        .join(Membership, Membership.workspace_id == Workspace.id)
        .where(Membership.user_id == user_id)
        .order_by(Workspace.slug)
    )
    return [(slug, name, role) for slug, name, role in rows]


def members(principal: Principal, *, session: Session) -> list[tuple[str, Role]]:
    """(email, role) of every member of the principal's workspace."""
    rows = session.execute(
        select(User.email, Membership.role)
        .join(Membership, Membership.user_id == User.id)
        .where(Membership.workspace_id == principal.workspace_id)
        .order_by(User.email)
    )
    return [(email, role) for email, role in rows]


def require_owner(principal: Principal) -> None:
    if principal.role is not Role.OWNER:
        raise PermissionDeniedError(
            f"only an owner of {principal.workspace} can change its members",
            hint="ask an owner",
        )


def _new_workspace(slug: str, name: str, session: Session) -> int:
    if not SLUG.match(slug):
        raise UsageError(
            f"workspace slug {slug!r} is not valid",
            hint="use 2-63 lower-case letters, digits and '-'",
        )
    if session.scalar(select(Workspace.id).where(Workspace.slug == slug)) is not None:
        raise StoreConflictError(f"workspace {slug} exists", hint="choose another slug")
    ws = Workspace(slug=slug, name=name)
    session.add(ws)
    session.flush()
    return ws.id


def create_workspace(slug: str, name: str, *, owner_id: int, session: Session) -> int:
    """A new workspace owned by ``owner_id``."""
    wid = _new_workspace(slug, bounded(name, "workspace name"), session)
    session.add(Membership(workspace_id=wid, user_id=owner_id, role=Role.OWNER))
    return wid


def sign_up(email: str, password: str, workspace: str, *, session: Session) -> None:
    """A new account and its workspace, doing the same work and leaving the same visible
    state whether or not ``email`` has an account, so sign-up cannot tell who has one.

    Refusals depend only on the form (the email's shape, the password policy, the slug's
    shape and whether it is taken), never on the email's account. For a new email: the
    user (one argon2 hash) and the workspace it owns. For an email with an account: the
    same hash, discarded, and the workspace reserved with no member (its slug is taken
    either way; the account gains nothing and the password is never checked, so sign-up
    is no side door around the sign-in throttle). The caller answers the same in both
    cases and signs nobody in.
    """
    email = _valid_email(email)
    check_password(password, email=email)
    wid = _new_workspace(workspace, workspace, session)
    password_hash = _hasher().hash(password)
    user_id = session.scalar(select(User.id).where(User.email == email))
    if user_id is None:
        user = User(email=email, password_hash=password_hash)
        session.add(user)
        session.flush()
        session.add(Membership(workspace_id=wid, user_id=user.id, role=Role.OWNER))


def add_member(workspace_id: int, user_id: int, role: Role, *, session: Session) -> None:
    """Add (or change the role of) a member."""
    row = session.get(Membership, (workspace_id, user_id))
    if row is None:
        session.add(Membership(workspace_id=workspace_id, user_id=user_id, role=role))
    else:
        row.role = role


def workspace_id_by_slug(slug: str, *, session: Session) -> int:
    wid = session.scalar(select(Workspace.id).where(Workspace.slug == slug))
    if wid is None:
        raise StoreNotFoundError(f"no workspace {slug}")
    return wid


def principal_for_user(user_id: int, workspace: str, *, session: Session) -> Principal:
    """The user's role in ``workspace``; a non-member gets "not found", not "forbidden"."""
    row = session.execute(
        select(Workspace.id, Membership.role)
        .join(Membership, Membership.workspace_id == Workspace.id)
        .where(Workspace.slug == workspace, Membership.user_id == user_id)
    ).first()
    if row is None:
        raise StoreNotFoundError(f"no workspace {workspace}")
    return Principal(user_id=user_id, workspace_id=row[0], workspace=workspace, role=row[1])


def user_for_session(token: str, *, session: Session) -> int:
    row = session.scalar(select(LoginSession).where(LoginSession.token_sha256 == _sha(token)))
    if row is None or row.expires_at <= utcnow():
        raise AuthenticationError("unknown or expired session", hint="sign in again")
    return row.user_id


def principal_for_token(token: str, *, session: Session) -> Principal:
    """The principal an API token stands for (its user, in its workspace)."""
    row = session.execute(
        select(ApiToken, Workspace.slug, Membership.role)
        .join(Workspace, Workspace.id == ApiToken.workspace_id)
        .join(
            Membership,
            (Membership.workspace_id == ApiToken.workspace_id)
            & (Membership.user_id == ApiToken.user_id),
        )
        .where(ApiToken.token_sha256 == _sha(token), ApiToken.revoked_at.is_(None))
    ).first()
    if row is None:
        raise AuthenticationError(
            "unknown or revoked API token", hint="create one: servekit store add-token SLUG EMAIL"
        )
    tok, slug, role = row
    return Principal(
        user_id=tok.user_id,
        workspace_id=tok.workspace_id,
        workspace=slug,
        role=role,
        token_id=tok.id,
    )


def create_token(principal: Principal, name: str, *, session: Session) -> NewToken:
    """A new API token for the principal's user in its workspace (shown once)."""
    name = bounded(name, "token name")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = ApiToken(
        workspace_id=principal.workspace_id,
        user_id=principal.user_id,
        name=name,
        prefix=token[:10],
        token_sha256=_sha(token),
    )
    session.add(row)
    session.flush()
    return NewToken(id=row.id, name=name, workspace=principal.workspace, token=token)


def list_tokens(principal: Principal, *, session: Session) -> list[TokenInfo]:
    rows = session.scalars(
        select(ApiToken)
        .where(ApiToken.workspace_id == principal.workspace_id)
        .where(ApiToken.user_id == principal.user_id)
        .order_by(ApiToken.id)
    )
    return [
        TokenInfo(
            id=r.id,
            name=r.name,
            prefix=r.prefix,
            created_at=r.created_at,
            revoked=r.revoked_at is not None,
        )
        for r in rows
    ]


def revoke_token(principal: Principal, token_id: int, *, session: Session) -> None:
    row = session.get(ApiToken, token_id)
    if (
        row is None
        or row.workspace_id != principal.workspace_id
        or row.user_id != principal.user_id
    ):
        raise StoreNotFoundError(f"no token {token_id}")
    row.revoked_at = row.revoked_at or utcnow()


def require_buyer(principal: Principal) -> None:
    """Only owners and buyers may sign licences, confirm purchases and cancel."""
    if principal.role not in BUYING_ROLES:
        raise PermissionDeniedError(
            f"role {principal.role} cannot buy in workspace {principal.workspace}",
            hint="ask an owner to make you a buyer",
        )
