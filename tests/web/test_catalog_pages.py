"""The live catalog and package pages, over HTTP from a real uvicorn server."""

from __future__ import annotations

import asyncio
import re
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from servekit.config import Settings
from servekit.store import accounts
from servekit.store.db import open_store
from servekit.web.security import CONTENT_SECURITY_POLICY
from tests.web.api.world import PASSWORD, auth, buy
from tests.web.test_hostile_text import PAYLOAD, audit


class _Cards(HTMLParser):
    """Collects (package id, version) of every card on a catalog page."""

    def __init__(self) -> None:
        super().__init__()
        self.cards: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "article" and values.get("class") == "card":
            self.cards.append((values["data-package"] or "", values["data-version"] or ""))


QWEN = "qwen2.5-7b-dummy-vllm-tune-h200"  # servekit tune's refusals on the H200 (docs/gpu-run.md)
SMOL_TUNE = "smollm2-135m-vllm-tune-h200"
FREE = [QWEN, "smollm2-135m-vllm-h200", SMOL_TUNE]
"""The H200 vLLM packages, in the default order: free, and no p50 latency or throughput."""


def cards_on(html: str) -> list[tuple[str, str]]:
    parser = _Cards()
    parser.feed(html)
    return parser.cards


def test_catalog_lists_every_published_version(base_url: str) -> None:
    html = httpx.get(base_url + "/").text
    assert cards_on(html) == [
        ("kimi-k3-8xb300", "1.0.0"),
        ("llama-850m-h200", "1.0.0"),
        ("qwen2.5-7b-dummy-vllm-tune-h200", "1.0.0"),
        ("smollm2-135m-vllm-h200", "1.0.0"),
        ("smollm2-135m-vllm-tune-h200", "1.0.0"),
        ("tiny-sim", "0.1.0"),
    ]


def test_k3_card_shows_its_reported_latency_at_concurrency_8_with_its_source(
    base_url: str,
) -> None:
    html = httpx.get(base_url + "/", params={"gpu": "B300"}).text
    assert cards_on(html) == [("kimi-k3-8xb300", "1.0.0")]
    card = html[html.index('<article class="card"') : html.index("</article>")]
    for figure, value in (("e2el-p50-c8", "18695 ms"), ("e2el-p99-c8", "18766 ms")):
        block = card[card.index(f'data-figure="{figure}"') :]
        block = block[: block.index("</div>\n</div>") if "</div>\n</div>" in block else None]
        assert value in block and "concurrency 8" in block
        assert "badge-reported" in block and "reported by RunInfra catalog" in block


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"engine": "transformers"}, ["llama-850m-h200"]),
        ({"model": "moonshotai/Kimi-K3"}, ["kimi-k3-8xb300"]),
        ({"gpu": "H200", "engine": "vllm"}, [QWEN, "smollm2-135m-vllm-h200", SMOL_TUNE]),
        ({"gpu": "B300", "engine": "transformers"}, []),
    ],
)
def test_filters(base_url: str, params: dict[str, str], expected: list[str]) -> None:
    html = httpx.get(base_url + "/", params=params).text
    assert [c[0] for c in cards_on(html)] == expected


def test_package_page_shows_the_definition(base_url: str) -> None:
    response = httpx.get(base_url + "/packages/kimi-k3-8xb300/1.0.0")
    assert response.status_code == 200
    html = response.text
    for text in (
        "175.4 GiB",  # the hardware floor, with its failed attempts
        "8x B200",
        "Accuracy gate: passed",
        "not reported",
        "Kimi K3 License",
        "servekit verify kit kimi-k3-8xb300-1.0.0.kit.tar.gz --trust trust.toml",
        "1,561,",  # model size in bytes
        'id="no-chart"',  # every K3 figure is at one concurrency: the table alone
    ):
        assert text in html, text


