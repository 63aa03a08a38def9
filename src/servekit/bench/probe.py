"""What the harness learns about an endpoint before measuring.

Steps:
  1. ``GET /version``: the engine version, and whether it is servekit's simulator;
     ``GET /v1/models``: the served model ids, and the engine that owns them;
  2. a small probe request asking for a fixed output length (``ignore_eos``,
     ``min_tokens``); on HTTP 400/422 it is retried once without them, and the run
     header says so;
  3. prompt-length calibration: the server's ``/tokenize`` count of two probe prompts,
     else their ``usage.prompt_tokens``, else none (and the header says so).

Probe prompts have their own ids and are never part of the evidence.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx

from servekit.bench.client import BenchClient, RequestSpec, Trace, body_for, encode
from servekit.bench.prompts import PromptFactory, TokenFit
from servekit.bench.sim.config import ENGINE_NAME
from servekit.errors import BenchError
from servekit.package.models import Api

_PROBE_UNITS = (16, 256)
_PROBE_OUTPUT = 2


@dataclass(frozen=True)
class EndpointInfo:
    engine_version: str | None
    engine_name: str | None
    served_models: tuple[str, ...] | None
    simulator: bool
    fixed_length: bool
    server_usage: bool
    fit: TokenFit
    notes: tuple[str, ...]


async def engine_version(http: httpx.AsyncClient) -> tuple[str | None, bool]:
    """(version string, is servekit's simulator) from ``/version``, when it answers."""
    try:
        response = await http.get("/version")
        data: Any = response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None, False
    if not isinstance(data, dict):
        return None, False
    version = data.get("version")
    simulator = data.get("simulator") is True or data.get("engine") == ENGINE_NAME
    return (str(version) if version is not None else None), simulator


async def _get_json(http: httpx.AsyncClient, path: str) -> Any:
    try:
        response = await http.get(path)
        return response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None


async def engine_name(http: httpx.AsyncClient) -> str | None:
    """The engine's name: ``/version``'s ``engine``, else ``/v1/models``' ``owned_by``."""
    version = await _get_json(http, "/version")
    if isinstance(version, dict) and isinstance(version.get("engine"), str):
        return str(version["engine"])
    entries = _model_entries(await _get_json(http, "/v1/models"))
    owners = {m["owned_by"] for m in entries if isinstance(m.get("owned_by"), str)}
    return owners.pop() if len(owners) == 1 else None


async def served_models(http: httpx.AsyncClient) -> tuple[str, ...] | None:
    """Model ids ``/v1/models`` lists; None when it does not answer."""
    data = await _get_json(http, "/v1/models")
    if not isinstance(data, dict):
        return None
    return tuple(str(m["id"]) for m in _model_entries(data) if isinstance(m.get("id"), str))


def _model_entries(data: Any) -> list[dict[str, Any]]:
    entries = data.get("data") if isinstance(data, dict) else None
    return [m for m in entries if isinstance(m, dict)] if isinstance(entries, list) else []


class Prober:
    """Sends probe requests for one endpoint, API and model."""

    def __init__(self, client: BenchClient, model: str, factory: PromptFactory) -> None:
        self.client = client
        self.model = model
        self.factory = factory

    def _spec(self, name: str, units: int, fixed: bool) -> RequestSpec:
        prompt = self.factory.prompt(f"probe-{name}", units)
        body = body_for(self.client.api, self.model, prompt, _PROBE_OUTPUT, fixed_length=fixed)
        return RequestSpec(f"probe-{name}", 1, True, encode(body), units, _PROBE_OUTPUT)

    async def send(self, name: str, units: int, fixed: bool) -> Trace:
        return await self.client.send(self._spec(name, units, fixed), time.perf_counter())

    async def negotiate(self) -> tuple[Trace, bool, list[str]]:
        """The first probe, with a fixed length if the server accepts it."""
        trace = await self.send("a", _PROBE_UNITS[0], True)
        if trace.status in (400, 422):
            notes = [
                f"the server rejected ignore_eos/min_tokens (HTTP {trace.status}); requests "
                "were retried without them, so output lengths are the engine's own and each "
                "request's length is checked against the requested one"
            ]
            retry = await self.send("a", _PROBE_UNITS[0], False)
            return _require(retry), False, notes
        return _require(trace), True, []

    async def calibrate(self, first: Trace, fixed: bool) -> TokenFit:
        """Server tokens per prompt unit: /tokenize, else usage of two probes."""
        counts = [await self._tokenize(n) for n in _PROBE_UNITS]
        if all(c is not None for c in counts):
            points = [(u, c) for u, c in zip(_PROBE_UNITS, counts, strict=True) if c is not None]
            return TokenFit.from_points(points[0], points[1], "server /tokenize")
        second = _require(await self.send("b", _PROBE_UNITS[1], fixed))
        usages = [_prompt_usage(first), _prompt_usage(second)]
        if usages[0] is not None and usages[1] is not None:
            a, b = (_PROBE_UNITS[0], usages[0]), (_PROBE_UNITS[1], usages[1])
            return TokenFit.from_points(a, b, "server usage.prompt_tokens")
        return TokenFit()

    async def _tokenize(self, units: int) -> int | None:
        prompt = self.factory.prompt(f"probe-{units}", units)
        body: dict[str, Any] = {"model": self.model}
        if self.client.api is Api.CHAT:
            body["messages"] = [{"role": "user", "content": prompt}]
        else:
            body["prompt"] = prompt
        try:
            response = await self.client.http.post("/tokenize", json=body)
            data: Any = response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None
        if isinstance(data, dict) and isinstance(data.get("count"), int):
            return int(data["count"])
        if isinstance(data, dict) and isinstance(data.get("tokens"), list):
            return len(data["tokens"])
        return None


def _require(trace: Trace) -> Trace:
    if trace.error is not None:
        raise BenchError(
            f"the endpoint did not answer a probe request: {trace.error}",
            hint="check --endpoint, --model and --api; the server must stream "
            "OpenAI-compatible server-sent events",
        )
    return trace


def _prompt_usage(trace: Trace) -> int | None:
    usage = trace.state.usage
    value = usage.get("prompt_tokens") if usage else None
    return value if isinstance(value, int) else None


async def probe_endpoint(client: BenchClient, model: str, factory: PromptFactory) -> EndpointInfo:
    """Run every probe step (see the module docstring)."""
    version, simulator = await engine_version(client.http)
    prober = Prober(client, model, factory)
    first, fixed, notes = await prober.negotiate()
    fit = await prober.calibrate(first, fixed)
    server_usage = first.state.usage is not None
    if not server_usage:
        notes.append(
            "the server sent no usage chunk (stream_options.include_usage ignored): token "
            "counts are the client's own (usage_source: client)"
        )
    notes.append(f"prompt lengths in {factory.unit_name}, calibrated by {fit.source}")
    name, models = await engine_name(client.http), await served_models(client.http)
    return EndpointInfo(version, name, models, simulator, fixed, server_usage, fit, tuple(notes))
