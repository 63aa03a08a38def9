"""The simulator's HTTP/1.1 server, on raw asyncio protocols for speed.

A small keep-alive HTTP/1.1 server: ``httptools`` (llhttp) frames the requests,
bodies by ``Content-Length``; responses carry either ``Content-Length`` or chunked
server-sent events. Like FastAPI
servers (vLLM, ``transformers serve``), it answers 422 to a body without a JSON
``Content-Type``. Routes:
``/v1/completions``, ``/v1/chat/completions``, ``/v1/models``, ``/tokenize``,
``/version``, ``/metrics`` and ``/health``.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httptools

from servekit import __version__
from servekit.bench.sim.config import ENGINE_NAME, Fault, SimConfig
from servekit.bench.sim.engine import Engine, GenRequest, Stream
from servekit.bench.sim.stamped import StampedServer, StampedTransport

_MAX_HEAD = 64 * 1024
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}
_REASONS |= {411: "Length Required", 422: "Unprocessable Entity", 431: "Too Large"}
_REASONS |= {500: "Internal Server Error"}
CHAT_TOKENS_PER_MESSAGE = 4
CHAT_TOKENS_PER_PROMPT = 3


def version_info() -> dict[str, object]:
    """What ``/version`` answers: it names the simulator so results are labelled."""
    return {"version": f"{ENGINE_NAME} {__version__}", "engine": ENGINE_NAME, "simulator": True}


def count_prompt_tokens(body: dict[str, Any]) -> int:
    """The simulator's tokenizer: whitespace-separated words (chat adds template tokens)."""
    if "messages" in body:
        messages = body["messages"]
        words = sum(len(str(m.get("content", "")).split()) for m in messages)
        return words + CHAT_TOKENS_PER_MESSAGE * len(messages) + CHAT_TOKENS_PER_PROMPT
    prompt = body.get("prompt", "")
    return len(prompt.split()) if isinstance(prompt, str) else len(prompt)


@dataclass(frozen=True)
class _Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    close: bool = False  # the client asked to close after the answer


class _HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class _Requests:
    """``httptools`` callbacks for the requests on one connection: whole requests, in order.

    Requests that arrive while one is being answered (pipelining) wait in ``ready``.
    """

    def __init__(self, conn: _Connection) -> None:
        self.conn = conn
        self.parser = httptools.HttpRequestParser(self)
        self.ready: deque[_Request] = deque()
        self.completed = 0  # requests parsed on this connection
        self._start()

    def _start(self) -> None:
        self.url = b""
        self.headers: dict[str, str] = {}
        self.body = bytearray()
        self.in_head = True
        self.head_size = 0

    def feed(self, data: bytes) -> None:
        """Parse ``data``; raises :class:`_HttpError` for a request the server refuses.

        A head still unfinished after 64 KiB is refused (llhttp sets no limit). Only
        reads that neither finished a request nor a head count towards it, so a large
        body is never mistaken for a head.
        """
        in_head, completed = self.in_head, self.completed
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            if isinstance(exc.__context__, _HttpError):  # raised by one of our callbacks
                raise exc.__context__ from None
            raise _HttpError(400, f"bad request: {exc}") from exc
        if in_head and self.in_head and completed == self.completed:
            self.head_size += len(data)
            if self.head_size > _MAX_HEAD:
                raise _HttpError(431, "request head too large")

    # --- httptools callbacks -------------------------------------------------------

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        key = name.decode("latin-1").lower()
        self.headers[key] = value.decode("latin-1").strip()
        if key == "transfer-encoding" and "chunked" in self.headers[key].lower():
            raise _HttpError(411, "send a Content-Length body")

    def on_headers_complete(self) -> None:
        self.in_head = False

    def on_body(self, body: bytes) -> None:
        self.body += body

    def on_message_complete(self) -> None:
        method = self.parser.get_method().decode("latin-1")
        path = self.url.decode("latin-1").split("?", 1)[0]
        close = not self.parser.should_keep_alive()
        self.ready.append(_Request(method, path, self.headers, bytes(self.body), close))
        self.completed += 1
        self._start()


