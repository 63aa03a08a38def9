"""A new operator and buyer, end to end, on both databases.

Publish the three example packages and a priced test package with ``servekit store
publish``; a buyer acquires a free one, buys the priced one, signs and buys the enterprise
one (K3) through the JSON API served by a real uvicorn server on a loopback port; then
``servekit store download`` fetches both kits with an API token and ``servekit verify kit``
checks them offline.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import uvicorn
from sqlalchemy import select
from sqlalchemy.orm import Session

from servekit.cli.main import main
from servekit.config import load_settings
from servekit.store.checkout import confirm, create_quote
from servekit.store.db import Store, open_store
from servekit.store.models import OrderKind, Subscription
from servekit.store.providers import SandboxProvider
from servekit.store.results import Principal
from servekit.web.api.app import context_from_settings, create_api_app
from tests.functional.helpers import EXAMPLES
from tests.store.conftest import Backend, Packages, backend, key, member, packages, publish_one
from tests.web.api.world import PASSWORD, auth, buy, sign

__all__ = ["backend", "key", "packages"]


@pytest.fixture
def env(backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SERVEKIT_HOME", str(tmp_path / "home"))
    if backend.kind == "postgresql":
        monkeypatch.setenv("SERVEKIT_DATABASE_URL", backend.new_url())
    else:
        monkeypatch.delenv("SERVEKIT_DATABASE_URL", raising=False)
    return tmp_path


def run(
    capsys: pytest.CaptureFixture[str], *argv: str, stdin: str | None = None
) -> tuple[int, str]:
    saved = sys.stdin
    sys.stdin = io.StringIO(stdin or "")
    try:
        code = main(list(argv))
    finally:
        sys.stdin = saved
    out = capsys.readouterr()
    return code, out.out + out.err


@contextmanager
def api_server() -> Iterator[str]:
    """The store's API on a real uvicorn server, 127.0.0.1, a free port."""
    app = create_api_app(context_from_settings(load_settings()))
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not srv.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{srv.servers[0].sockets[0].getsockname()[1]}"
    finally:
        srv.should_exit = True
        thread.join(timeout=10)


def test_publish_buy_download_verify(
    env: Path, packages: Packages, capsys: pytest.CaptureFixture[str]
) -> None:
    # the store's own key, where `servekit serve` keeps it and /keys publishes it
    (env / "home").mkdir()
    assert run(capsys, "keys", "generate", "--out", str(env / "home" / "keys"))[0] == 0
    key = str(env / "home" / "keys" / "servekit.key")
    for pkg in (*sorted(EXAMPLES.iterdir()), packages.priced):
        code, out = run(capsys, "store", "publish", str(pkg), "--key", key)
        if pkg.name == "tiny-sim":  # a draft: never published, so never bought
            assert code == 38 and "status draft" in out, out
            continue
        assert code == 0, out
    code, out = run(capsys, "store", "publish", str(packages.priced), "--key", key)
    assert code == 0 and "already published" in out
    assert (
        run(
            capsys,
            "store",
            "add-user",
            "buyer@example.com",
            "--password-stdin",
            stdin=PASSWORD + "\n",
        )[0]
        == 0
    )
    assert run(capsys, "store", "add-workspace", "acme", "--owner", "buyer@example.com")[0] == 0
    code, out = run(capsys, "store", "add-token", "acme", "buyer@example.com", "--json")
    token = json.loads(out)["token"]
    with api_server() as url:
        _buy_through_the_api(url, token, env, capsys)
    code, out = run(capsys, "store", "audit")
    assert code == 0 and "1 signatures chained" in out


