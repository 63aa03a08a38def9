"""A small app serving the JSON API and the store's keys (tests and ``servekit store serve``)."""

from __future__ import annotations

from fastapi import FastAPI

from servekit import __version__
from servekit.config import Settings
from servekit.store.db import open_store
from servekit.store.providers import provider_from_settings, webhook_secret
from servekit.web.api.context import ApiContext
from servekit.web.api.problems import internal_error
from servekit.web.api.routes import router
from servekit.web.deps import install
from servekit.web.security import SecuredApp


def create_api_app(ctx: ApiContext) -> FastAPI:
    """An app with the ``/api/v1`` router and its OpenAPI document at ``/api/v1/openapi.json``."""
    app = SecuredApp(
        title="servekit store API",
        version=__version__,
        openapi_url="/api/v1/openapi.json",
        docs_url=None,  # Swagger UI loads scripts from a CDN, which the CSP refuses
        redoc_url=None,
    )
    install(app, ctx)
    app.add_exception_handler(Exception, lambda _request, _exc: internal_error())
    app.include_router(router)
    # the store's signing keys too: `servekit store download` tells the buyer to
    # `servekit trust fetch` from the same address
    from servekit.web.routes import keys

    app.include_router(keys.router, include_in_schema=False)
    app.include_router(keys.api)
    return app


def context_from_settings(settings: Settings) -> ApiContext:
    """Open (and migrate) the store and the provider the settings name."""
    return ApiContext(
        store=open_store(settings),
        provider=provider_from_settings(settings),
        webhook_secret=webhook_secret(settings),
    )
