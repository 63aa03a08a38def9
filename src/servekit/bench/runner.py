"""``servekit bench run``: measure a grid of concurrencies, write one evidence file per run.

Steps of one invocation:
  1. build the prompt factory (seeded word pool, or the model's tokenizer);
  2. per run, open one client (its own connections); on the first run, probe the endpoint (version,
     fixed-length support, prompt calibration: :mod:`servekit.bench.probe`);
  3. per concurrency: encode every request body before the clock matters, run the
     warmups (closed loop), then the measured requests (closed loop, or Poisson
     arrivals capped at the concurrency);
  4. journal each request's record as it completes (``OUT/run-N.jsonl.partial``:
     :mod:`servekit.bench.journal`), then write ``OUT/run-N.jsonl`` whole: the run
     header, then one record per request;
  5. keep ``OUT/manifest.json`` naming the files of this invocation
     (:mod:`servekit.bench.manifest`).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import gc
import random
import socket
import time
import uuid
from collections.abc import Callable, Sequence
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
from servekit.bench.journal import (
    PARTIAL,
    Journal,
    finish_partial,
    journal_path,
    measured_count,
    usage_source,
)
from servekit.bench.loop import LoopKind, resolve, run_interruptible
from servekit.bench.manifest import RunManifest, Status, file_entry, read_manifest, write_manifest
from servekit.bench.probe import EndpointInfo, probe_endpoint
from servekit.bench.prompts import PromptFactory, count_completion
from servekit.bench.transport import Deadlines
from servekit.errors import BenchError, RunInterruptedError
from servekit.package.evidence import (
    RequestRecord,
    RunHeader,
    ServeConfig,
    TuneMark,
    WorkloadSpec,
    load_evidence,
    prompt_key,
    prompt_target,
)
from servekit.package.models import Api
from servekit.progress import PhasedTracker


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
    tune: TuneMark | None = None
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
    def measured_total(self) -> int:
        """Measured requests of one run (every concurrency)."""
        return len(self.concurrencies) * self.requests

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


Notify = Callable[[str], None]
"""Where the runner reports what it kept or recovered (the CLI prints it on stderr)."""


def run_benchmark(
    config: RunConfig, tracker: PhasedTracker, notify: Notify | None = None
) -> list[Path]:
    """Run the whole grid ``config.runs`` times; returns the evidence files written.

    Each run is journaled record by record (:mod:`servekit.bench.journal`) and
    ``OUT/manifest.json`` names the files (:mod:`servekit.bench.manifest`). Interrupted
    (Ctrl-C, or SIGTERM), the run in progress is written with the requests that completed
    and a PARTIAL note in its header, and :class:`RunInterruptedError` names every file
    kept. With ``resume``, a journal a killed process left is recovered first.
    """
    _refuse_existing(config)
    config.out.mkdir(parents=True, exist_ok=True)  # the CLI refused a missing parent of --out
    factory = PromptFactory(config.seed, config.tokenizer)
    state = _Invocation(config, notify or (lambda message: None))
    try:
        run_interruptible(_all_runs(config, factory, tracker, state), config.loop)
    except KeyboardInterrupt as exc:
        if state.saved:
            state.save("partial")
        kept = ", ".join(str(p) for p in state.written) or "no file (no request had completed)"
        raise RunInterruptedError(
            f"interrupted; kept {kept}",
            hint="the interrupted run's header says PARTIAL; run the same command with "
            "--resume to keep the whole runs and measure the rest",
        ) from exc
    state.save("complete")
    return state.written


def _refuse_existing(config: RunConfig) -> None:
    targets = [config.run_file(n) for n in range(1, config.runs + 1)]
    existing = [p for p in (*targets, *map(journal_path, targets)) if p.exists()]
    if existing and not (config.force or config.resume):
        raise BenchError(
            f"evidence already exists: {', '.join(map(str, existing))}",
            hint="choose another --out, pass --resume to keep what was measured and measure "
            "the rest, or pass --force to overwrite",
        )


class _Invocation:
    """The files this invocation keeps, and the manifest that names them."""

    def __init__(self, config: RunConfig, notify: Notify) -> None:
        self.config = config
        self.notify = notify
        self.written: list[Path] = []
        self.partial: set[Path] = set()
        earlier = read_manifest(config.out) if config.resume else None
        self.set_aside: list[str] = list(earlier.set_aside) if earlier else []
        self.saved = False  # no manifest before the first file (a failed probe leaves none)

    def keep(self, path: Path, *, partial: bool = False) -> None:
        self.written.append(path)
        if partial:
            self.partial.add(path)
        self.save("running")

    def save(self, status: Status) -> None:
        c = self.config
        entries = tuple(file_entry(p, partial=p in self.partial) for p in self.written)
        manifest = RunManifest(
            status=status,
            endpoint=c.endpoint,
            model=c.model,
            api=c.api.value,
            runs=c.runs,
            workload=c.workload,
            files=entries,
            set_aside=tuple(self.set_aside),
        )
        write_manifest(c.out, manifest)
        self.saved = True

    def recover(self, number: int) -> None:
        """--resume: a journal a killed process left becomes a PARTIAL run file, and a
        PARTIAL run file is set aside (kept under another name) to be measured again."""
        run_file = self.config.run_file(number)
        journal = journal_path(run_file)
        if journal.exists():
            total = self.config.measured_total
            records = finish_partial(
                journal,
                run_file,
                lambda measured: (
                    f"{PARTIAL}: the process ended abruptly after {measured} of "
                    f"{total} measured requests; recovered from its journal by --resume (requests "
                    "in flight then are not recorded)"
                ),
                requests_sent=None,
            )
            self.notify(
                f"recovered {journal.name}: kept {len(records)} completed requests "
                f"({measured_count(records)} measured) in {run_file.name}, marked PARTIAL"
                if records
                else f"recovered {journal.name}: no request had completed; nothing to keep"
            )
        if run_file.is_file() and not _complete(run_file):
            aside = _free_name(run_file)
            run_file.rename(aside)
            self.set_aside.append(aside.name)
            self.notify(
                f"{run_file.name} is PARTIAL: kept as {aside.name}; measuring run {number} "
                "again from its start"
            )


def _free_name(run_file: Path) -> Path:
    stem = run_file.name.removesuffix(".jsonl")
    for n in range(1, 10_000):
        candidate = run_file.with_name(f"{stem}.interrupted{'' if n == 1 else f'-{n}'}.jsonl")
        if not candidate.exists():
            return candidate
    raise BenchError(f"{run_file.parent}: too many interrupted copies of {run_file.name}")


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
    config: RunConfig, factory: PromptFactory, tracker: PhasedTracker, state: _Invocation
) -> None:
    info: EndpointInfo | None = None
    # Once an invocation, a full collection: each group then freezes what the process holds
    # (_measure_group), and a freeze resets the collector's counts, so garbage that reached
    # the oldest generation would otherwise be frozen again and again, never collected.
    gc.collect()
    for number in range(1, config.runs + 1):
        if config.resume:
            state.recover(number)
            if _complete(config.run_file(number)):
                state.keep(config.run_file(number))  # kept from an earlier invocation
                continue
        async with _client(config) as client:
            if info is None:
                tracker.phase(f"probing {config.endpoint}", None)
                info = await probe_endpoint(client, config.model, factory)
            run = _Run(config, number, client, factory, info)
            state.save("running")  # before the journal, so the manifest names the run going on
            await run.measure(tracker, state)
        state.keep(config.run_file(number))


class _Run:
    """One run of the grid, journaled as it goes."""

    def __init__(
        self,
        config: RunConfig,
        number: int,
        client: BenchClient,
        factory: PromptFactory,
        info: EndpointInfo,
    ) -> None:
        self.config, self.number, self.client = config, number, client
        self.factory, self.info = factory, info
        self.run_id = f"run-{number}"
        self.run_file = config.run_file(number)

    def header(
        self, records: Sequence[RequestRecord], window: tuple[dt.datetime, dt.datetime]
    ) -> RunHeader:
        return _header(self.config, self.run_id, self.info, self.factory, records, window)

    async def measure(self, tracker: PhasedTracker, state: _Invocation) -> None:
        self.client.reset_count()
        t0, started = time.perf_counter(), dt.datetime.now(dt.UTC)
        journal = Journal(journal_path(self.run_file), self.header([], (started, started)))

        def record(trace: Trace) -> None:
            journal.append(to_record(trace, self.run_id, self.factory))
            tracker.advance(1)

        try:
            for concurrency in self.config.concurrencies:
                specs = build_specs(self.config, self.factory, self.info, self.number, concurrency)
                where = f"run {self.number}/{self.config.runs}, c={concurrency}"
                await _measure_group(self.config, self.client, specs, t0, tracker, record, where)
        except BaseException as exc:
            journal.close()  # any other failure leaves the journal for --resume to recover
            if isinstance(exc, asyncio.CancelledError):
                self._keep_interrupted(journal, state)
            raise
        ended = started + dt.timedelta(seconds=time.perf_counter() - t0)
        header = self.header(journal.records, (started, ended))
        journal.finish(self.run_file, header.model_copy(update={"requests_sent": self.client.sent}))

    def _keep_interrupted(self, journal: Journal, state: _Invocation) -> None:
        total = self.config.measured_total
        kept = finish_partial(
            journal.path,
            self.run_file,
            lambda measured: (
                f"{PARTIAL}: interrupted after {measured} of {total} measured "
                "requests; only requests that completed are recorded"
            ),
            self.client.sent,
        )
        if kept:
            state.keep(self.run_file, partial=True)


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
            key = prompt_key(concurrency, kind == "w", i)
            target = prompt_target(config.seed, key, config.prompt_min, config.prompt_max)
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


Record = Callable[[Trace], None]
"""Called on the event loop as each request completes (journals it, advances progress)."""


async def _measure_group(
    config: RunConfig,
    client: BenchClient,
    specs: Sequence[RequestSpec],
    t0: float,
    tracker: PhasedTracker,
    record: Record,
    where: str,
) -> None:
    """Warmups, then measured requests, of one concurrency; ``where`` names it for progress."""
    warm = [s for s in specs if s.warmup]
    measured = [s for s in specs if not s.warmup]
    concurrency = specs[0].concurrency
    # Keep the collector away from the long-lived bodies while measuring: freeze them,
    # after collecting the young generations (what the set-up just made). The full
    # collection runs once an invocation (_all_runs), not once a group: it walks every
    # object the process holds, 0.1 s and more in a large process (servekit tune, or a
    # script that runs many benchmarks).
    gc.collect(1)
    gc.freeze()
    try:
        if warm:
            tracker.phase(f"{where}, warmup requests", len(warm))
            await closed_loop(client, warm, concurrency, t0, record)
        tracker.phase(f"{where}, measured requests", len(measured))
        if config.request_rate is None:
            await closed_loop(client, measured, concurrency, t0, record)
        else:
            rng = random.Random(f"{config.seed}:arrivals:c{concurrency}")
            await poisson(client, measured, concurrency, config.request_rate, rng, t0, record)
    finally:
        gc.unfreeze()


async def closed_loop(
    client: BenchClient, specs: Sequence[RequestSpec], concurrency: int, t0: float, record: Record
) -> None:
    """``concurrency`` workers, each sending its next request as soon as one ends."""
    pending = iter(specs)

    async def worker() -> None:
        for spec in pending:
            record(await client.send(spec, t0))

    await asyncio.gather(*(worker() for _ in range(min(concurrency, len(specs)))))


async def poisson(
    client: BenchClient,
    specs: Sequence[RequestSpec],
    concurrency: int,
    rate: float,
    rng: random.Random,
    t0: float,
    record: Record,
) -> None:
    """Poisson arrivals at ``rate`` per second, at most ``concurrency`` in flight."""
    gate = asyncio.Semaphore(concurrency)

    async def one(spec: RequestSpec) -> None:
        async with gate:
            trace = await client.send(spec, t0)
        record(trace)

    tasks = []
    due = time.perf_counter()
    for spec in specs:
        due += rng.expovariate(rate)
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        tasks.append(asyncio.create_task(one(spec)))
    await asyncio.gather(*tasks)


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
        usage_source=usage_source(records),
        fixed_length=info.fixed_length,
        request_rate=config.request_rate,
        tokenizer=f"{factory.unit_name}; {info.fit.source}",
        notes=tuple(notes),
        tune=config.tune,
    )
