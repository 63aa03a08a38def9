"""Sign-in throttling through real processes and a real server, on SQLite and PostgreSQL:
a burst of concurrent guesses from several processes gets no more passwords checked than
the limit; a colleague's typos never lock out another account behind the same address;
the 429 says when to retry; a 20 MB sign-in is refused before it is read."""

from __future__ import annotations

import multiprocessing
import re
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fastapi.testclient import TestClient

from servekit.config import Settings
from servekit.errors import AuthenticationError, TooManySignInsError
from servekit.store import accounts
from servekit.store.db import Store, make_engine
from servekit.web import signin
from servekit.web.app import create_app
from tests.store.conftest import Backend, backend
from tests.web.server import serving

__all__ = ["backend"]

PROCESSES, ATTEMPTS = 4, 8  # 32 guesses in flight at once


def _guesses(url: str, home: str, gate: Any, results: Any) -> None:
    """One process: wait for the others, then guess ATTEMPTS times as fast as it can."""
    store = Store(engine=make_engine(url), home=Path(home))
    outcome = {"checked": 0, "throttled": 0}
    gate.wait()
    for n in range(ATTEMPTS):
        try:
            signin.sign_in(store, "target@acme.test", f"guess {n}", "203.0.113.5")
        except AuthenticationError:
            outcome["checked"] += 1
        except TooManySignInsError:
            outcome["throttled"] += 1
    store.engine.dispose()
    results.put(outcome)


def test_a_burst_of_guesses_from_several_processes_gets_the_limit_checked(
    backend: Backend, tmp_path: Path
) -> None:
    url = backend.new_url()
    store = Store(engine=make_engine(url), home=tmp_path)
    with store.transaction() as s:
        accounts.create_user("target@acme.test", "the right phrase", session=s)
    store.engine.dispose()
    ctx = multiprocessing.get_context("fork")
    gate, results = ctx.Barrier(PROCESSES), ctx.Queue()
    procs = [
        ctx.Process(target=_guesses, args=(url, str(tmp_path), gate, results))
        for _ in range(PROCESSES)
    ]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    checked = sum(o["checked"] for o in outcomes)
    throttled = sum(o["throttled"] for o in outcomes)
    assert checked + throttled == PROCESSES * ATTEMPTS
    assert checked == accounts.ACCOUNT_FREE, outcomes


def _form(client: TestClient, email: str, password: str) -> Any:
    return client.post("/api/v1/sessions", json={"email": email, "password": password})


def test_two_accounts_behind_one_address(tmp_path: Path) -> None:
    """Over HTTP (the store-level test runs it on both databases)."""
    app = create_app(Settings(home=tmp_path / "home"))
    with app.state.store.transaction() as s:
        accounts.create_user("ada@acme.test", "ada types fast", session=s)
        accounts.create_user("bob@acme.test", "bob types slowly", session=s)
    office = ("192.0.2.44", 40000)
    with TestClient(app, client=office) as client:
        for _ in range(accounts.ACCOUNT_FREE):
            assert _form(client, "ada@acme.test", "ada typos fast").status_code == 401
        locked = _form(client, "ada@acme.test", "ada types fast")
        assert locked.status_code == 429
        wait = int(locked.headers["retry-after"])
        assert 0 < wait <= 60 and locked.json()["retry_after"] == wait
        assert f"try again in {wait} seconds" in locked.json()["detail"]
        assert _form(client, "bob@acme.test", "bob types slowly").status_code == 201
    app.state.store.engine.dispose()


def test_a_20_mb_sign_in_is_refused_before_it_is_read(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with serving(home) as base:
        host, port = urlsplit(base).hostname, urlsplit(base).port
        with socket.create_connection((host, port), timeout=10) as sock:
            sock.sendall(
                b"POST /api/v1/sessions HTTP/1.1\r\nHost: store.test\r\n"
                b"Content-Type: application/json\r\nContent-Length: 20000000\r\n\r\n"
                + b'{"email": "'
            )
            answer = sock.recv(4096)  # no more of the 20 MB is ever sent
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"content-security-policy" in answer.lower()


def _page_sign_in(client: TestClient, email: str, password: str) -> Any:
    form = client.get("/signin").text
    token = re.search(r'name="csrf_token" value="([^"]+)"', form)
    assert token
    data = {"email": email, "password": password, "csrf_token": token.group(1)}
    return client.post("/signin", data=data, follow_redirects=False)


def test_spraying_from_an_address_does_not_hold_a_colleague_known_to_the_browser(
    tmp_path: Path,
) -> None:
    app = create_app(Settings(home=tmp_path / "home"))
    with app.state.store.transaction() as s:
        accounts.create_user("bob@acme.test", "bob types slowly", session=s)
        accounts.create_user("cy@acme.test", "cy is brand new", session=s)
    office = ("192.0.2.77", 40000)
    with TestClient(app, base_url="https://store.test", client=office) as bob:
        assert _page_sign_in(bob, "bob@acme.test", "bob types slowly").status_code == 303
        assert bob.cookies.get(signin.DEVICE_COOKIE)
        with TestClient(app, base_url="https://store.test", client=office) as sprayer:
            for n in range(accounts.ADDRESS_ACCOUNTS):
                _page_sign_in(sprayer, f"user{n}@acme.test", "Summer2026!")
            assert _page_sign_in(sprayer, "bob@acme.test", "a guess").status_code == 429
        # bob's browser proved an earlier sign-in: his address's limit does not hold him
        assert _page_sign_in(bob, "bob@acme.test", "bob types slowly").status_code == 303
        # bob's device cookie is worth nothing for another account
        assert _page_sign_in(bob, "cy@acme.test", "cy is brand new").status_code == 429
