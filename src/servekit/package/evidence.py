"""Raw benchmark evidence: the per-request record format and its loader.

An evidence file is JSON Lines (docs/metrics.md has the full reference):

* line 1 is the run header, ``{"record": "run", "format": "servekit.bench/v2", ...}``;
* every following line is one request, ``{"record": "request", ...}``.

Version 2 (what ``servekit bench run`` writes) adds what the claim rules need to read
the records for sense rather than trust the package's declarations: the engine name,
the served models, the hardware label, the workload as asked for, the serve
configuration, a unique run id, how many requests were sent, and per request its send
order and the content parts it carried. Version 1 files still load; what they lack is
reported by :attr:`Evidence.cannot_verify`.

Times are seconds on the client's monotonic clock, relative to the run's start;
``started_at`` is the single wall-clock anchor of the run. Token counts are
what the server reported (``usage``), or what the client counted when the
server sent none (``usage_source`` says which).
"""

from __future__ import annotations

import io
import json
import random
from collections.abc import Iterable
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from servekit.errors import EvidenceError
from servekit.package.source import DirectorySource, FileSource
from servekit.seams import ReadFailure, reading, validating, validation_problems

FORMAT_V1: Literal["servekit.bench/v1"] = "servekit.bench/v1"
FORMAT_V2: Literal["servekit.bench/v2"] = "servekit.bench/v2"
FORMAT = FORMAT_V2
"""The version ``servekit bench run`` writes."""

Format = Literal["servekit.bench/v1", "servekit.bench/v2"]

# What a version-1 file cannot show, and which rule reads it (docs/rules.md).
_V2_HEADER: dict[str, str] = {
    "engine_name": "engine name as the server reported it (header engine_name)",
    "served_models": "served model as the server listed it (header served_models)",
    "hardware": "hardware label of the run (header hardware)",
    "workload": "workload as requested (header workload: prompt range, output tokens, grid)",
    "serve": "serve configuration the engine ran with (header serve)",
    "requests_sent": "that every sent request is recorded (header requests_sent)",
    "run_uid": "that the run's file is unique to it (header run_uid)",
}
_V2_RECORD: dict[str, str] = {
    "seq": "send order of each request (record seq)",
    "content_parts": "content parts each request carried (record content_parts)",
}
_NO_VERSION = "engine version as the server reported it (header engine_version: no /version)"
V1_CANNOT_VERIFY: tuple[str, ...] = (*_V2_HEADER.values(), *_V2_RECORD.values())
ENGINE_FIELDS = ("engine_version", "engine_name")
"""What ``bench run`` records only where the engine answers ``/version`` (or names itself
as the owner in ``/v1/models``)."""


class WorkloadSpec(BaseModel):
    """The workload ``bench run`` was asked to send (v2 header ``workload``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt_min: int = Field(ge=1)
    prompt_max: int = Field(ge=1)
    output_tokens: int = Field(ge=1)
    concurrencies: tuple[int, ...] = Field(min_length=1)
    requests: int = Field(ge=1, description="Measured requests per concurrency.")
    warmup: int = Field(ge=0, description="Warmup requests per concurrency, sent first.")
    request_rate: float | None = None


class ServeConfig(BaseModel):
    """The serve command the engine ran with (v2 header ``serve``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    argv: tuple[str, ...] = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict)
    source: str = Field(description="Where it came from: '--serve-command' or a file path.")


class TuneRole(StrEnum):
    SELECTION = "selection"  # a search run: chose a candidate, proves nothing about it
    CONFIRMATION = "confirmation"  # a fresh run after the search, stock and tuned interleaved


class TuneMark(BaseModel):
    """v2, runs ``servekit tune`` made: what the run was for (docs/tune.md)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: TuneRole
    session: str = Field(description="The tuning session's id, shared by all its runs.")
    candidate: str = Field(description="The configuration measured: 'stock', 'c007'...")


class RunHeader(BaseModel):
    """Metadata of one benchmark run (the first line of an evidence file)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    record: Literal["run"] = "run"
    format: Format = FORMAT
    run: str
    run_uid: str | None = Field(
        default=None, description="v2: random id of this run, never shared with another file."
    )
    endpoint: str
    model: str
    api: Literal["completions", "chat"]
    engine_version: str | None = None
    engine_name: str | None = Field(
        default=None, description="v2: the engine as /version or /v1/models named it."
    )
    served_models: tuple[str, ...] | None = Field(
        default=None, description="v2: model ids /v1/models listed (null: it did not answer)."
    )
    hardware: str | None = Field(default=None, description="v2: e.g. '1x H200' (--hardware).")
    workload: WorkloadSpec | None = None
    serve: ServeConfig | None = None
    requests_sent: int | None = Field(
        default=None, ge=0, description="v2: requests the client sent (warmups included)."
    )
    servekit_version: str
    simulator: bool = False
    seed: int
    host: str
    gpus: int = Field(ge=1)
    started_at: str = Field(description="ISO 8601 wall-clock time at monotonic zero.")
    ended_at: str
    usage_source: Literal["server", "client", "mixed"] = "server"
    fixed_length: bool | None = Field(
        default=None, description="Whether the server accepted ignore_eos/min_tokens."
    )
    request_rate: float | None = Field(
        default=None, description="Poisson arrival rate (requests/s); null: closed loop."
    )
    tokenizer: str | None = Field(default=None, description="What sized the prompts.")
    imported_from: str | None = None
    missing_fields: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    tune: TuneMark | None = Field(
        default=None, description="v2: set by servekit tune: a selection or confirmation run."
    )


