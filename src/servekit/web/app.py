"""The web app factory: ``uvicorn --factory servekit.web.app:create_app``.

Each worker builds its own app from the settings; the published catalog lives under
``SERVEKIT_HOME`` (shared by every worker), never only in one process. The routes read it
through a :class:`~servekit.catalog.publish.CatalogSource` (``app.state.catalog``), the
seam where the store plugs in.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, Response
from markupsafe import escape
from starlette.middleware.sessions import SessionMiddleware

from servekit.catalog.publish import CatalogSource, PublishedCatalog
from servekit.catalog.site import stylesheet
from servekit.config import Settings, load_settings
from servekit.errors import Error, NotFoundError
from servekit.web.cache import PageCache
from servekit.web.routes import catalog
from servekit.web.security import SecureHeaders
from servekit.web.sessions import SESSION_COOKIE, CSRFProtect, session_key


def _error_page(request: Request, exc: Exception) -> Response:
    """The one place the web app renders a servekit error."""
    assert isinstance(exc, Error)
    status = 404 if isinstance(exc, NotFoundError) else 400
    body = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>error</title>'
        '<link rel="stylesheet" href="/static/catalog.css"></head><body><main>'
        f"<h1>{status}</h1><p>{escape(exc.message)}</p>"
        f'<p class="muted">{escape(exc.hint or "")}</p><p><a href="/">catalog</a></p>'
        "</main></body></html>"
    )
    return HTMLResponse(body, status_code=status)


def create_app(settings: Settings | None = None, source: CatalogSource | None = None) -> FastAPI:
    """A new app serving ``source`` (default: the catalog published under ``settings.home``)."""
    settings = settings or load_settings()
    app = FastAPI(title="servekit", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.settings = settings
    app.state.catalog = source or PublishedCatalog(settings.home)
    app.state.pages = PageCache()
    css = stylesheet()

    @app.get("/static/catalog.css", include_in_schema=False)
    def _stylesheet() -> Response:
        return Response(css, media_type="text/css")

    @app.get("/favicon.ico", include_in_schema=False)
    def _favicon() -> Response:
        return Response(status_code=204)  # no icon; answering keeps browser consoles clean

    @app.get("/healthz", include_in_schema=False)
    def _health() -> dict[str, str]:
        return {"status": "ok"}

    app.include_router(catalog.router)
    app.add_exception_handler(Error, _error_page)
    # outermost last: secure headers, then the session cookie, then the CSRF check
    app.add_middleware(CSRFProtect)
    app.add_middleware(
        SessionMiddleware,
        secret_key=session_key(settings.home),
        session_cookie=SESSION_COOKIE,
        same_site="lax",
        https_only=True,
    )
    app.add_middleware(SecureHeaders)
    return app
