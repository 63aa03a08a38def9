"""The web app factory: ``uvicorn --factory servekit.web.app:create_app``.

Each worker builds its own app from the settings and opens the store they name (SQLite
under ``SERVEKIT_HOME``, or ``SERVEKIT_DATABASE_URL``); workers share state only through
the database and the home, never process memory. The pages read the catalog through a
:class:`~servekit.catalog.publish.CatalogSource` (``app.state.catalog``): the store's
(:class:`~servekit.web.storecatalog.StoreCatalog`) unless a test passes another. The
store's JSON API is mounted under ``/api/v1`` with its OpenAPI document at
``/api/v1/openapi.json``; it authenticates with bearer tokens, never the session cookie,
so the CSRF check leaves it alone.
"""

from __future__ import annotations

import datetime as dt
import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from functools import partial
from urllib.parse import quote

import anyio
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from markupsafe import escape
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.sessions import SessionMiddleware

from servekit import __version__
from servekit.catalog.publish import CatalogSource
from servekit.catalog.site import stylesheet
from servekit.catalog.text import inert
from servekit.config import PasswordHashing, Settings, load_settings
from servekit.errors import AuthenticationError, Error
from servekit.web.api.app import context_from_settings
from servekit.web.api.problems import (
    TYPE_PREFIX,
    Problem,
    internal_error,
    problem,
    problem_of,
    retry_headers,
)
from servekit.web.api.routes import PREFIX
from servekit.web.api.routes import router as api_router
from servekit.web.cache import PageCache
from servekit.web.deps import StoreDep, install
from servekit.web.feed import current_feed
from servekit.web.methods import HeadAsGet
from servekit.web.pages import error_page
from servekit.web.routes import catalog, keys, store
from servekit.web.security import SecuredApp
from servekit.web.sessions import SESSION_COOKIE, CSRFProtect, session_key
from servekit.web.storecatalog import StoreCatalog


def _error_page(request: Request, exc: Exception) -> Response:
    """The one place the web app renders a servekit error as HTML: the same
    :class:`~servekit.web.api.problems.Problem`, status included, that the API answers."""
    assert isinstance(exc, Error)
    if isinstance(exc, AuthenticationError) and request.method in ("GET", "HEAD"):
        return RedirectResponse("/signin?next=" + quote(request.url.path), status_code=303)
    found = problem_of(exc)
    return error_page(request, found, retry_headers(found))


HTTP_MESSAGES = {
    404: ("There is no page at this address.", "Check the address, or start from the catalog."),
    405: ("This address does not answer that method.", "Follow a link or a form on the site."),
}


def _http_error(request: Request, exc: Exception) -> Response:
    """404 and 405 from the router: problem+json under the API, a page in the site's style
    everywhere else."""
    assert isinstance(exc, StarletteHTTPException)
    headers = dict(exc.headers or {})
    if request.url.path.startswith(PREFIX + "/") or request.url.path == PREFIX:
        body = problem(
            exc.status_code,
            f"{TYPE_PREFIX}http-{exc.status_code}",
            str(exc.detail),
            f"{request.method} {request.url.path}: {exc.detail}",
        )
        body.headers.update(headers)
        return body
    message, hint = HTTP_MESSAGES.get(exc.status_code, (str(exc.detail), ""))
    found = Problem(
        type=f"{TYPE_PREFIX}http-{exc.status_code}",
        title=str(exc.detail),
        status=exc.status_code,
        detail=message,
        hint=hint,
    )
    return error_page(request, found, headers)


def _invalid_form(request: Request, exc: Exception) -> Response:
    """A page's form or query that FastAPI could not parse (a field missing, a number that
    is not one): the API's routes answer these themselves, as problem+json."""
    assert isinstance(exc, RequestValidationError)
    found = "; ".join(
        f"{'.'.join(str(part) for part in e['loc'][1:]) or 'request'}: {e['msg']}"
        for e in exc.errors()
    )
    invalid = Problem(
        type=TYPE_PREFIX + "invalid-request",
        title="The request is not valid",
        status=422,
        detail=f"the form or address is not valid: {found}",
        hint="correct it and retry",
    )
    return error_page(request, invalid)


