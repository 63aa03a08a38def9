from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager

import httpx

from servekit.bench.sim import SimConfig, SimServer
from tests.functional.helpers import sim_metric

Sim = Callable[..., AbstractContextManager[str]]


def test_info_endpoints(sim: Sim) -> None:
    with sim(model="tiny", max_model_len=4096) as url:
        version = httpx.get(f"{url}/version").json()
        models = httpx.get(f"{url}/v1/models").json()
        tokens = httpx.post(f"{url}/tokenize", json={"model": "tiny", "prompt": "a b c"}).json()
        chat = httpx.post(
            f"{url}/tokenize",
            json={"model": "tiny", "messages": [{"role": "user", "content": "a b"}]},
        ).json()
        missing = httpx.get(f"{url}/nope")
    assert version["simulator"] is True and version["engine"] == "servekit-sim"
    assert models["data"][0]["id"] == "tiny" and models["data"][0]["max_model_len"] == 4096
    assert tokens["count"] == 3 and len(tokens["tokens"]) == 3
    assert chat["count"] == 2 + 4 + 3  # words + per-message + per-prompt template tokens
    assert missing.status_code == 404


def _stream(url: str, body: dict[str, object], path: str = "/v1/completions") -> httpx.Response:
    base = {"model": "servekit-sim", "prompt": "hello there", "max_tokens": 3, "stream": True}
    return httpx.post(f"{url}{path}", json={**base, **body})


def test_streams_tokens_usage_and_done(sim: Sim) -> None:
    with sim() as url:
        response = _stream(url, {"stream_options": {"include_usage": True}})
        metrics = httpx.get(f"{url}/metrics").text
    lines = [line for line in response.text.split("\n") if line.startswith("data:")]
    assert response.headers["content-type"] == "text/event-stream"
    assert len(lines) == 3 + 1 + 1 + 1  # tokens, finish, usage, [DONE]
    assert '"completion_tokens": 3' in lines[-2] and lines[-1] == "data: [DONE]"
    assert "servekit_sim_requests_total 1" in metrics
    assert "servekit_sim_generation_tokens_total 3" in metrics
    assert "servekit_sim_first_tokens_total 1" in metrics
    late = sim_metric(metrics, "servekit_sim_token_late_seconds_max")
    # its own error: how late a token left after its deadline, on a machine the suite loads
    # (its precision shows in test_cli_bench's medians within 2 % and in sim/test_perf)
    assert 0.0 <= late < 0.1


def test_json_body_without_a_json_content_type_is_422_like_fastapi(sim: Sim) -> None:
    """FastAPI (0.132+, strict_content_type) rejects it; `transformers serve` did so to
    servekit's client once. A missing header is rejected too."""
    body = json.dumps({"model": "servekit-sim", "prompt": "a b", "max_tokens": 1, "stream": True})
    answers = {}
    with sim() as url:
        for kind in (None, "text/plain", "application/json; charset=utf-8", "application/x+json"):
            headers = {"Content-Type": kind} if kind else {}
            answers[kind] = httpx.post(f"{url}/v1/completions", content=body, headers=headers)
        tokenize = httpx.post(f"{url}/tokenize", content=body)
    for kind in (None, "text/plain"):
        assert answers[kind].status_code == 422
        (detail,) = answers[kind].json()["detail"]
        assert detail["loc"] == ["body"] and detail["input"] == body
    assert answers["application/json; charset=utf-8"].status_code == 200
    assert answers["application/x+json"].status_code == 200
    assert tokenize.status_code == 422


def test_rejections(sim: Sim) -> None:
    with sim(reject_ignore_eos=True, max_model_len=10) as url:
        quirk = _stream(url, {"ignore_eos": True})
        too_long = _stream(url, {"max_tokens": 20})
        wrong_model = _stream(url, {"model": "other"})
        not_streaming = _stream(url, {"stream": False})
    assert quirk.status_code == 422
    assert too_long.status_code == 400 and "max_model_len" in too_long.text
    assert wrong_model.status_code == 404
    assert not_streaming.status_code == 400


