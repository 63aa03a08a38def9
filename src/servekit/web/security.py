"""Secure response headers on every response, and a limit on every request body.

:class:`SecureHeaders` is a pure ASGI middleware (no request body buffering): it adds the
headers to the response start message. Scripts, styles and images come from this origin
only (the one script is the catalog page's filter file), nothing inline, and no page may
frame this one. :func:`secured` wraps an app's whole middleware stack in it, Starlette's
error handler included, so a 500 carries the headers too. :class:`BodyLimit` answers 413
to a body over the limit before it is read whole.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from fastapi import FastAPI
from starlette.exceptions import HTTPException
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from servekit.catalog.site import PAGE_POLICY

# frame-ancestors only works as a header, so it is added here and not in the <meta> tag
CONTENT_SECURITY_POLICY = PAGE_POLICY + "; frame-ancestors 'none'"

HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"permissions-policy", b"camera=(), microphone=(), geolocation=(), payment=()"),
)


class SecureHeaders:
    """Adds :data:`HEADERS` to every HTTP response (and HSTS when served over HTTPS)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        https = scope.get("scheme") == "https"

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += HEADERS
                if https:
                    headers.append((b"strict-transport-security", b"max-age=31536000"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


MAX_BODY_BYTES = 1 << 20  # the largest form or JSON body any route takes is a few KiB
TOO_LARGE = (
    f"413: the request body is larger than {MAX_BODY_BYTES} bytes, the most this server "
    "accepts; send less"
)


NOT_A_PATH = "404: no page has a control character in its path"
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class BodyTooLarge(HTTPException):
    """Raised from ``receive`` when a body without a length grows past the limit."""

    def __init__(self) -> None:
        super().__init__(status_code=413, detail=TOO_LARGE)


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            return int(value) if value.isdigit() else MAX_BODY_BYTES + 1
    return None


class BodyLimit:
    """Refuses a request body over :data:`MAX_BODY_BYTES` with 413: one that declares a
    larger ``Content-Length`` before a byte of it is read, a chunked one as soon as it
    grows past the limit (nothing downstream ever holds more than the limit). A path
    holding a control character (``/w/%00``) is answered 404 before any route looks it
    up: PostgreSQL refuses NUL in a query, and no name the store keeps has one."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if _CONTROLS.search(scope["path"]):  # no route names a control character
            await PlainTextResponse(NOT_A_PATH, status_code=404)(scope, receive, send)
            return
        declared = _declared_length(scope)
        if declared is not None and declared > self.limit:
            await _refuse(scope, receive, send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:
                raise BodyTooLarge
            return message

        try:  # every reader of a body here reads it whole before it answers
            await self.app(scope, counted, send)
        except BodyTooLarge:  # one outside FastAPI's routes (the CSRF check) read too much
            await _refuse(scope, receive, send)


async def _refuse(scope: Scope, receive: Receive, send: Send) -> None:
    response = PlainTextResponse(TOO_LARGE, status_code=413, headers={"Connection": "close"})
    await response(scope, receive, send)


class SecuredApp(FastAPI):
    """A FastAPI app whose outermost layers are :class:`SecureHeaders` and
    :class:`BodyLimit`: outside Starlette's own error handler, so every response carries
    the headers (a 500 included) and no route, middleware or handler sees a body over
    the limit. ``front`` (set before the first request) wraps the rest of the stack just
    inside them: a layer that answers some requests without the others."""

    front: Callable[[ASGIApp], ASGIApp] | None = None

    def build_middleware_stack(self) -> ASGIApp:
        stack = super().build_middleware_stack()
        return SecureHeaders(BodyLimit(self.front(stack) if self.front else stack))
