"""Signing in with the database-kept rate limit, shared by the pages and the JSON API."""

from __future__ import annotations

from servekit.errors import AuthenticationError
from servekit.store import accounts
from servekit.store.db import Store


def sign_in(store: Store, email: str, password: str, client: str) -> str:
    """A new session token; a wrong password is recorded (in its own transaction, since
    the failing one rolls back) and counts against the email and the client address."""
    try:
        with store.transaction() as s:
            return accounts.sign_in(email, password, session=s, client=client)
    except AuthenticationError:
        with store.transaction() as s:
            accounts.record_failure(email, client, session=s)
        raise