def test_measured_figure_links_to_its_raw_records(base_url: str) -> None:
    html = httpx.get(base_url + "/packages/llama-850m-h200/1.0.0").text
    href = html.split('href="/packages/llama-850m-h200/1.0.0/files/evidence/', 1)[1].split('"')[0]
    records = httpx.get(base_url + "/packages/llama-850m-h200/1.0.0/files/evidence/" + href)
    assert records.status_code == 200
    assert records.headers["content-type"].startswith("text/plain")
    assert '"concurrency"' in records.text.splitlines()[1]


@pytest.mark.parametrize(
    "path",
    [
        "/packages/llama-850m-h200/1.0.0/files/package.yaml",  # exists, but no page links it
        "/packages/llama-850m-h200/1.0.0/files/..%2F..%2FGENERATION",
        "/packages/llama-850m-h200/9.9.9",
        "/packages/nope/1.0.0/charts/latency.svg",
        "/packages/kimi-k3-8xb300/1.0.0/charts/latency.svg",  # not drawn: single points
        "/packages/tiny-sim/0.1.0/charts/throughput.svg",
    ],
)
def test_unknown_things_are_404_with_an_escaped_page(base_url: str, path: str) -> None:
    response = httpx.get(base_url + path)
    assert response.status_code == 404
    assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY


def test_charts_are_svg_without_script_one_per_panel(base_url: str) -> None:
    page = httpx.get(base_url + "/packages/llama-850m-h200/1.0.0").text
    srcs = re.findall(r'<img class="chart" data-panel="[^"]+" src="([^"]+)"', page)
    assert srcs == [
        f"/packages/llama-850m-h200/1.0.0/charts/{p}.svg"
        for p in ("latency", "per-token", "throughput")
    ]
    for src in srcs:
        response = httpx.get(base_url + src)
        assert response.headers["content-type"] == "image/svg+xml"
        svg = response.text
        assert svg.lstrip().startswith("<?xml") and "<svg" in svg
        assert "<script" not in svg and "concurrency" in svg


@pytest.mark.parametrize("path", ["/", "/packages/tiny-sim/0.1.0", "/static/catalog.css"])
def test_secure_headers(base_url: str, path: str) -> None:
    headers = httpx.get(base_url + path).headers
    csp = headers["content-security-policy"]
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert "script-src 'self';" in csp  # the catalog page's one file; nothing inline
    assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["x-frame-options"] == "DENY"
    assert "server" not in headers or "uvicorn" not in headers["server"]


@pytest.mark.parametrize(
    ("cached", "routed"),
    [
        ("/", "/?page=01"),  # the cache answers canonical page numbers; the router the rest
        ("/?gpu=H200&page=1", "/?gpu=H200&page=+1"),
        ("/packages/tiny-sim/0.1.0", "/packages/tiny-sim/0.1.0?x=1"),
        ("/?q=h200&sort=-price", "/?q=h200&sort=-price&page=01"),
    ],
)
def test_a_page_from_the_cache_is_the_page_from_the_route(
    base_url: str, cached: str, routed: str
) -> None:
    with httpx.Client(base_url=base_url) as client:
        client.get(cached)  # now kept in the page cache
        hit, through = client.get(cached), client.get(routed)
    assert hit.status_code == through.status_code == 200
    assert hit.content == through.content
    assert {k: v for k, v in hit.headers.items() if k != "date"} == {
        k: v for k, v in through.headers.items() if k != "date"
    }
    assert hit.headers["content-security-policy"] == CONTENT_SECURITY_POLICY


def test_bad_page_number_is_refused(base_url: str) -> None:
    assert httpx.get(base_url + "/", params={"page": "0"}).status_code == 422
    last = httpx.get(base_url + "/", params={"page": "99"}).text
    assert len(cards_on(last)) == 6  # clamped to the last page


