"""Session cookies are Secure/HttpOnly/SameSite, and unsafe requests need the CSRF token.

No store form exists yet, so the test adds two routes to the real app (with its real
middleware stack): a page that hands out the token and a POST that echoes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from fastapi import Request
from fastapi.responses import PlainTextResponse

from servekit.config import Settings
from servekit.web.app import create_app
from servekit.web.sessions import SESSION_COOKIE, SESSION_KEY_FILE, csrf_token


def _app(home: Path) -> httpx.AsyncClient:
    app = create_app(Settings(home=home))

    @app.get("/test/form")
    def form(request: Request) -> PlainTextResponse:
        return PlainTextResponse(csrf_token(request))

    @app.post("/test/echo")
    async def echo(request: Request) -> PlainTextResponse:
        form = await request.form()
        return PlainTextResponse(f"got {form.get('item')}")

    transport = httpx.ASGITransport(app=app)
    return httpx.AsyncClient(transport=transport, base_url="https://catalog.test")


async def _journey(home: Path) -> None:
    async with _app(home) as client:
        # no session yet: refused before the route runs
        refused = await client.post("/test/echo", data={"item": "x", "csrf_token": "guess"})
        assert refused.status_code == 403 and "CSRF" in refused.text

        page = await client.get("/test/form")
        token = page.text
        cookie = page.headers["set-cookie"]
        assert cookie.startswith(f"{SESSION_COOKIE}=")
        for attribute in ("httponly", "secure", "samesite=lax", "path=/"):
            assert attribute in cookie.lower(), attribute

        for _ in range(2):  # a page from the router, then the same page from the cache
            catalog = await client.get("/")
            assert catalog.status_code == 200 and "content-security-policy" in catalog.headers
            assert "set-cookie" not in catalog.headers  # the page leaves the session as it is

        ok = await client.post("/test/echo", data={"item": "book", "csrf_token": token})
        assert (ok.status_code, ok.text) == (200, "got book")  # the body reached the route
        header = await client.post(
            "/test/echo", data={"item": "b"}, headers={"X-CSRF-Token": token}
        )
        assert header.status_code == 200
        wrong = await client.post("/test/echo", data={"item": "b", "csrf_token": token + "x"})
        assert wrong.status_code == 403
        assert "content-security-policy" in wrong.headers

    async with _app(home) as other_worker:  # same HOME: same key, another session
        stolen = await other_worker.post("/test/echo", data={"item": "b", "csrf_token": token})
        assert stolen.status_code == 403


def test_session_cookie_and_csrf(tmp_path: Path) -> None:
    asyncio.run(_journey(tmp_path))
    key = tmp_path / SESSION_KEY_FILE
    assert key.stat().st_mode & 0o077 == 0


@pytest.mark.parametrize("method", ["PUT", "PATCH", "DELETE"])
def test_every_unsafe_method_is_checked(tmp_path: Path, method: str) -> None:
    async def go() -> int:
        async with _app(tmp_path) as client:
            return (await client.request(method, "/")).status_code

    assert asyncio.run(go()) == 403
