"""Sign-up answers the same way, in about the same time, whether or not the email has an
account: the same redirect to sign in and the same page, never a session."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from servekit.config import Settings
from servekit.store import accounts
from servekit.web.app import create_app

BASE = "https://store.test"


def _sign_up(client: TestClient, email: str, workspace: str) -> tuple[float, object]:
    form = client.get("/signup").text
    token = re.search(r'name="csrf_token" value="([^"]+)"', form)
    assert token
    data = {"email": email, "password": "a chosen phrase", "workspace": workspace}
    start = time.perf_counter()
    answer = client.post(
        "/signup", data={**data, "csrf_token": token.group(1)}, follow_redirects=False
    )
    return time.perf_counter() - start, answer


@pytest.mark.usefixtures("production_cost")
def test_sign_up_cannot_tell_whether_an_email_has_an_account(tmp_path: Path) -> None:
    app = create_app(Settings(home=tmp_path / "home"))
    with app.state.store.transaction() as s:
        accounts.create_user("ada@acme.test", "ada's own phrase", session=s)
    answers = []
    with TestClient(app, base_url=BASE) as client:
        for n, email in enumerate(["ada@acme.test", "new@acme.test"] * 2):
            seconds, answer = _sign_up(client, email, f"ws-{n}")
            answers.append((seconds, answer))
            assert client.get("/account", follow_redirects=False).status_code == 303
    shapes = {
        (a.status_code, a.headers["location"].replace(f"ws-{n}", "WS"), a.text)  # type: ignore[attr-defined]
        for n, (_, a) in enumerate(answers)
    }
    assert shapes == {(303, "/signin?next=%2Fw%2FWS&signed_up=1", "")}, shapes
    taken = min(answers[0][0], answers[2][0])
    new = min(answers[1][0], answers[3][0])
    assert 0.5 < taken / new < 2, (taken, new)  # one argon2 hash either way
