"""The benchmark client: one per run, one coroutine per request.

Streaming requests go through :class:`~servekit.bench.transport.StreamPool`, the
harness's own HTTP/1.1 client, which reads the clock and parses server-sent events in
the socket's read callback; the few non-streaming calls (``/version``, ``/tokenize``)
use one ``httpx.AsyncClient``. Records are built after a request ends. Failures of any
kind (HTTP status, mid-stream error, malformed line, disconnect, timeout, wrong usage)
end in a :class:`Trace` with ``error`` set; nothing raises out of :meth:`BenchClient.send`.
"""

from __future__ import annotations

import functools
import json
import ssl
import time
from dataclasses import dataclass
from typing import Any

import httpx

from servekit import __version__
from servekit.bench.sse import StreamState
from servekit.bench.transport import Deadlines, StreamPool
from servekit.package.models import Api

# Every streaming request carries these. FastAPI servers (vLLM, `transformers serve`)
# answer 422 to a JSON body without `Content-Type: application/json`.
_HEADERS = {
    "User-Agent": f"servekit/{__version__}",
    "Accept": "text/event-stream",
    "Accept-Encoding": "identity",
    "Content-Type": "application/json",
}
_ERROR_BODY_CHARS = 300


def stream_headers() -> dict[str, str]:
    """The headers of every streaming request (for a :class:`StreamPool` built elsewhere)."""
    return dict(_HEADERS)


@dataclass(frozen=True)
class RequestSpec:
    """One request to send, its body already encoded."""

    id: str
    concurrency: int
    warmup: bool
    body: bytes
    prompt_tokens: int  # the target length, in server tokens
    output_tokens: int


@dataclass
class Trace:
    """What happened to one request; times are seconds after the run's monotonic zero."""

    spec: RequestSpec
    state: StreamState
    seq: int = 0
    t_start: float = 0.0
    t_send: float = 0.0
    t_end: float | None = None
    status: int | None = None
    error: str | None = None


def body_for(
    api: Api, model: str, prompt: str, output_tokens: int, *, fixed_length: bool
) -> dict[str, Any]:
    """The JSON body of a streaming request (usage asked for; fixed length if allowed)."""
    body: dict[str, Any] = {"model": model}
    match api:
        case Api.COMPLETIONS:
            body["prompt"] = prompt
        case Api.CHAT:
            body["messages"] = [{"role": "user", "content": prompt}]
    body |= {"max_tokens": output_tokens, "stream": True}
    body["stream_options"] = {"include_usage": True}
    if fixed_length:
        body |= {"ignore_eos": True, "min_tokens": output_tokens}
    return body


def encode(body: dict[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()


def api_path(api: Api) -> str:
    match api:
        case Api.COMPLETIONS:
            return "/v1/completions"
        case Api.CHAT:  # pragma: no branch
            return "/v1/chat/completions"


@functools.cache
def tls_context() -> ssl.SSLContext:
    """httpx's default TLS context (certifi's roots), built once a process: each build reads
    the CA bundle, tens of milliseconds that a tuning session paid per run."""
    return httpx.create_ssl_context()


class BenchClient:
    """Sends streaming requests to one API path and records their timing.

    Use as an async context manager: it owns the run's connections.
    """

    def __init__(
        self,
        endpoint: str,
        api: Api,
        *,
        timeout_s: float,
        connect_timeout_s: float = 30.0,
        limits: Deadlines | None = None,
        streams: StreamPool | None = None,
    ) -> None:
        """``streams`` replaces the default pool (a test's, or one with TLS settings)."""
        self.api = api
        self.path = api_path(api)
        self.streams = streams or StreamPool(
            endpoint,
            stream_headers(),
            timeout_s=timeout_s,
            connect_timeout_s=connect_timeout_s,
            limits=limits,
        )
        timeout = httpx.Timeout(timeout_s, connect=connect_timeout_s)
        self.http = httpx.AsyncClient(
            base_url=endpoint.rstrip("/"),
            headers={"User-Agent": _HEADERS["User-Agent"]},
            timeout=timeout,
            verify=tls_context(),
        )
        self.sent = 0  # requests begun since the last reset: each trace's send order
        self.completed: list[Trace] = []  # traces since the last reset, as they complete

    def reset_count(self) -> None:
        """Start counting sends afresh (after the probes, before a run's first request)."""
        self.sent = 0
        self.completed = []

    async def __aenter__(self) -> BenchClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.streams.aclose()
        await self.http.aclose()

    async def send(self, spec: RequestSpec, t0: float) -> Trace:
        """Send one request; every failure is recorded on the trace, never raised.

        ``t_start`` is when the client began the request; ``t_send`` when its last byte
        was handed to the kernel, so the client's own queueing under load is not charged
        to the server's TTFT.
        """
        trace = Trace(spec=spec, state=StreamState(chat=self.api is Api.CHAT), seq=self.sent)
        self.sent += 1
        trace.t_start = time.perf_counter() - t0
        exchange = await self.streams.post(self.path, spec.body, trace.state, t0)
        trace.status, trace.t_end = exchange.status, exchange.t_end
        trace.t_send = exchange.t_send if exchange.t_send is not None else trace.t_start
        if exchange.error is not None:
            trace.error = exchange.error
        elif exchange.status != 200:
            text = exchange.body.decode("utf-8", "replace")
            trace.error = f"HTTP {exchange.status}: {text[:_ERROR_BODY_CHARS]}"
        else:
            trace.error = stream_problem(trace.state)
        self.completed.append(trace)
        return trace


def stream_problem(state: StreamState) -> str | None:
    """Why a stream that ended cleanly is still not a valid response, if it is not."""
    if state.error is not None:
        return state.error
    if not state.t_content:
        return "the response carried no content"
    if not state.done and state.finish_reason is None:
        return "the stream ended without a finish_reason or [DONE]"
    return usage_problem(state.usage, len(state.t_content))


def usage_problem(usage: dict[str, Any] | None, events: int) -> str | None:
    """Usage is wrong when malformed, or when it counts fewer tokens than content events."""
    if usage is None:
        return None
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if not _count(prompt) or not _count(completion):
        return f"malformed usage: {json.dumps(usage)[:120]}"
    assert isinstance(completion, int)
    if completion < events:
        return (
            f"wrong usage: {completion} completion tokens reported but {events} "
            "content events arrived"
        )
    return None


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
