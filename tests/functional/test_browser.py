"""The catalog in a real browser: Playwright driving Debian's Chromium.

Browse the catalog, filter it, open a package, follow a figure to its raw records. Each
page is screenshotted into ``SERVEKIT_TEST_ARTIFACTS`` (default ``out/test-artifacts``),
``browser/NN-name.png``, for a reviewer to look at. Any console error (a CSP violation
included) fails the test.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from servekit.catalog.pages import package_dirs
from servekit.catalog.publish import PublishedCatalog, publish
from tests.functional.helpers import CHROMIUM, EXAMPLES, needs_chromium, screenshot_dir
from tests.web.server import serving, store_publish

pytestmark = needs_chromium

sync_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def shots() -> Path:
    return screenshot_dir("browser")


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    home = tmp_path_factory.mktemp("home")
    store_publish(package_dirs(EXAMPLES), home)
    with serving(home) as url, sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM))
        context = browser.new_context(base_url=url, viewport={"width": 1280, "height": 900})
        tab = context.new_page()
        errors: list[str] = []
        tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        tab.on("pageerror", lambda e: errors.append(str(e)))
        tab.on(
            "response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 else None
        )
        yield tab
        browser.close()
        assert errors == [], errors


def test_browse_filter_open_and_follow_the_evidence(page: object, shots: Path) -> None:
    tab = page
    assert isinstance(tab, sync_api.Page)
    expect = sync_api.expect

    # 1. the catalog: every example package has a card
    tab.goto("/")
    expect(tab.locator("article.card")).to_have_count(len(package_dirs(EXAMPLES)))
    tab.screenshot(path=shots / "01-catalog.png", full_page=True)

    # 2. filter by GPU: only the K3 card stays, with its reported latency at concurrency 8
    tab.select_option("select[name=gpu]", "B300")
    tab.get_by_role("button", name="Filter").click()
    expect(tab.locator("article.card")).to_have_count(1)
    assert "gpu=B300" in tab.url
    card = tab.locator("article.card")
    p50 = card.locator('[data-figure="e2el-p50-c8"]')
    expect(p50).to_contain_text("18695 ms")
    expect(p50).to_contain_text("concurrency 8")
    expect(p50.locator(".badge")).to_have_text("reported")
    tab.screenshot(path=shots / "02-catalog-filtered.png", full_page=True)

    # 3. open the package: every figure is at one concurrency, so no chart, the table alone
    card.get_by_role("link", name="Kimi K3 on 8x B300 (vLLM source build)").click()
    expect(tab.locator("h1")).to_contain_text("Kimi K3")
    expect(tab.locator("#no-chart")).to_be_visible()
    expect(tab.locator("img.chart")).to_have_count(0)
    expect(tab.locator("#verify + p + pre")).to_contain_text("servekit verify kit")
    tab.screenshot(path=shots / "03-package-k3.png", full_page=True)

    # 4. a measured package: a figure links to the raw records it was recomputed from
    tab.goto("/packages/llama-850m-h200/1.0.0")
    charts = tab.locator("img.chart")
    expect(charts).to_have_count(3)  # latency, per-token times, throughput: one axis each
    for index in range(3):
        assert charts.nth(index).evaluate("i => i.decode().then(() => i.naturalWidth)") > 0
    tab.screenshot(path=shots / "04-package-llama.png", full_page=True)
    link = tab.locator("#figure-table a", has_text="raw records").first
    link.click()
    assert "/files/evidence/" in tab.url
    expect(tab.locator("body")).to_contain_text('"concurrency"')
    assert len(list(shots.glob("0*.png"))) >= 4


def test_hostile_package_text_runs_nothing_in_the_browser(
    tmp_path: Path, page: object, shots: Path
) -> None:
    from tests.package.factories import write_package
    from tests.web.test_hostile_text import PAYLOAD, hostile_definition

    tab = page
    assert isinstance(tab, sync_api.Page)
    definition, _ = hostile_definition()
    write_package(tmp_path / "hostile", definition=definition)
    publish([tmp_path / "hostile"], tmp_path / "home")
    dialogs: list[str] = []
    tab.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    with serving(tmp_path / "home", PublishedCatalog(tmp_path / "home")) as url:
        for path in ("/", "/packages/tiny-test/1.0.0"):
            tab.goto(url + path)
            tab.wait_for_load_state("load")
            assert tab.locator("img[src=x]").count() == 0
        expect = sync_api.expect
        expect(tab.locator("#summary")).to_have_text(PAYLOAD)  # shown, literally
        tab.screenshot(path=shots / "05-package-hostile.png", full_page=True)
    assert dialogs == []
