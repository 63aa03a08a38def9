"""The simulator's engine: admission with a concurrency limit, exact per-token timing.

Each streaming request is a :class:`Stream` driven by callbacks at absolute
monotonic deadlines (:mod:`servekit.bench.sim.timer`: no coroutine per token, no drift). Writes go straight to the
connection's transport, already framed as HTTP/1.1 chunks of server-sent events.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import deque
from dataclasses import dataclass
from typing import Protocol

from servekit.bench.prompts import VOCAB
from servekit.bench.sim.config import Fault, SimConfig
from servekit.bench.sim.timer import Entry, PreciseTimer

_WORDS = tuple(f" {w}".encode() for w in VOCAB[-20:])  # what the simulator "generates"
DONE = b"data: [DONE]\n\n"
_MIDSTREAM = frozenset({Fault.MIDSTREAM_ERROR, Fault.MALFORMED, Fault.DISCONNECT, Fault.STALL})


def chunk(data: bytes) -> bytes:
    """Frame ``data`` as one HTTP/1.1 chunk."""
    return b"%x\r\n%s\r\n" % (len(data), data)


class Sink(Protocol):
    """Where a stream writes: the HTTP connection that asked for it."""

    def write(self, data: bytes) -> None: ...

    def finish(self, *, close: bool = False) -> None: ...


@dataclass(frozen=True)
class GenRequest:
    """One parsed generation request."""

    index: int
    chat: bool
    model: str
    prompt_tokens: int
    output_tokens: int
    include_usage: bool
    fault: Fault | None


@dataclass
class Counters:
    requests: int = 0
    prompt_tokens: int = 0
    generation_tokens: int = 0
    faults: int = 0
    # How late tokens went out after their deadline: the simulator's own error, which a
    # client measures too (the benchmarks subtract it to judge the client alone).
    first_tokens: int = 0
    first_token_late_s: float = 0.0
    token_late_s: float = 0.0
    token_late_max_s: float = 0.0

    def late(self, seconds: float, first: bool) -> None:
        self.token_late_s += seconds
        self.token_late_max_s = max(self.token_late_max_s, seconds)
        if first:
            self.first_tokens += 1
            self.first_token_late_s += seconds


class Engine:
    """Admission and bookkeeping shared by every connection of one server."""

    def __init__(self, config: SimConfig, loop: asyncio.AbstractEventLoop) -> None:
        self.config = config
        self.timer = PreciseTimer(loop)
        self.running = 0
        self.waiting: deque[Stream] = deque()
        self.counters = Counters()
        self.scale = config.perf.host_factor() if config.perf else 1.0

    def _room(self, stream: Stream) -> bool:
        """Whether ``stream`` may start now: under the concurrency limit, and under the
        performance model's batch and KV-cache limits when it is on."""
        limit, perf = self.config.max_concurrency, self.config.perf
        if limit and self.running >= limit:
            return False
        tokens = stream.request.prompt_tokens + stream.request.output_tokens
        return perf is None or self.running < perf.slots(tokens)

    def submit(self, stream: Stream) -> None:
        self.counters.requests += 1
        self.counters.prompt_tokens += stream.request.prompt_tokens
        if stream.request.fault is not None:
            self.counters.faults += 1
        if self._room(stream):
            self._admit(stream, stream.arrival)  # the clock started when its first byte arrived
        else:
            self.waiting.append(stream)

    def _admit(self, stream: Stream, start: float) -> None:
        self.running += 1
        stream.admit(start)

    def release(self) -> None:
        self.running -= 1
        while self.waiting and self._room(self.waiting[0]):
            stream = self.waiting.popleft()
            if not stream.closed:
                self._admit(stream, time.monotonic())


