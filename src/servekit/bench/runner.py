"""``servekit bench run``: measure a grid of concurrencies, write one evidence file per run.

Steps of one invocation:
  1. build the prompt factory (seeded word pool, or the model's tokenizer);
  2. per run, open one client (its own connections); on the first run, probe the endpoint (version,
     fixed-length support, prompt calibration: :mod:`servekit.bench.probe`);
  3. per concurrency: encode every request body before the clock matters, run the
     warmups (closed loop), then the measured requests (closed loop, or Poisson
     arrivals capped at the concurrency);
  4. write ``OUT/run-N.jsonl``: the run header, then one record per request.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import gc
import random
import signal
import socket
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from servekit import __version__
from servekit.bench.client import (
    BenchClient,
    RequestSpec,
    Trace,
    body_for,
    encode,
)
from servekit.bench.loop import LoopKind, resolve, run
from servekit.bench.probe import EndpointInfo, probe_endpoint
from servekit.bench.prompts import PromptFactory, count_completion
from servekit.bench.transport import Deadlines
from servekit.errors import BenchError, RunInterruptedError
from servekit.package.evidence import (
    RequestRecord,
    RunHeader,
    ServeConfig,
    WorkloadSpec,
    dump_evidence,
    load_evidence,
)
from servekit.package.models import Api
from servekit.progress import Tracker

PARTIAL = "PARTIAL"
"""The first word of the header note of a run that was interrupted."""


class RunConfig(BaseModel):
    """Everything ``servekit bench run`` was asked to do."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    endpoint: str
    model: str
    api: Api = Api.COMPLETIONS
    prompt_min: int = Field(ge=1)
    prompt_max: int = Field(ge=1)
    output_tokens: int = Field(ge=1)
    concurrencies: tuple[int, ...] = Field(min_length=1)
    requests: int = Field(ge=1)
    warmup: int = Field(default=0, ge=0)
    seed: int = 0
    runs: int = Field(default=1, ge=1)
    gpus: int = Field(default=1, ge=1)
    request_rate: float | None = Field(default=None, gt=0)
    out: Path
    timeout_s: float = Field(default=600.0, gt=0, description="Total deadline per request.")
    connect_timeout_s: float = Field(default=30.0, gt=0)
    first_byte_timeout_s: float | None = Field(default=None, gt=0)
    max_error_rate: float = Field(default=0.0, ge=0, le=1)
    tokenizer: Path | None = None
    simulator: bool = False
    hardware: str | None = Field(default=None, description="e.g. '1x H200', for the header.")
    serve: ServeConfig | None = None
    loop: LoopKind = LoopKind.AUTO
    force: bool = False
    resume: bool = False

    @model_validator(mode="after")
    def _check(self) -> RunConfig:
        if self.prompt_min > self.prompt_max:
            raise ValueError(
                f"input tokens MIN ({self.prompt_min}) is above MAX ({self.prompt_max})"
            )
        if any(c < 1 for c in self.concurrencies):
            raise ValueError("every concurrency must be at least 1")
        return self

    @property
    def total_requests(self) -> int:
        return len(self.concurrencies) * (self.requests + self.warmup) * self.runs

    def run_file(self, number: int) -> Path:
        return self.out / f"run-{number}.jsonl"

    @property
    def workload(self) -> WorkloadSpec:
        return WorkloadSpec(
            prompt_min=self.prompt_min,
            prompt_max=self.prompt_max,
            output_tokens=self.output_tokens,
            concurrencies=self.concurrencies,
            requests=self.requests,
            warmup=self.warmup,
            request_rate=self.request_rate,
        )


def run_benchmark(config: RunConfig, tracker: Tracker) -> list[Path]:
    """Run the whole grid ``config.runs`` times; returns the evidence files written.

    Interrupted (Ctrl-C, or SIGTERM), the run in progress is written with the requests
    that completed and a PARTIAL note in its header, and :class:`RunInterruptedError`
    names every file kept.
    """
    targets = [config.run_file(n) for n in range(1, config.runs + 1)]
    existing = [str(p) for p in targets if p.exists()]
    if existing and not (config.force or config.resume):
        raise BenchError(
            f"evidence already exists: {', '.join(existing)}",
            hint="choose another --out, or pass --force to overwrite",
        )
    config.out.mkdir(parents=True, exist_ok=True)  # the CLI refused a missing parent of --out
    factory = PromptFactory(config.seed, config.tokenizer)
    written: list[Path] = []
    with _sigterm_interrupts():
        try:
            run(_all_runs(config, factory, tracker, written), config.loop)
        except KeyboardInterrupt as exc:
            kept = ", ".join(str(p) for p in written) or "no file (no request had completed)"
            raise RunInterruptedError(
                f"interrupted; kept {kept}",
                hint="the interrupted run's header says PARTIAL; run the same command with "
                "--resume to keep the whole runs and measure the rest",
            ) from exc
    return written


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM ends a run as Ctrl-C does (what was measured is kept), on the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _complete(path: Path) -> bool:
    """Whether ``path`` holds a whole run (``--resume`` keeps it; a PARTIAL one is re-run)."""
    if not path.is_file():
        return False
    header = load_evidence(path).header
    return not any(note.startswith(PARTIAL) for note in header.notes)


