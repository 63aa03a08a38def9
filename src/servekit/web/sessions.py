"""Session cookies and CSRF protection, ready for the store's forms.

* The session is a signed cookie (Starlette's ``SessionMiddleware``): ``HttpOnly``,
  ``Secure``, ``SameSite=Lax``. Its key is ``HOME/session.key`` (made on the first start,
  mode 0600) so every worker, and every host sharing HOME, accepts every other's cookie.
* Every unsafe request (POST, PUT, PATCH, DELETE) must carry the session's CSRF token, in
  the form field ``csrf_token`` or the ``X-CSRF-Token`` header; otherwise it is answered
  403 before any route runs. Forms get the token from :func:`csrf_token`.

Pages that embed a token are per-session and must not go through the page cache.
"""

from __future__ import annotations

import hmac
import os
import secrets
from pathlib import Path
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from servekit.errors import ServeError

SESSION_COOKIE = "servekit_session"
SESSION_KEY_FILE = "session.key"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"
MAX_FORM_BYTES = 1 << 20
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})


def session_key(home: Path) -> str:
    """The shared session signing key, created on first use (mode 0600)."""
    path = home / SESSION_KEY_FILE
    try:
        home.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text(encoding="ascii").strip()
    except OSError as exc:
        raise ServeError(
            f"cannot create {path}: {exc.strerror}", hint="make SERVEKIT_HOME writable"
        ) from exc
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write(secrets.token_urlsafe(48) + "\n")
    return path.read_text(encoding="ascii").strip()


def csrf_token(request: Request) -> str:
    """The session's CSRF token (made on first use), for a form's hidden field."""
    token = request.session.get(CSRF_FIELD)
    if not isinstance(token, str):
        token = secrets.token_urlsafe(32)
        request.session[CSRF_FIELD] = token
    return token


async def _read_body(receive: Receive) -> tuple[bytes, bool]:
    body, more = b"", True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
        if len(body) > MAX_FORM_BYTES:
            return body, False
    return body, True


def _submitted(scope: Scope, body: bytes) -> str | None:
    headers = dict(scope["headers"])
    if CSRF_HEADER.encode() in headers:
        return str(headers[CSRF_HEADER.encode()].decode("latin-1"))
    content_type = headers.get(b"content-type", b"").split(b";")[0].strip()
    if content_type == b"application/x-www-form-urlencoded":
        values: list[str] | None = parse_qs(body.decode("utf-8", "replace")).get(CSRF_FIELD)
        return values[0] if values else None
    return None  # multipart and JSON forms send the header


class CSRFProtect:
    """Refuses an unsafe request whose CSRF token is missing or not the session's."""

    def __init__(self, app: ASGIApp, exempt: tuple[str, ...] = ()) -> None:
        self.app = app
        self.exempt = exempt  # path prefixes authenticated by bearer tokens, not the cookie

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] in SAFE_METHODS
            or scope["path"].startswith(self.exempt)
        ):
            await self.app(scope, receive, send)
            return
        body, complete = await _read_body(receive)
        expected = scope.get("session", {}).get(CSRF_FIELD)
        submitted = _submitted(scope, body) if complete else None
        if not (
            isinstance(expected, str)
            and submitted
            and hmac.compare_digest(expected.encode(), submitted.encode())
        ):
            response = PlainTextResponse(
                "403: the form's CSRF token is missing or stale; reload the page and try again",
                status_code=403,
            )
            await response(scope, receive, send)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)
