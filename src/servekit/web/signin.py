"""Signing in with the database-kept throttle, shared by the pages and the JSON API.

A browser that signs in gets a device cookie for that account (OWASP's "device cookies"):
an HMAC of the email under the session key. Presented again, it exempts the attempt from
its address's limit (password spraying from a shared address then does not lock out a
colleague who has signed in from that browser before); the account's own limits still
apply, and the cookie is worth nothing for any other account.
"""

from __future__ import annotations

import hashlib
import hmac

from servekit.store import accounts
from servekit.store.db import Store

DEVICE_COOKIE = "servekit_device"
DEVICE_DAYS = 180


def device_token(key: str, email: str) -> str:
    """The device cookie's value for ``email``, under the app's session key."""
    message = b"sign-in device:" + email.strip().lower().encode()
    return hmac.new(key.encode(), message, hashlib.sha256).hexdigest()


def known_device(key: str, email: str, cookie: str | None) -> bool:
    """Whether ``cookie`` is this email's device token."""
    return cookie is not None and hmac.compare_digest(cookie, device_token(key, email))


def sign_in(store: Store, email: str, password: str, client: str, *, known: bool = False) -> str:
    """A new session token. The attempt is counted (as a failure, until the password
    proves right) and committed *before* the password is checked, so concurrent
    guesses cannot get more checks than the throttle allows (docs/store.md); ``known``:
    the browser holds this account's device cookie."""
    with store.transaction() as s:
        accounts.begin_sign_in(email, client, session=s, known_device=known)
    with store.transaction() as s:
        return accounts.sign_in(email, password, session=s)
