"""Secure response headers on every response: CSP without inline scripts, and friends.

A pure ASGI middleware (no request body buffering): it adds the headers to the response
start message. Scripts, styles and images come from this origin only (the one script is
the catalog page's filter file), nothing inline, and no page may frame this one.
"""

from __future__ import annotations

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
