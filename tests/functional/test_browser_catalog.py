"""Searching, sorting and comparing in a real browser, at desktop and phone sizes.

Playwright drives Debian's Chromium against a real server: filters apply on change with
the page's script and through the Filter button without it; the compare page is reached
from the catalog's checkboxes; no catalog, package or compare page scrolls sideways at
390 px. Screenshots go to ``SERVEKIT_TEST_ARTIFACTS`` (``browser-catalog/``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from servekit.catalog.pages import package_dirs
from tests.functional.helpers import CHROMIUM, EXAMPLES, needs_chromium, screenshot_dir
from tests.web.server import serving, store_publish

pytestmark = needs_chromium

sync_api = pytest.importorskip("playwright.sync_api")

SIZES = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
PAGES = (
    "/",
    "/?q=llama&sort=latency",
    "/packages/llama-850m-h200/1.0.0",
    "/packages/kimi-k3-8xb300/1.0.0",
    "/compare?v=kimi-k3-8xb300@1.0.0&v=llama-850m-h200@1.0.0&v=tiny-sim@0.1.0",
)


@pytest.fixture(scope="module")
def shots() -> Path:
    return screenshot_dir("browser-catalog")


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, object]]:
    home = tmp_path_factory.mktemp("home")
    store_publish(package_dirs(EXAMPLES), home)
    with serving(home) as url, sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM))
        yield url, chromium
        chromium.close()


def _tab(browser: tuple[str, object], size: str, *, javascript: bool = True) -> object:
    url, chromium = browser
    assert isinstance(chromium, sync_api.Browser)
    context = chromium.new_context(
        base_url=url, viewport=SIZES[size], java_script_enabled=javascript
    )
    tab = context.new_page()
    errors: list[str] = []
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.errors = errors  # type: ignore[attr-defined]
    return tab


@pytest.mark.parametrize("size", list(SIZES))
def test_no_page_scrolls_sideways(browser: tuple[str, object], size: str, shots: Path) -> None:
    tab = _tab(browser, size)
    assert isinstance(tab, sync_api.Page)
    for number, path in enumerate(PAGES, 1):
        tab.goto(path)
        tab.wait_for_load_state("load")
        width = tab.evaluate("document.documentElement.scrollWidth")
        assert width <= tab.evaluate("window.innerWidth"), f"{path} is {width} px wide"
        tab.screenshot(path=shots / f"{size}-{number:02}.png")  # the first screen: cheap
    assert tab.errors == []  # type: ignore[attr-defined]


def test_filters_apply_on_change_with_the_script(browser: tuple[str, object], shots: Path) -> None:
    """Also writes ``catalog-b300.png``, the README's docs/img/catalog.png."""
    tab = _tab(browser, "desktop")
    assert isinstance(tab, sync_api.Page)
    tab.goto("/")
    with tab.expect_navigation():
        tab.select_option("select[name=gpu]", "B300")  # no button pressed
    assert "gpu=B300" in tab.url
    sync_api.expect(tab.locator("article.card")).to_have_count(1)
    tab.screenshot(path=shots / "catalog-b300.png", full_page=True)
    tab.get_by_role("link", name="clear filters").click()
    sync_api.expect(tab.locator("article.card")).to_have_count(6)
    with tab.expect_navigation():
        tab.select_option("select[name=sort]", "throughput")
    assert "sort=throughput" in tab.url
    sync_api.expect(tab.locator("article.card").first).to_have_attribute(
        "data-package", "llama-850m-h200"
    )
    assert tab.errors == []  # type: ignore[attr-defined]


def test_search_and_compare_without_javascript(browser: tuple[str, object], shots: Path) -> None:
    tab = _tab(browser, "phone", javascript=False)
    assert isinstance(tab, sync_api.Page)
    tab.goto("/")
    tab.fill("input[name=q]", "H200")
    tab.get_by_role("button", name="Filter").click()
    sync_api.expect(tab.locator("article.card")).to_have_count(4)  # two of them servekit tune's
    tab.check('input[name=v][value="llama-850m-h200@1.0.0"]')
    tab.check('input[name=v][value="smollm2-135m-vllm-h200@1.0.0"]')
    tab.get_by_role("button", name="Compare selected").click()
    assert "/compare?" in tab.url
    sync_api.expect(tab.locator("#compare-table thead th a")).to_have_count(2)
    tab.wait_for_load_state("load")  # the stylesheet applied: widths are final
    width = tab.evaluate("document.documentElement.scrollWidth")
    assert width <= tab.evaluate("window.innerWidth"), f"{tab.url} is {width} px wide"
    tab.screenshot(path=shots / "phone-compare-nojs.png", full_page=True)
