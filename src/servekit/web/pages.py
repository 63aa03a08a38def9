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
from servekit.web.api.problems import Problem
from servekit.web.contexts import ErrorPage, PageContext
from servekit.web.deps import SESSION_TOKEN, services
from servekit.web.links import LiveLinks
from servekit.web.sessions import CSRF_FIELD, csrf_token

__all__ = ["NO_STORE", "SESSION_TOKEN", "Frame", "environment", "error_page", "page", "render"]
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


def render_page(context: PageContext, frame: Frame | None = None) -> str:
    """``context``'s template with its fields (and, on the store's frame, ``frame``)."""
    framed = {} if frame is None else {"frame": frame}
    return render(context.template, **framed, **context.values())


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
    provider = services(request).provider
    return str(getattr(provider, "name", "")) in TEST_PROVIDERS


def frame(request: Request) -> Frame:
    here = request.url.path if request.method in ("GET", "HEAD") else "/account"
    return Frame(
        csrf=csrf_token(request),
        signed_in=isinstance(request.session.get(SESSION_TOKEN), str),
        test_mode=test_mode(request),
        here=here,
    )


def page(request: Request, context: PageContext, status: int = 200) -> HTMLResponse:
    """A store page, never cached (it carries the session's CSRF token)."""
    body = render_page(context, frame(request))
    return HTMLResponse(body, status_code=status, headers=NO_STORE)


def error_page(
    request: Request, found: Problem, headers: dict[str, str] | None = None
) -> HTMLResponse:
    """An error in the site's own frame, from the same :class:`Problem` (status, detail,
    hint) that the API would answer with."""
    context = ErrorPage(code=found.status, message=found.detail, hint=found.hint or "")
    response = page(request, context, found.status)
    response.headers.update(headers or {})
    return response
