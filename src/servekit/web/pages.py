"""Rendering the store's pages: their own templates, on the catalog's base template.

Every store page gets the same frame (:class:`Frame`): the navigation for whoever is
signed in, the form's CSRF token, and a TEST MODE banner when the sandbox payment
provider is in use. Error pages (404, 405, a refused request) are rendered in the same
frame, so a browser never meets a bare JSON body outside the API.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any
from urllib.parse import quote

from jinja2 import ChoiceLoader, Environment, PackageLoader, StrictUndefined, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse

from servekit.catalog.listing import Query
from servekit.catalog.site import PAGE_POLICY
from servekit.catalog.text import finalize
from servekit.store.checkout import MAINTENANCE_RULE, PLACEHOLDER_RULE, TEST_PROVIDERS
from servekit.web.links import LiveLinks
from servekit.web.sessions import CSRF_FIELD, csrf_token

SESSION_TOKEN = "store_token"
"""The session key under which the signed-in user's store session token is kept."""
NO_STORE = {"Cache-Control": "no-store"}


def dollars(cents: int | None) -> str:
    return "-" if cents is None else f"${cents // 100:,}.{cents % 100:02d}"


@cache
def environment() -> Environment:
    """Autoescaping on, undefined names are errors, direction and invisible characters
    escaped (:mod:`servekit.catalog.text`), as for the catalog pages."""
    env = Environment(
        loader=ChoiceLoader(
            [PackageLoader("servekit.web", "templates"), PackageLoader("servekit.catalog")]
        ),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        finalize=finalize,  # direction and invisible characters shown escaped
    )
    env.globals.update(
        Query=Query,
        page_policy=PAGE_POLICY,
        links=LiveLinks(),
        csrf_field=CSRF_FIELD,
        test_providers=TEST_PROVIDERS,
        maintenance_rule=MAINTENANCE_RULE,
        placeholder_rule=PLACEHOLDER_RULE,
    )
    env.filters["dollars"] = dollars
    return env


def render(template: str, **values: Any) -> str:
    return environment().get_template(template).render(**values)


@dataclass(frozen=True)
class Frame:
    """What every store page shows around its body."""

    csrf: str
    signed_in: bool
    test_mode: bool
    here: str  # this page's path, the ``next`` of its sign-in link

    @property
    def next_query(self) -> str:
        """``?next=HERE`` for the sign-in and sign-up links: back here afterwards (not from
        the sign-in and sign-up pages themselves, nor from the site's root)."""
        if self.here in ("/", "/signin", "/signup", "/signout", "/account"):
            return ""
        return "?next=" + quote(self.here, safe="/")


def test_mode(request: Request) -> bool:
    """True when payments go to the sandbox provider: nothing real is charged."""
    return str(getattr(request.app.state.provider, "name", "")) in TEST_PROVIDERS


def frame(request: Request) -> Frame:
    here = request.url.path if request.method in ("GET", "HEAD") else "/account"
    return Frame(
        csrf=csrf_token(request),
        signed_in=isinstance(request.session.get(SESSION_TOKEN), str),
        test_mode=test_mode(request),
        here=here,
    )


def page(request: Request, template: str, status: int = 200, **values: Any) -> HTMLResponse:
    """A store page, never cached (it carries the session's CSRF token)."""
    values.setdefault("error", None)
    body = render(template, frame=frame(request), csrf=csrf_token(request), **values)
    return HTMLResponse(body, status_code=status, headers=NO_STORE)


def error_page(
    request: Request,
    status: int,
    message: str,
    hint: str = "",
    headers: dict[str, str] | None = None,
) -> HTMLResponse:
    """An error in the site's own frame: the status, what went wrong, what to do."""
    response = page(request, "store/error.html", status, code=status, message=message, hint=hint)
    response.headers.update(headers or {})
    return response
