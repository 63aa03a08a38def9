"""Convert other harnesses' result files into servekit's raw evidence format.

``vllm bench serve --save-result --save-detailed`` writes one JSON object with
per-request lists: ``input_lens``, ``output_lens``, ``ttfts`` (s), ``itls`` (lists of
s), ``latencies`` (s, newer versions), ``start_times`` (``perf_counter`` s, newer
versions), ``generated_texts`` and ``errors``. It lacks, and the converted file says
so in ``missing_fields``:

* a wall-clock anchor per request (only ``date``, to the second, at the end);
* HTTP status codes (failures carry only an error text);
* the time of the first event as opposed to the first content;
* server-reported prompt tokens (``input_lens`` are the client tokenizer's counts);
* warmup requests (they are not saved), and which requests shared a prefix;
* send times, in versions without ``start_times`` (every request then starts at 0,
  so ``duration`` and throughputs cannot be recomputed: the summary flags it).
"""

from __future__ import annotations

import datetime as dt
import json
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from servekit import __version__
from servekit.errors import BenchError
from servekit.package.evidence import FORMAT_V1, RequestRecord, RunHeader
from servekit.seams import ReadFailure, read_utf8

_REQUIRED = ("ttfts", "itls", "input_lens", "output_lens")
ALWAYS_MISSING = (
    "wall-clock send times (only the result's date)",
    "http_status",
    "t_first_event (first event vs first content)",
    "server-reported prompt tokens (input_lens are the client tokenizer's)",
    "warmup requests",
)


@dataclass(frozen=True)
class Imported:
    header: RunHeader
    records: tuple[RequestRecord, ...]


def _unreadable(failure: ReadFailure) -> BenchError:
    if failure.missing:
        return BenchError(f"{failure.path}: file not found")
    return BenchError(f"{failure.path}: not a readable JSON file: {failure.exc}")


def _load(path: Path) -> dict[str, Any]:
    text = read_utf8(path, _unreadable)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BenchError(f"{path}: not a readable JSON file: {exc}") from exc
    if not isinstance(data, dict):
        raise BenchError(f"{path}: expected one JSON object (a vllm bench serve result)")
    missing = [k for k in _REQUIRED if not isinstance(data.get(k), list)]
    if missing:
        raise BenchError(
            f"{path}: no per-request fields {', '.join(missing)}",
            hint="re-run vllm bench serve with --save-result --save-detailed",
        )
    return data


def _missing_fields(data: dict[str, Any]) -> tuple[str, ...]:
    missing = list(ALWAYS_MISSING)
    if not isinstance(data.get("start_times"), list):
        missing.append(
            "start_times (every request starts at 0: duration and throughputs are not recoverable)"
        )
    if not isinstance(data.get("latencies"), list):
        missing.append("latencies (end time taken as the last content event)")
    return tuple(missing)


def _record(data: dict[str, Any], i: int, run: str, concurrency: int, t0: float) -> RequestRecord:
    starts, latencies = data.get("start_times"), data.get("latencies")
    errors = data.get("errors") or []
    t_send = float(starts[i]) - t0 if isinstance(starts, list) else 0.0
    error = str(errors[i]) if i < len(errors) and errors[i] else None
    ttft = float(data["ttfts"][i] or 0.0)
    ok = error is None and ttft > 0
    times: list[float] = []
    if ok:
        times.append(t_send + ttft)
        for gap in data["itls"][i] or []:
            times.append(times[-1] + float(gap))
    t_end = (
        t_send + float(latencies[i])
        if ok and isinstance(latencies, list)
        else (times[-1] if times else None)
    )
    return RequestRecord(
        id=f"vllm-{i:05d}",
        run=run,
        concurrency=concurrency,
        t_send=t_send,
        t_first_content=times[0] if times else None,
        t_content=tuple(times),
        t_end=t_end,
        prompt_tokens=int(data["input_lens"][i]),
        completion_tokens=int(data["output_lens"][i]) if ok else None,
        usage_source="client",
        http_status=200 if ok else None,
        error=None if ok else (error or "failed (vLLM recorded no error text)"),
    )


def _concurrency(data: dict[str, Any], override: int | None) -> int:
    if override is not None:
        return override
    value = data.get("max_concurrency")
    if isinstance(value, int) and value > 0:
        return value
    return max(1, len(data["ttfts"]))  # no limit: every request was in flight at once


def import_vllm(path: Path, *, run: str, gpus: int, concurrency: int | None = None) -> Imported:
    """Convert a ``vllm bench serve --save-detailed`` result into evidence records."""
    data = _load(path)
    conc = _concurrency(data, concurrency)
    starts = data.get("start_times")
    t0 = min(float(s) for s in starts) if isinstance(starts, list) and starts else 0.0
    records = tuple(_record(data, i, run, conc, t0) for i in range(len(data["ttfts"])))
    started, ended = _window(data)
    header = RunHeader(
        format=FORMAT_V1,  # vLLM's result lacks what v2 adds (served models, serve config, ...)
        run=run,
        endpoint=str(data.get("base_url") or data.get("endpoint_type") or "unknown"),
        model=str(data.get("model_id") or "unknown"),
        api="chat" if "chat" in str(data.get("backend", "")) else "completions",
        engine_version=None,
        servekit_version=__version__,
        seed=int(data.get("seed") or 0),
        host=socket.gethostname(),
        gpus=gpus,
        started_at=started,
        ended_at=ended,
        usage_source="client",
        request_rate=_rate(data.get("request_rate")),
        tokenizer=str(data.get("tokenizer_id") or "vllm client tokenizer"),
        imported_from=f"vllm bench serve: {path.name}",
        missing_fields=_missing_fields(data),
        notes=("imported: times are vLLM's own client measurements, not servekit's",),
    )
    return Imported(header, records)


def _rate(value: object) -> float | None:
    if isinstance(value, int | float) and value > 0 and value != float("inf"):
        return float(value)
    return None


def _window(data: dict[str, Any]) -> tuple[str, str]:
    """vLLM's ``date`` is local time (to the second) when the run ended; no zone is saved."""
    try:
        end = dt.datetime.strptime(str(data.get("date", "")), "%Y%m%d-%H%M%S")
    except ValueError:
        return "unknown", "unknown"
    start = end - dt.timedelta(seconds=float(data.get("duration") or 0.0))
    return start.isoformat(), end.isoformat()