class RequestRecord(BaseModel):
    """One request as the client saw it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    record: Literal["request"] = "request"
    id: str
    run: str
    concurrency: int = Field(ge=1)
    warmup: bool = False
    seq: int | None = Field(
        default=None, ge=0, description="v2: send order within the run (0 is the first sent)."
    )
    content_parts: tuple[str, ...] | None = Field(
        default=None, description="v2: modalities of the content parts sent, e.g. ['text']."
    )
    t_start: float | None = Field(
        default=None, description="When the client began the request (t_send: last byte sent)."
    )
    t_send: float
    t_first_event: float | None = None
    t_first_content: float | None = None
    t_content: tuple[float, ...] = ()
    t_end: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    requested_output_tokens: int | None = None
    requested_prompt_tokens: int | None = None
    usage_source: Literal["server", "client"] | None = None
    http_status: int | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return (
            self.error is None
            and self.http_status == 200
            and self.t_first_content is not None
            and self.t_end is not None
        )

    @property
    def length_mismatch(self) -> bool:
        return (
            self.requested_output_tokens is not None
            and self.completion_tokens is not None
            and self.completion_tokens != self.requested_output_tokens
        )


class Evidence(BaseModel):
    """A loaded evidence file."""

    model_config = ConfigDict(frozen=True)

    path: str
    header: RunHeader
    requests: tuple[RequestRecord, ...]

    def measured(self, concurrency: int) -> tuple[RequestRecord, ...]:
        """Non-warmup requests at one concurrency, successful or not."""
        return tuple(r for r in self.requests if r.concurrency == concurrency and not r.warmup)

    def warmups(self, concurrency: int) -> tuple[RequestRecord, ...]:
        return tuple(r for r in self.requests if r.concurrency == concurrency and r.warmup)

    @property
    def concurrencies(self) -> tuple[int, ...]:
        return tuple(sorted({r.concurrency for r in self.requests}))

    @property
    def version(self) -> int:
        return 1 if self.header.format == FORMAT_V1 else 2

    @property
    def from_bench_run(self) -> bool:
        """Written by ``servekit bench run`` (v2, not imported from another harness)."""
        return self.version >= 2 and self.header.imported_from is None

    def blanks(self, engine_answers: bool) -> tuple[str, ...]:
        """The header and record fields a ``bench run`` file leaves null although the harness
        records them (``engine_answers``: the engine answers ``/version``, so its name and
        version too). A file of another harness, or v1, has no blanks: it says what it
        cannot show through :attr:`cannot_verify`."""
        if not self.from_bench_run:
            return ()
        skip = () if engine_answers else ENGINE_FIELDS
        names = [n for n in (*ENGINE_FIELDS, *_V2_HEADER) if n not in skip]
        out = [n for n in dict.fromkeys(names) if getattr(self.header, n) is None]
        for name in _V2_RECORD:
            missing = sum(getattr(r, name) is None for r in self.requests)
            if missing:
                out.append(f"{name} of {missing} record(s)")
        return tuple(out)

    def unverifiable(self, engine_answers: bool) -> tuple[str, ...]:
        """:attr:`cannot_verify` less what the harness could have recorded: in a ``bench
        run`` file a blank it could have filled is refused (SK136), not excused."""
        if not self.from_bench_run:
            return self.cannot_verify
        blank = {n.split()[0] for n in self.blanks(engine_answers)}
        texts = {**_V2_HEADER, **_V2_RECORD, "engine_version": _NO_VERSION}
        return tuple(t for t in self.cannot_verify if t not in {texts[n] for n in blank})

    @property
    def cannot_verify(self) -> tuple[str, ...]:
        """What the claim rules cannot check in this file because it lacks it: the v2
        fields (all of them in a v1 file), and an engine version the server did not report."""
        unreported = (_NO_VERSION,) if self.header.engine_version is None else ()
        if self.version == 1:
            return (*unreported, *V1_CANNOT_VERIFY)
        header = [text for name, text in _V2_HEADER.items() if getattr(self.header, name) is None]
        records = [
            text
            for name, text in _V2_RECORD.items()
            if any(getattr(r, name) is None for r in self.requests)
        ]
        return (*unreported, *header, *records)


def prompt_key(concurrency: int, warmup: bool, index: int) -> str:
    """The part of a ``bench run`` request id its prompt length is derived from: ``c4-m0007``."""
    return f"c{concurrency}-{'w' if warmup else 'm'}{index:04d}"


def prompt_target(seed: int, key: str, prompt_min: int, prompt_max: int) -> int:
    """The prompt length ``bench run`` asks for: seeded by the run's seed and the request's
    :func:`prompt_key` only, so every run of one grid sends the same lengths, and the claim
    rules recompute them (SK138)."""
    return random.Random(f"{seed}:{key}").randint(prompt_min, prompt_max)


def _loads(text: str) -> object:
    """orjson first (several times faster on a record line); the standard library for
    whatever orjson refuses, so NaN, Infinity and 5 000-digit numbers read as before (the
    claim rules report them) and malformed lines get the same messages."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def _parse_line(path: Path, number: int, text: str) -> dict[str, object]:
    try:
        obj = _loads(text)
    except json.JSONDecodeError as exc:
        raise EvidenceError(
            f"not valid JSON ({exc.msg} at column {exc.colno})",
            path=path,
            line=number,
            hint="evidence files are JSON Lines: one JSON object per line",
        ) from exc
    except (ValueError, RecursionError) as exc:  # a 5 000-digit number; 100 000 `[`
        raise EvidenceError(
            f"JSON that cannot be read ({type(exc).__name__}: {str(exc)[:80]})",
            path=path,
            line=number,
            hint="evidence lines are flat records of sane numbers",
        ) from exc
    if not isinstance(obj, dict):
        raise EvidenceError("a line must be a JSON object", path=path, line=number)
    return obj