def test_a_draft_is_shown_for_review_and_offered_nowhere(base_url: str) -> None:
    """tiny-sim is a draft: `servekit serve` keeps its pages but never puts it in the store."""
    index = httpx.get(base_url + "/").text
    card = index[index.index('data-package="tiny-sim"') :]
    card = card[: card.index("</article>")]
    assert "badge-draft" in card and "draft: not for sale" in card
    page = httpx.get(base_url + "/packages/tiny-sim/0.1.0").text
    assert "shown for review only, and not for sale" in page and 'id="buy"' not in page
    assert 'id="buy"' in httpx.get(base_url + "/packages/llama-850m-h200/1.0.0").text
    on_sale = httpx.get(base_url + "/api/v1/catalog").json()
    assert "tiny-sim" not in {v["package_id"] for v in on_sale} and len(on_sale) == 5
    assert httpx.get(base_url + "/api/v1/catalog/tiny-sim/0.1.0").status_code == 404


def test_live_pages_show_whole_commits_the_placeholder_and_where_weights_come_from(
    base_url: str,
) -> None:
    k3 = httpx.get(base_url + "/packages/kimi-k3-8xb300/1.0.0").text
    assert "0" * 40 in k3 and "is a placeholder, not a real commit" in k3
    llama = httpx.get(base_url + "/packages/llama-850m-h200/1.0.0").text
    assert "c421cee2eeb7395b146335754e14ae3902317c9a" in llama
    assert "8 files (2 weight shards)" in llama and "pulled by your node" not in llama
    assert "huggingface.co/servekit-examples" not in llama


# --- search, sort, compare (issue 21.10) ----------------------------------------------


def _card_html(html: str, package_id: str) -> str:
    card = html[html.index(f'data-package="{package_id}"') :]
    return card[: card.index("</article>")]


@pytest.mark.parametrize(
    ("q", "expected"),
    [
        ("smollm", ["smollm2-135m-vllm-h200", SMOL_TUNE]),
        ("SmolLM2   VLLM", ["smollm2-135m-vllm-h200", SMOL_TUNE]),  # every word, any case
        ("moonshotai B300", ["kimi-k3-8xb300"]),  # the model and the hardware
        ("TRANSFORMERS", ["llama-850m-h200"]),  # the engine
        ("llama b300", []),  # both words must match one card
    ],
)
def test_text_search(base_url: str, q: str, expected: list[str]) -> None:
    html = httpx.get(base_url + "/", params={"q": q}).text
    assert [c[0] for c in cards_on(html)] == expected
    assert f'value="{q}"' in html  # the box keeps what was typed


def test_a_hostile_search_is_shown_as_text(base_url: str) -> None:
    html = httpx.get(base_url + "/", params={"q": PAYLOAD}).text
    assert audit(html) == [] and cards_on(html) == []
    assert 'value="&lt;script&gt;alert(1)&lt;/script&gt;&#34;&gt;' in html


def test_search_is_bounded_and_a_bad_sort_refused(base_url: str) -> None:
    assert httpx.get(base_url + "/", params={"q": "x" * 201}).status_code == 422
    assert httpx.get(base_url + "/", params={"sort": "bogus"}).status_code == 422


@pytest.mark.parametrize(
    ("sort", "expected"),
    [
        ("price", ["llama-850m-h200", *FREE, "tiny-sim", "kimi-k3-8xb300"]),
        ("-price", ["kimi-k3-8xb300", "llama-850m-h200", *FREE, "tiny-sim"]),
        # latency p50 at its lowest concurrency: llama 894 ms at 1, K3 18695 ms at 8; the
        # others publish no p50 latency and go last, in the default order
        ("latency", ["llama-850m-h200", "kimi-k3-8xb300", *FREE, "tiny-sim"]),
        # output throughput per GPU, highest first: llama 788.2, tiny-sim 218.3
        (
            "throughput",
            ["llama-850m-h200", "tiny-sim", "kimi-k3-8xb300", *FREE],
        ),
    ],
)
def test_sort(base_url: str, sort: str, expected: list[str]) -> None:
    with httpx.Client(base_url=base_url) as client:
        client.get("/", params={"sort": sort})  # the second answer comes from the page cache
        html = client.get("/", params={"sort": sort}).text
    assert [c[0] for c in cards_on(html)] == expected
    assert f'<option value="{sort}" selected>' in html