class _Connection:
    """One client connection (a :class:`~servekit.bench.sim.stamped.StampedProtocol`).

    It answers one request at a time; :class:`_Requests` owns the HTTP framing.
    """

    def __init__(self, app: _App) -> None:
        self.app = app
        self.transport: StampedTransport | None = None
        self.requests = _Requests(self)
        self.busy = False
        self.close_after = False
        self.stream: Stream | None = None
        self.arrival = 0.0  # when the bytes read last arrived (kernel stamp): a request's clock

    def connection_made(self, transport: StampedTransport) -> None:
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        if self.stream is not None:
            self.stream.abort()
            self.stream = None
        self.transport = None

    def data_received(self, data: bytes, arrival: float) -> None:
        self.arrival = arrival  # a request's clock starts when its last byte arrived
        try:
            self.requests.feed(data)
        except _HttpError as exc:  # the framing is lost: answer once, then close
            self.busy = True
            self.respond_json(exc.status, {"error": str(exc)}, close=True)
            return
        self._process()

    def _process(self) -> None:
        ready = self.requests.ready
        while not self.busy and self.transport is not None and ready:
            request = ready.popleft()
            self.close_after = request.close
            self.busy = True
            self.app.dispatch(self, request)

    # --- the Sink protocol (used by streams) and plain responses --------------------

    def write(self, data: bytes) -> None:
        if self.transport is not None:
            self.transport.write(data)

    def finish(self, *, close: bool = False) -> None:
        self.stream = None
        self.busy = False
        if self.transport is None:
            return
        if close or self.close_after:
            self.transport.close()
            return
        self._process()

    def respond(self, status: int, content_type: str, body: bytes, *, close: bool = False) -> None:
        head = (
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
            f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        self.write(head.encode() + body)
        self.finish(close=close)

    def respond_json(self, status: int, obj: object, *, close: bool = False) -> None:
        self.respond(status, "application/json", json.dumps(obj).encode(), close=close)

    def start_stream(self, stream: Stream) -> None:
        self.stream = stream
        self.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        stream.start()


class _App:
    """Routes requests to handlers; owns the engine."""

    def __init__(self, config: SimConfig, loop: asyncio.AbstractEventLoop) -> None:
        self.config = config
        self.engine = Engine(config, loop)
        self.created = int(time.time())
        self.received = 0
        self.routes: dict[tuple[str, str], Callable[[_Connection, _Request], None]] = {
            ("GET", "/v1/models"): self._models,
            ("GET", "/version"): self._version,
            ("GET", "/health"): self._health,
            ("GET", "/metrics"): self._metrics,
            ("POST", "/tokenize"): self._tokenize,
            ("POST", "/v1/completions"): self._generate,
            ("POST", "/v1/chat/completions"): self._generate,
        }

    def dispatch(self, conn: _Connection, request: _Request) -> None:
        handler = self.routes.get((request.method, request.path))
        if handler is None:
            known = any(path == request.path for _, path in self.routes)
            status = 405 if known else 404
            conn.respond_json(status, _error(f"{request.method} {request.path} is not served"))
            return
        if request.body and not json_content_type(request.headers.get("content-type")):
            conn.respond_json(422, fastapi_body_error(request.body))
            return
        try:
            handler(conn, request)
        except _HttpError as exc:
            conn.respond_json(exc.status, _error(str(exc)))

    def _models(self, conn: _Connection, request: _Request) -> None:
        model = {"id": self.config.model, "object": "model", "created": self.created}
        model |= {"owned_by": ENGINE_NAME, "root": self.config.model}
        model["max_model_len"] = self.config.max_model_len
        conn.respond_json(200, {"object": "list", "data": [model]})

    def _version(self, conn: _Connection, request: _Request) -> None:
        conn.respond_json(200, version_info())

    def _health(self, conn: _Connection, request: _Request) -> None:
        conn.respond(200, "text/plain", b"")

    def _metrics(self, conn: _Connection, request: _Request) -> None:
        conn.respond(200, "text/plain; version=0.0.4", prometheus_text(self.engine).encode())

    def _tokenize(self, conn: _Connection, request: _Request) -> None:
        body = _json_body(request)
        if "messages" in body:
            words = " ".join(str(m.get("content", "")) for m in body["messages"]).split()
        else:
            words = str(body.get("prompt", "")).split()
        tokens = [zlib.crc32(w.encode()) % 32000 for w in words]
        count = count_prompt_tokens(body)
        tokens.extend([1] * (count - len(tokens)))
        out = {"count": count, "max_model_len": self.config.max_model_len, "tokens": tokens}
        conn.respond_json(200, out)

    def _generate(self, conn: _Connection, request: _Request) -> None:
        body = _json_body(request)
        gen = self._gen_request(request, body)
        if gen.fault is Fault.HTTP_500:
            conn.respond_json(500, _error("simulated internal server error"))
            return
        conn.start_stream(Stream(self.engine, conn, gen, self.created, conn.arrival))

    def _gen_request(self, request: _Request, body: dict[str, Any]) -> GenRequest:
        chat = request.path.endswith("/chat/completions")
        self._validate(body, chat)
        prompt_tokens = count_prompt_tokens(body)
        output = _output_tokens(self.config, body)
        if prompt_tokens + output > self.config.max_model_len:
            raise _HttpError(
                400, f"{prompt_tokens} prompt + {output} output tokens exceed max_model_len"
            )
        options = body.get("stream_options") or {}
        self.received += 1  # every generation request, answered or faulted: the fault cadence
        index = self.received
        return GenRequest(
            index=index,
            chat=chat,
            model=self.config.model,
            prompt_tokens=prompt_tokens,
            output_tokens=output,
            include_usage=bool(options.get("include_usage")),
            fault=self._fault(index, body),
        )

    def _validate(self, body: dict[str, Any], chat: bool) -> None:
        if body.get("model") != self.config.model:
            raise _HttpError(404, f"The model `{body.get('model')}` does not exist.")
        if body.get("stream") is not True:
            raise _HttpError(400, "the simulator serves streaming requests only (stream: true)")
        if chat and not isinstance(body.get("messages"), list):
            raise _HttpError(400, "messages must be a list")
        if not chat and not isinstance(body.get("prompt"), str):
            raise _HttpError(400, "prompt must be a string")
        if self.config.reject_ignore_eos and ("ignore_eos" in body or "min_tokens" in body):
            raise _HttpError(422, "Extra inputs are not permitted: ignore_eos, min_tokens")

    def _fault(self, index: int, body: dict[str, Any]) -> Fault | None:
        config = self.config
        if config.fault is None:
            return None
        if config.fault_match is not None:
            return config.fault if config.fault_match in json.dumps(body) else None
        return config.fault if index % config.fault_every == 0 else None


def _output_tokens(config: SimConfig, body: dict[str, Any]) -> int:
    requested = body.get("max_tokens")
    if requested is None:
        requested = body.get("max_completion_tokens")
    max_tokens = 16 if requested is None else int(requested)  # 0 is refused, not defaulted
    if max_tokens < 1:
        raise _HttpError(400, "max_tokens must be at least 1")
    min_tokens = int(body.get("min_tokens") or 0)
    if body.get("ignore_eos") or config.natural_length == 0:
        return max_tokens
    return min(max_tokens, max(config.natural_length, min_tokens))


def _json_body(request: _Request) -> dict[str, Any]:
    try:
        body = json.loads(request.body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise _HttpError(400, f"body is not JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise _HttpError(400, "body must be a JSON object")
    return body


def json_content_type(value: str | None) -> bool:
    """FastAPI's test (``strict_content_type``, the default since 0.132): ``application/json``
    or ``application/*+json``, parameters allowed; a missing header is not JSON."""
    media = (value or "").split(";", 1)[0].strip().lower()
    kind, _, subtype = media.partition("/")
    return kind == "application" and (subtype == "json" or subtype.endswith("+json"))


def fastapi_body_error(body: bytes) -> dict[str, object]:
    """What FastAPI answers (422) when a JSON body arrives without a JSON content type:
    the body stays bytes and fails validation against the request model."""
    detail = {
        "type": "model_attributes_type",
        "loc": ["body"],
        "msg": "Input should be a valid dictionary or object to extract fields from",
        "input": body.decode("utf-8", "replace"),
    }
    return {"detail": [detail]}


def _error(message: str) -> dict[str, object]:
    return {"error": {"message": message, "type": "BadRequestError", "code": 400}}


def prometheus_text(engine: Engine) -> str:
    c = engine.counters
    rows = [
        ("requests_total", "counter", "Generation requests received.", c.requests),
        ("requests_running", "gauge", "Requests admitted and generating.", engine.running),
        ("requests_waiting", "gauge", "Requests queued behind the limit.", len(engine.waiting)),
        ("prompt_tokens_total", "counter", "Prompt tokens received.", c.prompt_tokens),
        ("generation_tokens_total", "counter", "Tokens streamed.", c.generation_tokens),
        ("faults_injected_total", "counter", "Requests given a simulated fault.", c.faults),
        ("first_tokens_total", "counter", "First tokens streamed.", c.first_tokens),
        (
            "first_token_late_seconds_total",
            "counter",
            "Sum of how late first tokens were written after their deadline.",
            f"{c.first_token_late_s:.9f}",
        ),
        (
            "token_late_seconds_total",
            "counter",
            "Sum of how late every token was written after its deadline.",
            f"{c.token_late_s:.9f}",
        ),
        (
            "token_late_seconds_max",
            "gauge",
            "Latest a token was written after its deadline.",
            f"{c.token_late_max_s:.9f}",
        ),
    ]
    out = []
    for name, kind, help_text, value in rows:
        metric = f"servekit_sim_{name}"
        out += [f"# HELP {metric} {help_text}", f"# TYPE {metric} {kind}", f"{metric} {value}"]
    return "\n".join(out) + "\n"


class SimServer:
    """A running simulator bound to a host and port."""

    def __init__(self, config: SimConfig) -> None:
        self.config = config
        self.server: StampedServer | None = None

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        """Listen; returns the bound port (``port=0`` picks a free one)."""
        app = _App(self.config, asyncio.get_running_loop())
        self.server = StampedServer(lambda: _Connection(app))
        return self.server.start(host, port)

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None


async def serve_forever(
    config: SimConfig, host: str, port: int, on_ready: Callable[[int], None] | None = None
) -> None:
    """Serve until cancelled; ``on_ready`` receives the bound port."""
    server = SimServer(config)
    bound = await server.start(host, port)
    if on_ready is not None:
        on_ready(bound)
    try:
        await asyncio.Event().wait()
    finally:
        await server.close()


@contextmanager
def running_in_thread(config: SimConfig, host: str = "127.0.0.1") -> Iterator[str]:
    """Run a simulator on its own thread and event loop; yields its base URL."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    bound: list[int] = []
    server = SimServer(config)

    def _run() -> None:
        asyncio.set_event_loop(loop)
        bound.append(loop.run_until_complete(server.start(host, 0)))
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=_run, name="servekit-sim", daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield f"http://{host}:{bound[0]}"
    finally:
        asyncio.run_coroutine_threadsafe(server.close(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