def _invalid_record(path: Path, number: int, first: bool, exc: ValidationError) -> EvidenceError:
    kind = "run header" if first else "request record"
    return EvidenceError(
        f"invalid {kind}: {validation_problems(exc)}",
        path=path,
        line=number,
        hint=f"the first line is the run header and each later line a request "
        f"({FORMAT_V1} or {FORMAT_V2}); see docs/metrics.md",
    )


def parse_evidence(path: Path, lines: Iterable[str]) -> Evidence:
    """Parse evidence lines; ``path`` is only used in messages."""
    header: RunHeader | None = None
    requests: list[RequestRecord] = []
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        obj = _parse_line(path, number, text)
        with validating(partial(_invalid_record, path, number, header is None)):
            if header is None:
                header = RunHeader.model_validate(obj)
            else:
                requests.append(RequestRecord.model_validate(obj))
    if header is None:
        raise EvidenceError(
            "empty evidence file", path=path, hint="write it with `servekit bench run`"
        )
    return Evidence(path=str(path), header=header, requests=tuple(requests))


def load_evidence(path: Path) -> Evidence:
    """Load one evidence file, raising :class:`EvidenceError` with the line on failure."""
    return read_evidence(DirectorySource(path.parent), path.name)


def read_evidence(source: FileSource, relative: str) -> Evidence:
    """Load the evidence file ``relative`` of a package's ``source`` (its directory or a
    verified kit's bytes); messages name ``source.where(relative)``.

    The bytes are decoded as reading the file in text mode does (UTF-8, universal
    newlines), so a file reads the same, line for line, from a directory or a kit."""
    path = source.where(relative)
    with reading(path, _unreadable):
        data = source.read_bytes(relative)
        with io.TextIOWrapper(io.BytesIO(data), encoding="utf-8") as fh:
            return parse_evidence(path, fh)


def _unreadable(failure: ReadFailure) -> EvidenceError:
    if failure.missing:
        hint = "add the raw file under evidence/ or fix the run's `file` path"
        return EvidenceError("evidence file not found", path=failure.path, hint=hint)
    return EvidenceError(f"cannot read evidence file: {failure.exc}", path=failure.path)


def evidence_line(record: RunHeader | RequestRecord) -> str:
    """One line of an evidence file (no newline): the header or a request record.

    pydantic's serializer: compact, UTF-8, and about 8 times faster than ``json.dumps``
    of the dumped dict for a record of 256 token times (``bench run`` journals each
    record on the event loop as its request completes)."""
    return record.model_dump_json()


def dump_evidence(header: RunHeader, requests: Iterable[RequestRecord]) -> str:
    """Serialize a run header and its requests as evidence JSON Lines."""
    out = [evidence_line(header)]
    out.extend(evidence_line(r) for r in requests)
    return "\n".join(out) + "\n"
