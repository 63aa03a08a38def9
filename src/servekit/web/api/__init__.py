"""The store's JSON API under ``/api/v1``: a module-level ``APIRouter`` and a small app factory.

The HTML app mounts :data:`router` (its routes reach the store through
:mod:`servekit.web.deps`); :func:`create_api_app` serves it alone (tests and
``servekit store serve``). Errors are ``application/problem+json`` (RFC 9457) with a stable
``type`` per error class.
"""

from servekit.web.api.app import create_api_app
from servekit.web.api.context import ApiContext
from servekit.web.api.routes import router

__all__ = ["ApiContext", "create_api_app", "router"]