def test_a_latency_sort_says_which_figure_it_compared(base_url: str) -> None:
    html = httpx.get(base_url + "/", params={"sort": "latency"}).text
    llama = _card_html(html, "llama-850m-h200")
    assert "Sorted by Latency p50: 894 ms at concurrency 1" in llama
    assert "No latency p50 figure: listed last" in _card_html(html, "smollm2-135m-vllm-h200")


def test_price_sits_under_the_title(base_url: str) -> None:
    card = _card_html(httpx.get(base_url + "/").text, "kimi-k3-8xb300")
    after_title = card[card.index("</h2>") + len("</h2>") :]
    assert after_title.lstrip().startswith('<p class="price">25,000 USD, once')


def test_clear_filters_link_only_when_something_is_filtered(base_url: str) -> None:
    assert 'id="clear-filters"' not in httpx.get(base_url + "/").text
    for params in ({"gpu": "H200"}, {"q": "none of these"}, {"sort": "price"}):
        html = httpx.get(base_url + "/", params=params).text
        assert '<a id="clear-filters" href="/">clear filters</a>' in html, params


def test_filters_work_without_javascript_and_apply_on_change_with_it(base_url: str) -> None:
    html = httpx.get(base_url + "/").text
    form = html[html.index('<form class="filters"') :]
    form = form[: form.index("</form>")]
    assert '<button type="submit">Filter</button>' in form  # no script needed
    for name in ("q", "gpu", "engine", "model", "sort"):
        assert f'name="{name}"' in form
    assert '<script src="/static/catalog.js" defer></script>' in html
    script = httpx.get(base_url + "/static/catalog.js")
    assert script.headers["content-type"].startswith("text/javascript")
    assert 'querySelectorAll("form.filters select")' in script.text
    assert "requestSubmit" in script.text


def test_the_catalog_offers_compare_checkboxes(base_url: str) -> None:
    html = httpx.get(base_url + "/").text
    form = html[html.index('<form id="compare" method="get" action="/compare">') :]
    form = form[: form.index("</form>")]
    for package_id, version in cards_on(html):
        assert f'<input type="checkbox" name="v" value="{package_id}@{version}">' in form
    assert '<button type="submit">Compare selected</button>' in form


def test_compare_shows_versions_side_by_side(base_url: str) -> None:
    response = httpx.get(
        base_url + "/compare", params=[("v", "llama-850m-h200@1.0.0"), ("v", "tiny-sim@0.1.0")]
    )
    assert response.status_code == 200
    html = response.text
    table = html[html.index('<table id="compare-table"') : html.index("</table>")]
    assert table.count('<th scope="col"><a href="/packages/') == 2
    row = table[table.index("Latency p50, concurrency 1") :]
    row = row[: row.index("</tr>")]
    assert "894 ms" in row and "not published" in row
    row = table[table.index('<th scope="row">Hardware</th>') :]
    assert "H200" in row[: row.index("</tr>")]


@pytest.mark.parametrize(
    ("versions", "status"),
    [
        ([], 422),
        (["tiny-sim@0.1.0"], 422),
        (["tiny-sim@0.1.0", "tiny-sim@0.1.0"], 422),  # the same version twice is one
        (
            [
                "tiny-sim@0.1.0",
                "llama-850m-h200@1.0.0",
                "kimi-k3-8xb300@1.0.0",
                "smollm2-135m-vllm-h200@1.0.0",
            ],
            422,
        ),
        (["tiny-sim@0.1.0", "nope@1.0.0"], 404),
        (["tiny-sim@0.1.0", "tiny-sim"], 404),
    ],
)
def test_compare_takes_two_or_three_known_versions(
    base_url: str, versions: list[str], status: int
) -> None:
    response = httpx.get(base_url + "/compare", params=[("v", v) for v in versions])
    assert response.status_code == status
    assert response.headers["content-type"].startswith("text/html")


