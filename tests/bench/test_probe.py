"""Probing an endpoint that answers like engines other than vLLM: other /version and
/v1/models shapes, /tokenize answering with a token list or not at all, no usage chunk."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

from servekit.bench.client import BenchClient
from servekit.bench.probe import EndpointInfo, probe_endpoint
from servekit.bench.prompts import PromptFactory
from servekit.package.models import Api
from tests.fakehttp import QuietHandler, serving

MISSING = object()  # a route that answers 404
TOKEN_LIST = object()  # /tokenize answers {"tokens": [...]}: one per word, plus 2


class _Engine(QuietHandler):
    """GET routes answer their configured JSON; POST /v1/completions streams two tokens."""

    routes: ClassVar[dict[str, Any]] = {}
    usage: ClassVar[bool] = True

    def do_GET(self) -> None:  # noqa: N802 (http.server names it)
        self._answer(self.routes.get(self.path, MISSING))

    def do_POST(self) -> None:  # noqa: N802 (http.server names it)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        words = len(body["prompt"].split())
        if self.path == "/tokenize":
            answer = self.routes.get("/tokenize", MISSING)
            return self._answer({"tokens": [7] * (words + 2)} if answer is TOKEN_LIST else answer)
        events = [{"choices": [{"index": 0, "text": t}]} for t in ("a", "b")]
        events.append({"choices": [{"index": 0, "text": "", "finish_reason": "length"}]})
        if self.usage:
            usage = {"prompt_tokens": words + 3, "completion_tokens": 2}
            events.append({"choices": [], "usage": usage})
        data = b"".join(b"data: %s\n\n" % json.dumps(e).encode() for e in events)
        self.send_body(200, "text/event-stream", data + b"data: [DONE]\n\n")

    def _answer(self, value: Any) -> None:
        if value is MISSING:
            self.send_body(404, "application/json", b'{"detail":"Not Found"}')
        else:
            self.send_body(200, "application/json", json.dumps(value).encode())


@pytest.fixture
def engine() -> Iterator[str]:
    _Engine.routes, _Engine.usage = {}, True
    with serving(_Engine) as url:
        yield url


def _probe(url: str) -> EndpointInfo:
    async def main() -> EndpointInfo:
        async with BenchClient(url, Api.COMPLETIONS, timeout_s=5.0) as client:
            return await probe_endpoint(client, "m", PromptFactory(seed=0))

    return asyncio.run(main())


def test_an_engine_named_only_by_its_models_and_counting_with_a_token_list(engine: str) -> None:
    """SGLang-like: /version has no engine field, /tokenize returns the tokens themselves."""
    _Engine.routes = {
        "/version": {"version": "0.4.6"},
        "/v1/models": {"data": [{"id": "m", "owned_by": "sglang"}, "not a model"]},
        "/tokenize": TOKEN_LIST,
    }
    info = _probe(engine)
    assert (info.engine_version, info.engine_name, info.simulator) == ("0.4.6", "sglang", False)
    assert info.served_models == ("m",)
    assert info.fit.source == "server /tokenize"
    assert info.fit.slope == pytest.approx(1.0) and info.fit.intercept == pytest.approx(2.0)


def test_without_tokenize_the_prompt_usage_of_two_probes_calibrates(engine: str) -> None:
    _Engine.routes = {"/version": "not an object", "/tokenize": {"detail": "no count here"}}
    info = _probe(engine)
    assert info.engine_version is None and info.engine_name is None
    assert info.served_models is None  # /v1/models did not answer
    assert info.fit.source == "server usage.prompt_tokens"
    assert info.fit.slope == pytest.approx(1.0) and info.fit.intercept == pytest.approx(3.0)


def test_without_tokenize_or_usage_lengths_are_uncalibrated_and_the_header_says_so(
    engine: str,
) -> None:
    _Engine.usage = False
    info = _probe(engine)
    assert not info.server_usage and info.fit.source.startswith("uncalibrated")
    assert any("sent no usage chunk" in note for note in info.notes)
    assert any("calibrated by uncalibrated" in note for note in info.notes)


def test_two_owners_of_the_models_name_no_engine(engine: str) -> None:
    _Engine.routes = {
        "/v1/models": {"data": [{"id": "a", "owned_by": "vllm"}, {"id": "b", "owned_by": "x"}]}
    }
    info = _probe(engine)
    assert info.engine_name is None and info.served_models == ("a", "b")
