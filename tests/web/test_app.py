"""The app serves whatever catalog source it is given: the seam where the store plugs in."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import httpx

from servekit.catalog import Catalog, load_catalog
from servekit.config import Settings
from servekit.web.app import create_app
from tests.web.conftest import EXAMPLES


@dataclass
class OneCatalog:
    catalog: Catalog

    def current(self) -> Catalog:
        return self.catalog


def test_serves_the_given_source(tmp_path: Path) -> None:
    only_k3 = Catalog([e for e in load_catalog(EXAMPLES).entries if e.card.gpu == "B300"])
    app = create_app(Settings(home=tmp_path), source=OneCatalog(only_k3))

    async def get(path: str) -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.get(path)

    index = asyncio.run(get("/"))
    assert 'data-package="kimi-k3-8xb300"' in index.text
    assert 'data-package="llama-850m-h200"' not in index.text
    assert asyncio.run(get("/packages/llama-850m-h200/1.0.0")).status_code == 404
    assert not (tmp_path / "published").exists()  # the home's catalog was never read


class BrokenCatalog:
    def current(self) -> Catalog:
        raise RuntimeError("a bug in a catalog source")


def test_a_server_error_is_a_plain_page_with_the_security_headers(tmp_path: Path) -> None:
    app = create_app(Settings(home=tmp_path), source=BrokenCatalog())

    async def get(path: str) -> httpx.Response:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.get(path)

    page = asyncio.run(get("/"))
    assert page.status_code == 500 and page.headers["content-type"].startswith("text/html")
    assert "the server failed to answer this request" in page.text
    assert "a bug in a catalog source" not in page.text  # never the trace
    assert page.headers["x-frame-options"] == "DENY"
    assert "default-src 'none'" in page.headers["content-security-policy"]