class _Frames:
    """Pre-encoded pieces of one request's server-sent events."""

    def __init__(self, request: GenRequest, created: int) -> None:
        rid = f"{'chatcmpl' if request.chat else 'cmpl'}-{request.index}"
        obj = "chat.completion.chunk" if request.chat else "text_completion"
        head = f'{{"id":"{rid}","object":"{obj}","created":{created},"model":{json.dumps(request.model)},'
        self.head = head.encode()
        if request.chat:
            self.pre = self.head + b'"choices":[{"index":0,"delta":{"content":"'
            self.post = b'"},"logprobs":null,"finish_reason":null}]}'
        else:
            self.pre = self.head + b'"choices":[{"index":0,"text":"'
            self.post = b'","logprobs":null,"finish_reason":null}]}'
        self.chat = request.chat

    def event(self, payload: bytes) -> bytes:
        return chunk(b"data: " + payload + b"\n\n")

    def token(self, word: bytes) -> bytes:
        return chunk(b"data: " + self.pre + word + self.post + b"\n\n")

    def role(self) -> bytes:
        body = b'"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}'
        return self.event(self.head + body)

    def finish(self, reason: str) -> bytes:
        delta = b'"delta":{}' if self.chat else b'"text":""'
        body = b'"choices":[{"index":0,%s,"logprobs":null,"finish_reason":"%s"}]}' % (
            delta,
            reason.encode(),
        )
        return self.event(self.head + body)

    def usage(self, prompt: int, completion: int) -> bytes:
        usage = {"prompt_tokens": prompt, "completion_tokens": completion}
        usage["total_tokens"] = prompt + completion
        return self.event(self.head + b'"choices":[],"usage":' + json.dumps(usage).encode() + b"}")


class Stream:
    """One streaming response, from admission to the last chunk."""

    def __init__(
        self, engine: Engine, sink: Sink, request: GenRequest, created: int, arrival: float
    ) -> None:
        self.engine = engine
        self.arrival = arrival
        self.sink = sink
        self.request = request
        self.frames = _Frames(request, created)
        self.rng = random.Random(f"{engine.config.seed}:{request.index}")
        self.sent = 0
        self.deadline = 0.0
        self.admitted = False
        self.closed = False
        self.handle: Entry | None = None
        self.pending_fault = request.fault if request.fault in _MIDSTREAM else None

    def start(self) -> None:
        """Called on arrival: chat sends its role-only chunk now, before any content."""
        if self.request.chat and self.engine.config.role_chunk:
            self.sink.write(self.frames.role())
        self.engine.submit(self)

    def admit(self, start: float) -> None:
        """Prefill runs from ``start`` (arrival, or the end of queueing)."""
        self.admitted = True
        ttft = self.engine.config.ttft_s(self.request.prompt_tokens)
        self.deadline = start + ttft * self.engine.scale
        self.handle = self.engine.timer.at(self.deadline, self._emit)

    def _next_interval(self) -> float:
        config = self.engine.config
        base = config.interval_s(self.engine.running) * self.engine.scale
        if config.jitter:
            base *= 1.0 + config.jitter * (2.0 * self.rng.random() - 1.0)
        return base

    def _emit(self) -> None:
        if self.closed:
            return
        if self.pending_fault is not None and self.sent == self.request.output_tokens // 2:
            fault, self.pending_fault = self.pending_fault, None
            self._inject(fault)
            return
        self.sink.write(self.frames.token(_WORDS[(self.sent + self.request.index) % len(_WORDS)]))
        counters = self.engine.counters
        counters.late(time.monotonic() - self.deadline, self.sent == 0)
        self.sent += 1
        counters.generation_tokens += 1
        if self.sent >= self.request.output_tokens:
            self._finish()
            return
        self.deadline += self._next_interval()
        self.handle = self.engine.timer.at(self.deadline, self._emit)

    def _finish(self) -> None:
        request = self.request
        reason = "length" if request.output_tokens > 0 else "stop"
        out = [self.frames.finish(reason)]
        if request.include_usage and not self.engine.config.no_usage:
            reported = self.sent // 2 if request.fault is Fault.WRONG_USAGE else self.sent
            out.append(self.frames.usage(request.prompt_tokens, reported))
        out.append(chunk(DONE))
        out.append(b"0\r\n\r\n")
        self.sink.write(b"".join(out))
        self._close()
        self.sink.finish()

    def _inject(self, fault: Fault) -> None:
        match fault:
            case Fault.MIDSTREAM_ERROR:
                error = b'{"error":{"message":"simulated engine failure","type":"InternalServerError","code":500}}'
                self.sink.write(self.frames.event(error) + chunk(DONE) + b"0\r\n\r\n")
                self._close()
                self.sink.finish()
            case Fault.MALFORMED:
                self.sink.write(chunk(b"this is not a server-sent event\n\n"))
                self._emit()  # keep streaming afterwards: the client must notice the line
            case Fault.DISCONNECT:
                self._close()
                self.sink.finish(close=True)
            case Fault.STALL:
                pass  # stay admitted and silent until the client gives up
            case Fault.WRONG_USAGE | Fault.HTTP_500:
                raise AssertionError(f"{fault} is not injected mid-stream")

    def _close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.handle is not None:
            self.handle.cancel()
        if self.admitted:
            self.engine.release()

    def abort(self) -> None:
        """The client went away."""
        self._close()
