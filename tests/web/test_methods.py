"""HEAD as GET without the body, for a streamed response too (the pages are not streamed)."""

from __future__ import annotations

from starlette.testclient import TestClient
from starlette.types import Receive, Scope, Send

from servekit.web.methods import HeadAsGet


async def get_only(scope: Scope, receive: Receive, send: Send) -> None:
    """An app that knows GET only, as FastAPI's ``@router.get`` routes do, and streams."""
    if scope["method"] != "GET":
        await send({"type": "http.response.start", "status": 405, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    headers = [(b"content-type", b"text/plain")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    for part in (b"one ", b"two "):
        await send({"type": "http.response.body", "body": part, "more_body": True})
    await send({"type": "http.response.body", "body": b"three"})


def test_head_of_a_streamed_get_sends_its_headers_and_no_body() -> None:
    assert TestClient(get_only).head("/").status_code == 405
    client = TestClient(HeadAsGet(get_only))
    assert client.get("/").content == b"one two three"
    head = client.head("/")
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-type"] == "text/plain"
    assert client.post("/").status_code == 405  # only HEAD becomes GET
