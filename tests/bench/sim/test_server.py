"""The simulator's HTTP server: the refusals an OpenAI-compatible engine gives, heads that
arrive in pieces, and clients that leave mid-stream."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from servekit.bench.sse import StreamState

Sim = Callable[..., AbstractContextManager[str]]
BASE = {"model": "servekit-sim", "prompt": "hello there", "max_tokens": 3, "stream": True}


@pytest.mark.parametrize(
    ("change", "status", "message"),
    [
        ({"model": "gpt-5"}, 404, "The model `gpt-5` does not exist."),
        ({"stream": False}, 400, "the simulator serves streaming requests only"),
        ({"max_tokens": 0}, 400, "max_tokens must be at least 1"),
        ({"prompt": ["hello", "there"]}, 400, "prompt must be a string"),
    ],
    ids=["unknown-model", "not-streaming", "no-tokens", "prompt-list"],
)
def test_requests_an_engine_refuses_are_refused_with_its_status(
    sim: Sim, change: dict[str, Any], status: int, message: str
) -> None:
    with sim() as url:
        response = httpx.post(f"{url}/v1/completions", json={**BASE, **change})
    assert response.status_code == status and message in response.text


def test_a_body_that_is_not_a_json_object_is_a_bad_request(sim: Sim) -> None:
    with sim() as url:
        response = httpx.post(f"{url}/v1/completions", json=[BASE])
    assert response.status_code == 400 and "body must be a JSON object" in response.text


def test_chat_messages_must_be_a_list(sim: Sim) -> None:
    body = {"model": "servekit-sim", "messages": "hi", "stream": True}
    with sim() as url:
        response = httpx.post(f"{url}/v1/chat/completions", json=body)
    assert response.status_code == 400 and "messages must be a list" in response.text


def test_chat_max_completion_tokens_bounds_the_output(sim: Sim) -> None:
    messages = [{"role": "user", "content": "hi"}]
    body = {"model": "servekit-sim", "messages": messages, "stream": True}
    with sim() as url:
        response = httpx.post(
            f"{url}/v1/chat/completions", json={**body, "max_completion_tokens": 2}
        )
    state = StreamState(chat=True)
    state.feed(response.content, 0.0)
    assert response.status_code == 200 and state.error is None
    assert len(state.pieces) == 2 and state.finish_reason == "length"


def _connect(url: str) -> socket.socket:
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    return socket.create_connection((parts.hostname, parts.port), timeout=5)


def _request(body: bytes) -> bytes:
    head = (
        b"POST /v1/completions HTTP/1.1\r\nHost: sim\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body)
    )
    return head + body


def test_a_head_that_arrives_in_pieces_is_one_request(sim: Sim) -> None:
    raw = _request(b'{"model":"servekit-sim","prompt":"hi","max_tokens":2,"stream":true}')
    with sim() as url, _connect(url) as conn:
        for i in range(0, len(raw), 7):
            conn.sendall(raw[i : i + 7])
            time.sleep(0.002)  # each piece is its own read on the server
        reply = b""
        while b"data: [DONE]" not in reply:
            chunk = conn.recv(65536)
            assert chunk, reply
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 200 OK\r\n")


def test_a_client_that_leaves_mid_stream_does_not_stop_the_server(sim: Sim) -> None:
    body = b'{"model":"servekit-sim","prompt":"hi","max_tokens":200,"stream":true}'
    with sim(itl_ms=5.0) as url:
        with _connect(url) as conn:
            conn.sendall(_request(body))
            assert conn.recv(65536).startswith(b"HTTP/1.1 200 OK")
        time.sleep(0.05)  # the stream goes on writing to a closed connection for a while
        response = httpx.post(f"{url}/v1/completions", json=BASE)
        metrics = httpx.get(f"{url}/metrics").text
    assert response.status_code == 200 and "data: [DONE]" in response.text
    assert "servekit_sim_requests_total 2" in metrics
