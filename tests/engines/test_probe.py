"""Probing a running engine by its own paths: fakes that answer as vLLM and SGLang do."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, ClassVar

import httpx
import pytest

from servekit.engines import sglang, vllm
from servekit.engines.probe import healthy, identify
from tests.fakehttp import QuietHandler, serving


class _Engine(QuietHandler):
    routes: ClassVar[dict[str, Any]] = {}

    def do_GET(self) -> None:  # noqa: N802 (http.server names it)
        value = self.routes.get(self.path)
        if value is None:
            self.send_body(404, "application/json", b'{"detail":"Not Found"}')
        else:
            self.send_body(200, "application/json", json.dumps(value).encode())


@pytest.fixture
def engine() -> Iterator[str]:
    _Engine.routes = {}
    with serving(_Engine) as url:
        yield url


SGLANG_0_4 = {  # SGLang 0.4: no /version; the version is in the server info
    "/health": {},
    "/get_server_info": {"model_path": "/models/m", "tp_size": 1, "version": "0.4.6.post1"},
    "/get_model_info": {"model_path": "/models/m", "is_generation": True},
    "/v1/models": {"object": "list", "data": [{"id": "/models/m", "owned_by": "sglang"}]},
}


def test_sglang_is_identified_by_its_server_info_and_model_info(engine: str) -> None:
    _Engine.routes = SGLANG_0_4
    found = identify(engine, sglang.SPEC)
    assert (found.version, found.owned_by, found.model_path) == (
        "0.4.6.post1",
        "sglang",
        "/models/m",
    )
    assert found.served_models == ("/models/m",)
    with httpx.Client(base_url=engine) as http:
        assert healthy(http, sglang.SPEC)


def test_a_newer_sglang_answers_version_first(engine: str) -> None:
    _Engine.routes = {**SGLANG_0_4, "/version": {"version": "0.5.2"}}
    assert identify(engine, sglang.SPEC).version == "0.5.2"


def test_vllm_reads_only_its_own_paths(engine: str) -> None:
    """vLLM has no /get_server_info: an answer there is not read as vLLM's version."""
    _Engine.routes = {
        "/get_server_info": {"version": "9.9"},
        "/v1/models": {"data": [{"id": "m", "owned_by": "vllm"}, {"id": 3}, "x"]},
    }
    found = identify(engine, vllm.SPEC)
    assert found.version is None and found.model_path is None
    assert (found.served_models, found.owned_by) == (("m",), "vllm")
    with httpx.Client(base_url=engine) as http:
        assert not healthy(http, vllm.SPEC)  # /health answers 404


def test_an_engine_that_is_not_there_states_nothing() -> None:
    found = identify("http://127.0.0.1:9", vllm.SPEC, timeout_s=0.5)
    assert found.version is None and found.served_models is None
    with httpx.Client(base_url="http://127.0.0.1:9", timeout=0.5) as http:
        assert not healthy(http, vllm.SPEC)