def _client(config: RunConfig) -> BenchClient:
    """A client whose every request ends by --timeout, whatever the server streams."""
    limits = Deadlines(total_s=config.timeout_s, first_byte_s=config.first_byte_timeout_s)
    return BenchClient(
        config.endpoint,
        config.api,
        timeout_s=config.timeout_s,
        connect_timeout_s=config.connect_timeout_s,
        limits=limits,
    )


async def _all_runs(
    config: RunConfig, factory: PromptFactory, tracker: Tracker, written: list[Path]
) -> None:
    info: EndpointInfo | None = None
    for number in range(1, config.runs + 1):
        if config.resume and _complete(config.run_file(number)):
            written.append(config.run_file(number))  # kept from the interrupted invocation
            continue
        async with _client(config) as client:
            if info is None:
                info = await probe_endpoint(client, config.model, factory)
            text = await _one_run(config, number, client, factory, info, tracker, written)
        path = config.run_file(number)
        path.write_text(text, encoding="utf-8")
        written.append(path)


async def _one_run(
    config: RunConfig,
    number: int,
    client: BenchClient,
    factory: PromptFactory,
    info: EndpointInfo,
    tracker: Tracker,
    written: list[Path],
) -> str:
    run_id = f"run-{number}"
    client.reset_count()
    t0, started = time.perf_counter(), dt.datetime.now(dt.UTC)
    traces: list[Trace] = []

    def evidence(done: Sequence[Trace], partial: str | None = None) -> str:
        ended = started + dt.timedelta(seconds=time.perf_counter() - t0)
        records = [to_record(t, run_id, factory) for t in done]
        header = _header(config, run_id, info, factory, records, (started, ended))
        notes = header.notes if partial is None else (*header.notes, partial)
        header = header.model_copy(update={"requests_sent": client.sent, "notes": notes})
        return dump_evidence(header, records)

    try:
        for concurrency in config.concurrencies:
            specs = build_specs(config, factory, info, number, concurrency)
            traces += await _measure_group(config, client, specs, concurrency, t0, tracker)
    except asyncio.CancelledError:
        done = list(client.completed)
        if done:
            measured = sum(not t.spec.warmup for t in done)
            note = (
                f"{PARTIAL}: interrupted after {measured} of "
                f"{len(config.concurrencies) * config.requests} measured requests; only "
                "requests that completed are recorded"
            )
            path = config.run_file(number)
            path.write_text(evidence(done, note), encoding="utf-8")
            written.append(path)
        raise
    return evidence(traces)


# --- requests ---------------------------------------------------------------------------


def build_specs(
    config: RunConfig, factory: PromptFactory, info: EndpointInfo, run_no: int, concurrency: int
) -> list[RequestSpec]:
    """Warmups then measured requests of one group, bodies encoded in advance.

    Prompt lengths depend on the seed, concurrency and index only (so runs are
    comparable); the text also depends on the run (so no run hits another's cache).
    """
    specs = []
    for kind, count in (("w", config.warmup), ("m", config.requests)):
        for i in range(count):
            key = f"c{concurrency}-{kind}{i:04d}"
            target = random.Random(f"{config.seed}:{key}").randint(
                config.prompt_min, config.prompt_max
            )
            prompt = factory.prompt(f"r{run_no}-{key}", info.fit.units_for(target))
            body = body_for(
                config.api,
                config.model,
                prompt,
                config.output_tokens,
                fixed_length=info.fixed_length,
            )
            specs.append(
                RequestSpec(
                    f"r{run_no}-{key}",
                    concurrency,
                    kind == "w",
                    encode(body),
                    target,
                    config.output_tokens,
                )
            )
    return specs


