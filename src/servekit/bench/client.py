"""The streaming client: one ``httpx.AsyncClient`` per run, one coroutine per request.

The hot path per received chunk is: read the monotonic clock, split lines, ``json.loads``
each ``data:`` line, append the arrival time of each content event. Everything else
(records, validation) happens after the request ends. Failures of any kind (HTTP
status, mid-stream error, malformed line, disconnect, timeout, wrong usage) end in a
:class:`Trace` with ``error`` set; nothing raises out of :meth:`BenchClient.send`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import httpx

from servekit.bench.sse import StreamState
from servekit.bench.transport import SENT_AT, StreamTransport
from servekit.package.models import Api

_HEADERS = {
    "Accept": "text/event-stream",
    "Accept-Encoding": "identity",
    "Content-Type": "application/json",
}
_ERROR_BODY_CHARS = 300


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
        case Api.CHAT:
            return "/v1/chat/completions"


def make_http_client(
    endpoint: str,
    *,
    concurrency: int,
    timeout_s: float,
    transport: httpx.AsyncBaseTransport | None = None,
) -> httpx.AsyncClient:
    """The run's one client: HTTP/1.1 keep-alive, a connection per stream, explicit timeouts.

    The default transport is :class:`~servekit.bench.transport.StreamTransport`; any
    ``httpx.AsyncBaseTransport`` may be injected instead (tests, proxies, mocks).
    """
    limits = httpx.Limits(
        max_connections=concurrency + 8,
        max_keepalive_connections=concurrency + 8,
        keepalive_expiry=300.0,
    )
    timeout = httpx.Timeout(connect=30.0, read=timeout_s, write=timeout_s, pool=timeout_s)
    if transport is None:
        transport = StreamTransport(keepalive_expiry=limits.keepalive_expiry or 300.0)
    return httpx.AsyncClient(
        base_url=endpoint.rstrip("/"), transport=transport, timeout=timeout, limits=limits
    )


class BenchClient:
    """Sends streaming requests to one API path and records their timing."""

    def __init__(self, http: httpx.AsyncClient, api: Api) -> None:
        self.http = http
        self.api = api
        self.path = api_path(api)

    async def send(self, spec: RequestSpec, t0: float) -> Trace:
        """Send one request; every failure is recorded on the trace, never raised.

        ``t_start`` is when the client began the request; ``t_send`` when its last byte
        was written to the socket, so the client's own queueing under load is not charged
        to the server's TTFT. :class:`StreamTransport` reports that write time; with
        another transport httpcore's ``send_request_body.complete`` trace event (a little
        later under load) is used; with neither, ``t_send`` is ``t_start``.
        """
        trace = Trace(spec=spec, state=StreamState(chat=self.api is Api.CHAT))
        clock = time.perf_counter
        trace.t_start = trace.t_send = clock() - t0

        async def on_event(name: str, info: dict[str, Any]) -> None:
            if name == "http11.send_request_body.complete":
                trace.t_send = clock() - t0

        try:
            async with self.http.stream(
                "POST",
                self.path,
                content=spec.body,
                headers=_HEADERS,
                extensions={"trace": on_event},
            ) as response:
                trace.status = response.status_code
                sent_at = response.extensions.get(SENT_AT)
                if sent_at:
                    trace.t_send = sent_at - t0
                if response.status_code != 200:
                    text = (await response.aread()).decode("utf-8", "replace")
                    trace.error = f"HTTP {response.status_code}: {text[:_ERROR_BODY_CHARS]}"
                else:
                    await _consume(response, trace.state, t0)
                trace.t_end = clock() - t0
        except httpx.TimeoutException as exc:
            trace.error = (
                f"timeout ({type(exc).__name__}) after {clock() - t0 - trace.t_send:.1f} s"
            )
        except (httpx.HTTPError, OSError) as exc:
            trace.error = f"connection failed ({type(exc).__name__}): {exc}"
        if trace.error is None:
            trace.error = stream_problem(trace.state)
        return trace


async def _consume(response: httpx.Response, state: StreamState, t0: float) -> None:
    clock = time.perf_counter
    async for data in response.aiter_raw():
        state.feed(data, clock() - t0)
        if state.error is not None:
            return
    state.close()


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
