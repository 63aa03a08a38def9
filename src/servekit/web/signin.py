"""Signing in with the database-kept throttle, shared by the pages and the JSON API."""

from __future__ import annotations

from servekit.store import accounts
from servekit.store.db import Store


def sign_in(store: Store, email: str, password: str, client: str) -> str:
    """A new session token. The attempt is counted (as a failure, until the password
    proves right) and committed *before* the password is checked, so concurrent
    guesses cannot get more checks than the throttle allows (docs/store.md)."""
    with store.transaction() as s:
        accounts.begin_sign_in(email, client, session=s)
    with store.transaction() as s:
        return accounts.sign_in(email, password, session=s)
