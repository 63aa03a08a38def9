"""HEAD on every GET route: the GET's status and headers, without its body (RFC 9110 9.3.2).

FastAPI routes declared with ``@router.get`` answer HEAD with 405. This middleware, the
outermost, runs a HEAD request as a GET and drops the body on the way out, so every page,
file and API resource answers HEAD the same way its GET would, ``Content-Length``
included. The GET it runs carries :data:`HEAD_SCOPE_KEY`, so a route with an effect (a
download is logged) can tell a HEAD from a GET (:data:`servekit.web.deps.HeadDep`).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

HEAD_SCOPE_KEY = "servekit.head"
"""Set in the scope of a GET that answers a HEAD."""


class HeadAsGet:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def headers_only(message: Message) -> None:
            if message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return  # the body's later parts are dropped too; the last one ends it
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        await self.app({**scope, "method": "GET", HEAD_SCOPE_KEY: True}, receive, headers_only)