def _buy_through_the_api(
    url: str, token: str, env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with httpx.Client(base_url=url) as client:
        session = client.post(
            "/api/v1/sessions", json={"email": "buyer@example.com", "password": PASSWORD}
        )
        s = session.json()["token"]
        free = buy(client, s, "acme", "llama-850m-h200", "1.0.0", "acme-free-0001")
        assert free["order"]["amount_cents"] == 0
        priced = buy(client, s, "acme", "test-priced", "1.0.0", "acme-priced-01")
        assert priced["order"]["amount_cents"] == 4999
        sign(client, s, "acme", "kimi-k3-8xb300", "1.0.0")
        k3 = buy(client, s, "acme", "kimi-k3-8xb300", "1.0.0", "acme-k3-00001")
        assert k3["order"]["signature_id"] is not None
        assert (
            client.get("/api/v1/workspaces/acme/entitlements", headers=auth(s)).status_code == 200
        )
    for ref in ("kimi-k3-8xb300@1.0.0", "test-priced"):
        out_path = env / f"{ref.split('@')[0]}.tar.gz"
        code, out = run(
            capsys, "store", "download", ref, "--url", url, "--token", token, "-o", str(out_path)
        )
        assert code == 0, out
        # the hint names the store's trust file, not a publisher key the buyer never got
        assert f"servekit trust fetch {url} -o trust.toml" in out, out
        assert f"servekit verify kit {out_path} --trust trust.toml" in out, out
        trust = env / "trust.toml"
        code, out = run(capsys, "trust", "fetch", url, "-o", str(trust), "--force")
        assert code == 0, out
        code, out = run(capsys, "verify", "kit", str(out_path), "--trust", str(trust))
        assert code == 0, out
    code, out = run(
        capsys,
        "store",
        "download",
        "tiny-sim",
        "--url",
        url,
        "--token",
        token,
        "-o",
        str(env / "x"),
    )
    assert code == 39 and "404" in out


def _bought(s: Session, store: Store, packages: Packages, key: Path) -> tuple[Principal, int]:
    """test-priced 1.0.0 published and bought by acme's member: who bought, and the order."""
    publish_one(packages.priced, key, store.kits_dir, s)
    who = member(s, "acme")
    quote = create_quote(who, "test-priced", "1.0.0", OrderKind.PURCHASE, session=s)
    return who, confirm(who, quote.id, "buy", provider=SandboxProvider(), session=s).id


def test_renew_due_renews_a_subscription_whose_period_ended(
    env: Path, packages: Packages, key: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = open_store(load_settings())
    with store.transaction() as s:
        who, _ = _bought(s, store, packages, key)  # maintenance adds to a purchase
        quote = create_quote(who, "test-priced", None, OrderKind.SUBSCRIPTION, session=s)
        confirm(who, quote.id, "sub", provider=SandboxProvider(), session=s)
        sub = s.scalars(select(Subscription)).one()
        sub.period_end = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)  # a year on
    store.engine.dispose()
    code, out = run(capsys, "store", "renew-due", "--json")
    assert code == 0, out
    (done,) = json.loads(out[out.index("[") :])
    assert done["outcome"] == "renewed" and done["amount_cents"] == 1900
    code, out = run(capsys, "store", "renew-due")
    assert code == 0 and "0 subscription(s) handled" in out
    code, out = run(capsys, "store", "audit")
    assert code == 0 and "audit ok" in out


def test_store_refund_refunds_part_then_the_rest_once(
    env: Path, packages: Packages, key: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = open_store(load_settings())
    with store.transaction() as s:
        _, order = _bought(s, store, packages, key)
    store.engine.dispose()
    refund = ("store", "refund", str(order), "--reason", "goodwill")
    code, out = run(capsys, *refund, "--amount-cents", "1000")
    assert code == 0 and "$10.00 of $49.99" in out and "entitlement kept" in out, out
    code, out = run(capsys, *refund, "--amount-cents", "4000")
    assert code == 32 and "3999 of its 4999 are left" in out, out
    code, out = run(capsys, *refund)
    assert code == 0 and "$49.99 of $49.99" in out and "entitlement revoked" in out, out
    code, out = run(capsys, *refund)
    assert code == 32 and "already refunded" in out, out
    code, out = run(capsys, "store", "audit")
    assert code == 0 and "audit ok" in out, out