def test_natural_length_applies_without_ignore_eos(sim: Sim) -> None:
    with sim(natural_length=2) as url:
        free = _stream(url, {"max_tokens": 5})
        fixed = _stream(url, {"max_tokens": 5, "ignore_eos": True})
    assert free.text.count('"text":" ') == 2
    assert fixed.text.count('"text":" ') == 5


def test_keep_alive_serves_several_requests_per_connection(sim: Sim) -> None:
    with sim() as url, httpx.Client() as client:
        for _ in range(3):
            assert (
                client.post(
                    f"{url}/v1/completions",
                    json={"model": "servekit-sim", "prompt": "x", "max_tokens": 2, "stream": True},
                ).status_code
                == 200
            )
        metrics = client.get(f"{url}/metrics").text
    assert "servekit_sim_requests_total 3" in metrics


def test_clock_starts_when_the_request_arrived_not_when_it_was_read() -> None:
    """The simulator is busy for 60 ms as a request arrives: its first token must still
    come 100 ms after the request was sent (the kernel's arrival stamp), not 160 ms."""
    loop = asyncio.new_event_loop()
    server = SimServer(SimConfig(ttft_ms=100.0, itl_ms=2.0))
    port = loop.run_until_complete(server.start())
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    body = json.dumps(
        {"model": "servekit-sim", "prompt": "a b", "max_tokens": 2, "stream": True}
    ).encode()
    request = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    request += b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    try:
        with socket.create_connection(("127.0.0.1", port)) as sock:
            loop.call_soon_threadsafe(time.sleep, 0.06)  # the simulator's loop is busy
            time.sleep(0.01)
            sent = time.perf_counter()
            sock.sendall(request)
            received = b""
            while b'"text":" ' not in received:
                received += sock.recv(65536)
            ttft = time.perf_counter() - sent
    finally:
        asyncio.run_coroutine_threadsafe(server.close(), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()
    assert 0.095 < ttft < 0.13, ttft


def _raw_exchange(url: str, data: bytes, until: bytes) -> bytes:
    """Send raw bytes to the simulator; read until ``until`` appears or it closes."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    received = b""
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(data)
        while until not in received:
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
    return received


def test_pipelined_requests_are_answered_in_order(sim: Sim) -> None:
    """Two requests in one write, the second split from its body: both answered, in order."""
    with sim(model="tiny") as url:
        get = b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n"
        body = b'{"prompt":"a b c"}'
        post = b"POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        post += b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
        received = _raw_exchange(url, get + post, b'"count": 3')
    first = received.index(b'"simulator": true')
    assert received.count(b"HTTP/1.1 200 OK") == 2
    assert first < received.index(b'"count": 3')


def test_framing_the_server_refuses(sim: Sim) -> None:
    """A chunked request body (411), an endless head (431) and bytes that are not HTTP
    (400): each answered once, then the connection closes."""
    with sim() as url:
        chunked = b"POST /tokenize HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        assert _raw_exchange(url, chunked, b"\r\n\r\n{").startswith(b"HTTP/1.1 411 ")
        endless = b"GET /version HTTP/1.1\r\nX-Pad: " + b"a" * (70 * 1024)
        assert _raw_exchange(url, endless, b"\r\n\r\n{").startswith(b"HTTP/1.1 431 ")
        garbage = b"\x00\x01 not http\r\n\r\n"
        assert _raw_exchange(url, garbage, b"\r\n\r\n{").startswith(b"HTTP/1.1 400 ")


def test_large_bodies_on_a_kept_alive_connection_are_not_heads(sim: Sim) -> None:
    """36K-token prompts, one after another on one connection: a body's last read is
    never counted as the next request's head (it once answered 431)."""
    prompt = "word " * 36000
    body = {"model": "servekit-sim", "prompt": prompt, "max_tokens": 2, "stream": True}
    with sim(max_model_len=65536) as url, httpx.Client() as client:
        codes = [client.post(f"{url}/v1/completions", json=body).status_code for _ in range(3)]
    assert codes == [200, 200, 200]
