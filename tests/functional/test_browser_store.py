"""The buyer's journey in a real browser (Playwright driving Debian's Chromium): sign up,
buy a standard priced package, subscribe to it and cancel, sign the enterprise licence and
buy the K3 package, make an API token, download the kit and verify it with
`servekit verify kit`, sign out. A screenshot of each page goes under the test's output
directory (``SERVEKIT_TEST_ARTIFACTS``, default ``out/test-artifacts``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from servekit.receipts.keys import PUBLIC_KEY_FILE
from tests.functional.helpers import (
    CHROMIUM,
    EXAMPLES,
    needs_chromium,
    screenshot_dir,
    servekit,
)
from tests.store.conftest import make_variant
from tests.web.server import serving, store_publish

pytestmark = needs_chromium

sync_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def shots() -> Path:
    return screenshot_dir("browser-store")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("journey")
    priced = make_variant(
        root / "priced", pkg_id="test-priced", version="1.0.0", usd=49.99, maint=19
    )
    store_publish([priced, EXAMPLES / "kimi-k3-8xb300"], root / "home")
    return root / "home"


@pytest.fixture(scope="module")
def tab(home: Path) -> Iterator[object]:
    with serving(home) as url, sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM))
        context = browser.new_context(
            base_url=url, viewport={"width": 1280, "height": 900}, accept_downloads=True
        )
        page = context.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on(
            "response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 else None
        )
        yield page
        browser.close()
        assert errors == [], errors


def test_sign_up_buy_sign_the_licence_download_and_verify(
    tab: object, shots: Path, home: Path, tmp_path: Path
) -> None:
    page = tab
    assert isinstance(page, sync_api.Page)
    expect = sync_api.expect
    n = iter(range(1, 100))

    def shot(name: str) -> None:
        page.screenshot(path=shots / f"{next(n):02d}-{name}.png", full_page=True)

    # 1. sign up: a user and their workspace
    page.goto("/signup")
    shot("signup")
    page.fill("input[name=email]", "buyer@example.com")
    page.fill("input[name=password]", "correct horse battery")
    page.fill("input[name=workspace]", "acme")
    page.get_by_role("button", name="Create the account").click()
    expect(page.locator("#signed-up")).to_contain_text("If that email had no account")
    page.fill("input[name=email]", "buyer@example.com")  # sign-up never signs in: it
    page.fill("input[name=password]", "correct horse battery")  # cannot tell who exists
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("h1")).to_have_text("Workspace acme")
    shot("workspace-new")

    # 2. a standard priced package: package page -> buy -> quote -> explicit confirm
    page.goto("/packages/test-priced/1.0.0")
    page.locator("#buy").click()
    shot("buy-priced")
    page.get_by_role("button", name="Get a quote").click()
    expect(page.locator("#amount")).to_contain_text("$49.99")
    shot("quote-priced")
    page.get_by_role("button", name="Confirm and pay $49.99").click()
    expect(page.locator("#order-status")).to_contain_text("paid")
    shot("order-priced")

    # 3. a maintenance subscription to it, then cancel at the period end
    page.goto("/buy/test-priced/1.0.0")
    page.check("input[value=subscription]")
    page.get_by_role("button", name="Get a quote").click()
    expect(page.locator("#amount")).to_contain_text("$19.00")
    page.get_by_role("button", name="Confirm and pay $19.00").click()
    expect(page.locator("#order-status")).to_contain_text("subscription")
    page.goto("/w/acme")
    page.get_by_role("button", name="Cancel the subscription").click()
    expect(page.locator("#entitlements + table")).to_contain_text("cancelled at period end")

    # 4. the enterprise package: the quote sends the buyer to the licence first
    page.goto("/packages/kimi-k3-8xb300/1.0.0")
    page.locator("#buy").click()
    page.get_by_role("button", name="Get a quote").click()
    expect(page.locator("#amount")).to_contain_text("$25,000.00")
    expect(page.get_by_role("button", name="Confirm and pay $25,000.00")).to_have_count(0)
    shot("quote-k3-needs-licence")
    page.locator("#sign-licence").click()
    expect(page.locator("#terms-sha256")).to_have_text(
        page.locator("input[name=terms_sha256]").get_attribute("value") or "missing"
    )
    expect(page.locator("#licence input[type=checkbox]")).to_have_count(4)
    page.fill("input[name=licensed_entity]", "Acme Compute GmbH")
    page.fill("input[name=signer_name]", "Ada Buyer")
    page.fill("input[name=signer_title]", "Head of Infrastructure")
    page.fill("input[name=authority_statement]", "Authorised signatory per board resolution 7")
    for box in page.locator("#licence input[type=checkbox]").all():
        box.check()
    shot("licence-k3")
    page.get_by_role("button", name="Sign the licence").click()
    expect(page.locator("main")).to_contain_text("The enterprise licence is signed")
    page.get_by_role("button", name="Confirm and pay $25,000.00").click()
    expect(page.locator("#order-status")).to_contain_text("paid")
    shot("order-k3")

    # 5. entitlements: an API token shown once, then the kit download
    page.goto("/w/acme")
    page.fill("#new-token input[name=name]", "ci")
    page.get_by_role("button", name="Make a token").click()
    expect(page.locator("#token")).to_contain_text("sk_")
    shot("token")
    page.goto("/w/acme")
    shot("workspace-holdings")
    with page.expect_download() as info:
        page.locator("a.download", has_text="kimi-k3-8xb300 1.0.0").click()
    kit = tmp_path / info.value.suggested_filename
    info.value.save_as(kit)

    # 6. the downloaded kit verifies offline against the publisher's key
    result = servekit("verify", "kit", str(kit), "--trust", str(home / "keys" / PUBLIC_KEY_FILE))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "kimi-k3-8xb300" in result.stdout

    # 7. sign out: the workspace now asks to sign in
    page.locator("#signout").click()
    page.goto("/w/acme")
    assert "/signin" in page.url
    shot("signed-out")
    assert len(list(shots.glob("*.png"))) == 11