def _crash_page(request: Request, exc: Exception) -> Response:
    """A bug's 500: problem+json under the API, a plain page elsewhere (never the trace, and
    no template: the site's frame may be what failed)."""
    if request.url.path.startswith(PREFIX + "/"):
        return internal_error()
    body = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>error</title>'
        '<link rel="stylesheet" href="/static/catalog.css"></head><body><main>'
        f"<h1>500</h1><p>{escape(inert('the server failed to answer this request'))}</p>"
        '<p class="muted">try again later</p><p><a href="/">catalog</a></p>'
        "</main></body></html>"
    )
    return HTMLResponse(body, status_code=500, headers={"Cache-Control": "no-store"})


@asynccontextmanager
async def _settle(app: FastAPI) -> AsyncIterator[None]:
    """Before the first request: load the catalog, then freeze what start-up made.

    Loading 1 000 package definitions leaves millions of long-lived objects; each full
    collection walked all of them, stalling the worker 0.3 to 0.6 s on a loaded 2-core
    machine (docs/performance.md). ``gc.freeze`` moves them out of the collector's sight
    (reference counting still frees them). A catalog the store cannot give yet is left to
    the first request, which renders the error.
    """
    source: CatalogSource = app.state.catalog
    with suppress(Error):
        await anyio.to_thread.run_sync(source.current)
    gc.collect()
    gc.freeze()
    yield


def create_app(settings: Settings | None = None, source: CatalogSource | None = None) -> FastAPI:
    """A new app serving ``source`` (default: what the settings' store has published)."""
    settings = settings or load_settings()
    if load_settings().password_hashing is PasswordHashing.CHEAPEST_FOR_TESTS:
        logging.getLogger("servekit.web").warning(
            "SERVEKIT_PASSWORD_HASHING=cheapest-for-tests: passwords are hashed at argon2's "
            "cheapest cost, for test suites only; unset it before anyone creates a real account"
        )
    app = SecuredApp(
        title="servekit store API",
        version=__version__,
        docs_url=None,  # the interactive docs load scripts from a CDN; the CSP refuses them
        redoc_url=None,
        openapi_url=f"{PREFIX}/openapi.json",
        lifespan=_settle,
        # FastAPI's OpenTelemetry bridge asked the global providers on every request
        # whether one was configured: a third of a cached page's time in the app
        # (docs/performance.md); servekit exports no telemetry
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    ctx = context_from_settings(settings)
    app.state.settings = settings
    install(app, ctx)
    app.state.catalog = source or StoreCatalog(ctx.store)
    app.state.pages = PageCache()
    css = stylesheet()

    @app.get("/static/catalog.css", include_in_schema=False)
    def _stylesheet() -> Response:
        return Response(css, media_type="text/css")

    @app.get("/favicon.ico", include_in_schema=False)
    def _favicon() -> Response:
        return Response(status_code=204)  # no icon; answering keeps browser consoles clean

    @app.get("/feed.json", include_in_schema=False)
    def _feed(store: StoreDep, publisher: str | None = None) -> Response:
        """A publisher's signed revocation feed (``servekit verify kit --feed``)."""
        body = current_feed(store, dt.datetime.now(dt.UTC), publisher=publisher)
        return Response(body, media_type="application/json", headers={"Cache-Control": "no-cache"})

    @app.get("/healthz", include_in_schema=False)
    def _health() -> dict[str, str]:
        return {"status": "ok"}

    app.include_router(catalog.router, include_in_schema=False)
    app.include_router(store.router, include_in_schema=False)
    app.include_router(keys.router, include_in_schema=False)
    app.include_router(keys.api)
    app.include_router(api_router)
    app.add_exception_handler(Error, _error_page)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _invalid_form)
    app.add_exception_handler(Exception, _crash_page)
    # outermost last: the session cookie, the CSRF check, cached pages, HEAD as GET (the
    # secure headers and the body limit wrap all of it, Starlette's error handler included:
    # SecuredApp)
    app.add_middleware(catalog.CachedPages, state=app.state)
    app.add_middleware(CSRFProtect, exempt=(PREFIX + "/",))
    app.state.device_key = session_key(settings.home)  # sign-in device cookies (signin.py)
    app.add_middleware(
        SessionMiddleware,
        secret_key=app.state.device_key,
        session_cookie=SESSION_COOKIE,
        same_site="lax",
        https_only=True,
    )
    app.add_middleware(HeadAsGet)
    app.front = partial(catalog.CachedPages, state=app.state, anonymous=True)
    return app