# --- the buyer's commands (issue 21.3) -------------------------------------------------


def test_package_page_commands_use_the_downloaded_file_name(
    base_url: str, examples_home: Path
) -> None:
    """A buyer gets the kit from the store and types the page's commands: the file name in
    them is the one the download is saved as, and the kit is unpacked by servekit, never tar."""
    store = open_store(Settings(home=examples_home))
    try:
        with store.transaction() as s:
            uid = accounts.create_user("commands@example.com", PASSWORD, session=s)
            accounts.create_workspace("commands", "Commands", owner_id=uid, session=s)
    finally:
        store.engine.dispose()
    with httpx.Client(base_url=base_url) as client:
        session = client.post(
            "/api/v1/sessions", json={"email": "commands@example.com", "password": PASSWORD}
        ).json()["token"]
        buy(client, session, "commands", "llama-850m-h200", "1.0.0", "commands-llama-1")
        kit = client.get(
            "/api/v1/workspaces/commands/downloads/llama-850m-h200/1.0.0", headers=auth(session)
        )
        page = client.get("/packages/llama-850m-h200/1.0.0").text
    assert kit.status_code == 200, kit.text
    name = re.fullmatch(r'attachment; filename="([^"]+)"', kit.headers["content-disposition"])
    assert name and name.group(1) == "llama-850m-h200-1.0.0.kit.tar.gz"
    block = page[page.index('<pre id="verify-commands"><code>') : page.index("</code></pre>")]
    commands = block.split("<code>", 1)[1].splitlines()
    assert commands == [
        f"servekit verify kit {name.group(1)} --trust trust.toml --expect llama-850m-h200@1.0.0",
        f"servekit kit unpack {name.group(1)} llama-850m-h200-1.0.0 --trust trust.toml "
        "--expect llama-850m-h200@1.0.0",
        f"servekit verify weights /path/to/weights --kit {name.group(1)} --trust trust.toml",
    ]
    assert "tar -x" not in page


def test_the_front_answers_a_cookieless_get_and_passes_on_everything_else(
    examples_home: Path,
) -> None:
    """The copy of the page cache in front of the whole stack (``SecuredApp.front``)
    answers a kept page to a GET without a cookie, and hands the stack a request with a
    cookie, a HEAD, a page not kept yet and one whose look-up fails."""
    from fastapi.testclient import TestClient

    from servekit.web.app import create_app
    from servekit.web.routes.catalog import CachedPages
    from servekit.web.storecatalog import StoreCatalog

    app = create_app(Settings(home=examples_home))
    with TestClient(app, base_url="https://store.test") as client:
        client.get("/")  # kept now

    passed: list[str] = []

    async def stack(scope: Any, receive: Any, send: Any) -> None:
        passed.append(scope["method"])
        await send({"type": "http.response.start", "status": 418, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    def status(method: str, path: str = "/", cookie: bool = False, state: Any = None) -> int:
        front = CachedPages(stack, state or app.state, anonymous=True)
        headers = [(b"host", b"store.test")] + ([(b"cookie", b"session=x")] if cookie else [])
        scope = {"type": "http", "method": method, "path": path, "query_string": b"",
                 "headers": headers, "root_path": ""}  # fmt: skip
        sent: list[Any] = []

        async def send(message: Any) -> None:
            sent.append(message)

        async def receive() -> Any:
            return {"type": "http.request", "body": b""}

        asyncio.run(front(scope, receive, send))
        return int(sent[0]["status"])

    class Broken(StoreCatalog):
        def unchanged(self) -> None:
            raise OSError("the generation file went away")

    failing = SimpleNamespace(catalog=Broken(app.state.catalog.store), pages=app.state.pages)
    assert status("GET") == 200 and passed == []
    assert status("GET", cookie=True) == 418
    assert status("HEAD") == 418
    assert status("GET", "/packages/tiny-sim/0.1.0") == 418  # not kept yet
    assert status("GET", state=failing) == 418
    assert passed == ["GET", "HEAD", "GET", "GET"]
