"""The catalog and package pages, their charts and the files their figures link to.

The two pages are async: a request whose catalog is unchanged (``StoreCatalog.unchanged``)
and whose page is in the page cache is answered on the event loop, with no hop to a worker
thread; asking the store, loading a catalog and rendering a page run in a thread. Such a
request does not even reach the router: :class:`CachedPages`, the innermost middleware
(inside the secure headers, the session and the CSRF check, which all still run), answers
it with the kept bytes. Everything else (a miss, a changed catalog, an odd query) goes on
to the routes below.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable
from functools import lru_cache
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Query
from fastapi.responses import FileResponse, HTMLResponse, Response
from starlette.datastructures import QueryParams
from starlette.types import ASGIApp, Receive, Scope, Send

from servekit.catalog import Catalog, Entry, package_page, render_index, render_package
from servekit.catalog import Query as CatalogQuery
from servekit.catalog.chart import Panel, chart_of, render
from servekit.catalog.listing import MAX_SEARCH, PAGE_SIZE, Sort
from servekit.catalog.pages import compare_page, listing_of
from servekit.catalog.publish import CatalogSource
from servekit.catalog.site import render_compare, script
from servekit.errors import NotFoundError
from servekit.web.cache import PageCache
from servekit.web.deps import PagesDep, SourceDep, StoreDep
from servekit.web.keys import store_key_id
from servekit.web.links import LiveLinks
from servekit.web.storecatalog import StoreCatalog

router = APIRouter()
LINKS = LiveLinks()
MAX_PAGE = 1_000_000
_PAGE_NUMBER = re.compile(r"[1-9][0-9]{0,6}")  # what the route takes, in canonical form
SORTS = frozenset(s.value for s in Sort)
SCRIPT_BYTES = script()


def _index_key(query: CatalogQuery) -> Hashable:
    return ("index", query.q, query.gpu, query.engine, query.model, query.sort, query.page)


def _package_key(package_id: str, version: str) -> Hashable:
    return ("package", package_id, version)


def _cache_key(scope: Scope) -> Hashable | None:
    """The page cache's key for a request the page routes would answer, as they would
    parse it (a query value given twice: the last one, as FastAPI takes it); None when
    unsure, and the router decides."""
    if scope["method"] != "GET" or scope.get("root_path"):
        return None
    path, query = scope["path"], scope["query_string"]
    if len(path) + len(query) > MEMO_MAX:  # parsed each time: the memo stays small
        return _parse_key(path, query)
    return _key_of(path, query)


MEMO_MAX = 512
"""The longest path plus query (bytes) whose key is memoized: 4,096 of them hold about
2 MiB, whatever a client sends."""


def _parse_key(path: str, query_string: bytes) -> Hashable | None:
    """:func:`_cache_key` of a path and query, a pure function of the two."""
    if path == "/":
        params = QueryParams(query_string)
        page = params.get("page", "1")
        if not _PAGE_NUMBER.fullmatch(page) or int(page) > MAX_PAGE:
            return None
        q, gpu, engine, model, sort = (
            params.get(k, "") for k in ("q", "gpu", "engine", "model", "sort")
        )
        if len(q) > MAX_SEARCH or sort not in SORTS:
            return None
        return _index_key(
            CatalogQuery(q=q, gpu=gpu, engine=engine, model=model, sort=sort, page=int(page))
        )
    parts = path.split("/")
    if len(parts) == 4 and parts[1] == "packages" and parts[2] and parts[3]:
        return _package_key(parts[2], parts[3])
    return None


_key_of = lru_cache(maxsize=4096)(_parse_key)
""":func:`_parse_key`, kept for the next request for the same short path and query
(parsing the query and validating it was a third of the time the app spent on a cached
page)."""


class CachedPages:
    """Answers a catalog or package page from the page cache, before the router, when
    the store says nothing changed; anything else goes on to ``app``.

    ``anonymous=True`` is the copy in front of the whole stack (``SecuredApp.front``,
    inside the secure headers and the body limit only): it answers only a GET without a
    cookie, for which the layers it skips (HEAD as GET, the session cookie, the CSRF
    check, Starlette's error handler, the router) would change nothing, and passes on
    everything else, a failing look-up included, so the stack answers it as ever."""

    def __init__(self, app: ASGIApp, state: Any, *, anonymous: bool = False) -> None:
        self.app = app
        self.state = state  # the app's state: its catalog source and page cache
        self.anonymous = anonymous

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        page = self._kept(scope) if scope["type"] == "http" else None
        if page is not None:
            headers = [
                (b"content-length", str(len(page)).encode()),
                (b"content-type", b"text/html; charset=utf-8"),
            ]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": page})
            return
        await self.app(scope, receive, send)

    def _kept(self, scope: Scope) -> bytes | None:
        key = _cache_key(scope)
        source = self.state.catalog
        if key is None or not isinstance(source, StoreCatalog):
            return None
        if self.anonymous:
            if any(name == b"cookie" for name, _ in scope["headers"]):
                return None
            try:
                return self._lookup(source, key)
            except Exception:  # the stack behind answers it, with its error page
                return None
        return self._lookup(source, key)

    def _lookup(self, source: StoreCatalog, key: Hashable) -> bytes | None:
        catalog = source.unchanged()
        return None if catalog is None else self.state.pages.get(catalog, key)


def _catalog(source: CatalogSource) -> Catalog:
    return source.current()


async def _catalog_async(source: CatalogSource) -> Catalog:
    if isinstance(source, StoreCatalog):
        catalog = source.unchanged()
        if catalog is not None:
            return catalog
    return await anyio.to_thread.run_sync(source.current)


async def _page(
    cache: PageCache, catalog: Catalog, key: Hashable, render: Callable[[], str]
) -> HTMLResponse:
    page = cache.get(catalog, key)
    if page is None:
        page = (await anyio.to_thread.run_sync(render)).encode()
        cache.put(catalog, key, page)
    return HTMLResponse(page)


def _entry(catalog: Catalog, package_id: str, version: str) -> Entry:
    entry = catalog.get(package_id, version)
    if entry is None:
        raise NotFoundError(
            f"no published package {package_id} {version}",
            hint="the catalog page lists every published version",
        )
    return entry


@router.get("/", response_class=HTMLResponse)
async def catalog_page(
    source: SourceDep,
    pages: PagesDep,
    q: Annotated[str, Query(max_length=MAX_SEARCH)] = "",
    gpu: str = "",
    engine: str = "",
    model: str = "",
    sort: Sort = Sort.DEFAULT,
    page: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 1,
) -> HTMLResponse:
    """The catalog: one card per published package version, searched, filtered, sorted
    and paginated."""
    query = CatalogQuery(q=q, gpu=gpu, engine=engine, model=model, sort=sort, page=page)
    catalog = await _catalog_async(source)

    def render() -> str:
        return render_index(listing_of(catalog, query, PAGE_SIZE), LINKS, live=True)

    return await _page(pages, catalog, _index_key(query), render)


@router.get("/compare", response_class=HTMLResponse)
def compare(source: SourceDep, v: Annotated[list[str], Query()] = []) -> HTMLResponse:  # noqa: B006
    """Two or three package versions side by side (``v=ID@VERSION``, repeated)."""
    return HTMLResponse(render_compare(compare_page(_catalog(source), v), LINKS))


@router.get("/static/catalog.js", include_in_schema=False)
def catalog_script() -> Response:
    """The catalog page's one script: its filters apply on change."""
    return Response(SCRIPT_BYTES, media_type="text/javascript")


@router.get("/packages/{package_id}/{version}", response_class=HTMLResponse)
async def package_view(
    source: SourceDep, pages: PagesDep, store: StoreDep, package_id: str, version: str
) -> HTMLResponse:
    """Everything about one package version, from its definition."""
    catalog = await _catalog_async(source)
    entry = _entry(catalog, package_id, version)

    key_id = store_key_id(store)

    def render() -> str:
        page = package_page(catalog, entry).model_copy(update={"signing_key_id": key_id})
        return render_package(page, LINKS, live=True)

    return await _page(pages, catalog, _package_key(package_id, version), render)


@router.get("/packages/{package_id}/{version}/charts/{panel}.svg")
def chart(source: SourceDep, package_id: str, version: str, panel: Panel) -> Response:
    """One panel of the figures against concurrency, drawn by matplotlib."""
    card = _entry(_catalog(source), package_id, version).card
    drawn = chart_of(card.figures, card.concurrencies, panel)
    if drawn is None:
        raise NotFoundError(
            f"{package_id} {version} has no {panel.value} chart: no line joins two of its "
            "figures there",
            hint="the package page shows the charts it has, and every figure in its table",
        )
    return Response(render(drawn), media_type="image/svg+xml")


@router.get("/packages/{package_id}/{version}/files/{path:path}")
def package_file(source: SourceDep, package_id: str, version: str, path: str) -> FileResponse:
    """A raw evidence file, licence or build recipe the page links to (nothing else)."""
    entry = _entry(_catalog(source), package_id, version)
    if path not in entry.public_files():
        raise NotFoundError(
            f"{package_id} {version} links to no file {path}",
            hint="follow a link on the package page",
        )
    return FileResponse(entry.loaded.path(path), media_type="text/plain; charset=utf-8")
