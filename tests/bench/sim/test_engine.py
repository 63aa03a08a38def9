"""The simulated engine's admission: a queue behind ``max_concurrency`` that clients may leave."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from urllib.parse import urlsplit

import httpx

Sim = Callable[..., AbstractContextManager[str]]
BODY = b'{"model":"servekit-sim","prompt":"hi","max_tokens":%d,"stream":true}'


def _open_stream(url: str, tokens: int) -> socket.socket:
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    conn = socket.create_connection((parts.hostname, parts.port), timeout=5)
    body = BODY % tokens
    conn.sendall(
        b"POST /v1/completions HTTP/1.1\r\nHost: sim\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    return conn


def _timed_request(url: str) -> tuple[httpx.Response, float]:
    """A short streaming request and the seconds it took (queueing included)."""
    body = {"model": "servekit-sim", "prompt": "hi", "max_tokens": 2, "stream": True}
    start = time.monotonic()
    response = httpx.post(f"{url}/v1/completions", json=body, timeout=5.0)
    return response, time.monotonic() - start


def test_a_client_that_leaves_the_queue_does_not_hold_a_slot(sim: Sim) -> None:
    with sim(max_concurrency=1, ttft_ms=5.0, itl_ms=5.0) as url:
        running = _open_stream(url, 40)  # holds the only slot for about 200 ms
        time.sleep(0.05)
        queued = _open_stream(url, 40)
        time.sleep(0.05)
        queued.close()  # leaves while still waiting for admission
        time.sleep(0.05)
        after, waited = _timed_request(url)
        running.close()
    assert after.status_code == 200 and "data: [DONE]" in after.text
    assert waited < 2.0  # admitted once the first stream ended, not after the one that left


def test_a_client_that_leaves_mid_stream_frees_its_slot(sim: Sim) -> None:
    with sim(max_concurrency=1, ttft_ms=5.0, itl_ms=5.0) as url:
        leaving = _open_stream(url, 1000)  # would hold the slot for 5 s
        assert leaving.recv(65536).startswith(b"HTTP/1.1 200 OK")
        leaving.close()
        time.sleep(0.05)
        after, waited = _timed_request(url)
    assert after.status_code == 200 and waited < 2.0