async def _measure_group(
    config: RunConfig,
    client: BenchClient,
    specs: Sequence[RequestSpec],
    concurrency: int,
    t0: float,
    tracker: Tracker,
) -> list[Trace]:
    warm = [s for s in specs if s.warmup]
    measured = [s for s in specs if not s.warmup]
    gc.collect()
    gc.freeze()  # keep the collector away from the long-lived bodies while measuring
    try:
        traces = await closed_loop(client, warm, concurrency, t0, tracker)
        if config.request_rate is None:
            traces += await closed_loop(client, measured, concurrency, t0, tracker)
        else:
            rng = random.Random(f"{config.seed}:arrivals:c{concurrency}")
            traces += await poisson(
                client, measured, concurrency, config.request_rate, rng, t0, tracker
            )
    finally:
        gc.unfreeze()
    return traces


async def closed_loop(
    client: BenchClient, specs: Sequence[RequestSpec], concurrency: int, t0: float, tracker: Tracker
) -> list[Trace]:
    """``concurrency`` workers, each sending its next request as soon as one ends."""
    pending = iter(specs)
    traces: list[Trace] = []

    async def worker() -> None:
        for spec in pending:
            traces.append(await client.send(spec, t0))
            tracker.advance(1)

    await asyncio.gather(*(worker() for _ in range(min(concurrency, len(specs)))))
    return traces


async def poisson(
    client: BenchClient,
    specs: Sequence[RequestSpec],
    concurrency: int,
    rate: float,
    rng: random.Random,
    t0: float,
    tracker: Tracker,
) -> list[Trace]:
    """Poisson arrivals at ``rate`` per second, at most ``concurrency`` in flight."""
    gate = asyncio.Semaphore(concurrency)

    async def one(spec: RequestSpec) -> Trace:
        async with gate:
            trace = await client.send(spec, t0)
        tracker.advance(1)
        return trace

    tasks = []
    due = time.perf_counter()
    for spec in specs:
        due += rng.expovariate(rate)
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        tasks.append(asyncio.create_task(one(spec)))
    return list(await asyncio.gather(*tasks))


# --- records ---------------------------------------------------------------------------


def to_record(trace: Trace, run_id: str, factory: PromptFactory) -> RequestRecord:
    """The evidence record of a trace: server usage when valid, else the client's counts."""
    state, spec = trace.state, trace.spec
    usage = state.usage if trace.error is None else None
    if usage is not None:
        prompt, completion, source = usage["prompt_tokens"], usage["completion_tokens"], "server"
    else:
        prompt, completion, source = (
            spec.prompt_tokens,
            count_completion(state.pieces, factory),
            "client",
        )
    return RequestRecord(
        id=spec.id,
        run=run_id,
        concurrency=spec.concurrency,
        warmup=spec.warmup,
        seq=trace.seq,
        content_parts=("text",),
        t_start=trace.t_start,
        t_send=trace.t_send,
        t_first_event=state.t_first_event,
        t_first_content=state.t_first_content,
        t_content=tuple(state.t_content),
        t_end=trace.t_end,
        prompt_tokens=prompt,
        completion_tokens=completion,
        requested_output_tokens=spec.output_tokens,
        requested_prompt_tokens=spec.prompt_tokens,
        usage_source=source,
        http_status=trace.status,
        error=trace.error,
    )


def _header(
    config: RunConfig,
    run_id: str,
    info: EndpointInfo,
    factory: PromptFactory,
    records: Sequence[RequestRecord],
    window: tuple[dt.datetime, dt.datetime],
) -> RunHeader:
    sources = {r.usage_source for r in records if r.ok}
    usage = "mixed" if len(sources) > 1 else ("client" if sources == {"client"} else "server")
    notes = [*info.notes, f"client event loop: {resolve(config.loop).value}"]
    if config.request_rate is not None:
        notes.append(
            f"Poisson arrivals at {config.request_rate:g} requests/s, capped at the concurrency"
        )
    return RunHeader(
        run=run_id,
        run_uid=uuid.uuid4().hex,
        endpoint=config.endpoint,
        model=config.model,
        api="chat" if config.api is Api.CHAT else "completions",
        engine_version=info.engine_version,
        engine_name=info.engine_name,
        served_models=info.served_models,
        hardware=config.hardware,
        workload=config.workload,
        serve=config.serve,
        servekit_version=__version__,
        simulator=info.simulator or config.simulator,
        seed=config.seed,
        host=socket.gethostname(),
        gpus=config.gpus,
        started_at=window[0].isoformat(),
        ended_at=window[1].isoformat(),
        usage_source=usage,
        fixed_length=info.fixed_length,
        request_rate=config.request_rate,
        tokenizer=f"{factory.unit_name}; {info.fit.source}",
        notes=tuple(notes),
    )
