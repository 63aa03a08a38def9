"""Records: each request record is physically possible, unique, present, and warmups come
first. These rules read the JSON Lines themselves, so a single edited line is caught."""

from __future__ import annotations

import datetime as dt
import itertools
import math
import re
from collections.abc import Callable, Iterator
from typing import Any

from pydantic import BaseModel

from servekit.package.evidence import Evidence, RequestRecord
from servekit.package.models import DisclosureTopic, Run
from servekit.package.rules.context import Context
from servekit.package.rules.registry import Findings, RuleId, finding, rule

SERVEKIT_ID = re.compile(r"^r\d+-c(\d+)-([wm])(\d+)$")


def _numbers(value: Any, path: str) -> Iterator[tuple[str, float]]:
    """Every int/float inside a model or container, with its dotted path."""
    if isinstance(value, BaseModel):
        for name in type(value).model_fields:
            yield from _numbers(getattr(value, name), f"{path}.{name}" if path else name)
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _numbers(item, f"{path}[{i}]")
    elif isinstance(value, float | int) and not isinstance(value, bool):
        yield path, float(value)


def _suspect(value: Any) -> bool:
    """Whether ``value`` may hold a number SK118 reports (not finite, or negative; a bool
    never is): one cheap pass over a record, so only a suspect record is walked with paths
    (records are most of a package's numbers: 120 000 in the largest example)."""
    if isinstance(value, float | int):
        return not 0 <= value < math.inf  # NaN fails both comparisons
    if isinstance(value, BaseModel):
        return any(map(_suspect, value.__dict__.values()))
    if isinstance(value, list | tuple):
        return any(map(_suspect, value))
    return False


@rule(
    RuleId.FINITE_NUMBERS,
    "Every number in the package and its records is finite (no NaN, no Infinity) and every "
    "count and time in the records is non-negative.",
    "A figure that is not a number is not a figure; `--json` output stays valid JSON.",
)
def finite_numbers(ctx: Context) -> Findings:
    for path, number in _numbers(ctx.package, ""):
        if not math.isfinite(number):
            fig = _figure_of(ctx, path)
            yield finding(
                RuleId.FINITE_NUMBERS, path, f"{number} is not a finite number", "state a real value",
                (fig,) if fig else (),
            )  # fmt: skip
    for where, run, ev in ctx.runs_with_evidence():
        yield from _record_numbers(ctx, where, run, ev)


def _figure_of(ctx: Context, path: str) -> str | None:
    return next((fid for fid, f in ctx.figure_fields.items() if path.startswith(f + ".")), None)


def _record_numbers(ctx: Context, where: str, run: Run, ev: Evidence) -> Findings:
    items: list[tuple[str, BaseModel]] = [("header", ev.header)]
    items += [(r.id, r) for r in ev.requests]
    bad = [
        (rid, path, n)
        for rid, r in items
        if _suspect(r)
        for path, n in _numbers(r, "")
        if not math.isfinite(n) or (n < 0 and path != "request_rate")
    ]
    if bad:
        rid, path, n = bad[0]
        yield finding(
            RuleId.FINITE_NUMBERS,
            f"{where}.file",
            f"{run.file}: {len(bad)} impossible number(s), first {rid} {path} = {n}",
            "every time and count in evidence is a finite, non-negative number; re-measure",
            ctx.figures_using(run.id),
        )


def _order_problem(r: RequestRecord) -> str | None:
    stamps = [("t_send", r.t_send)]
    if r.t_start is not None and r.t_start > r.t_send:
        return f"t_start {r.t_start} is after t_send {r.t_send}"
    for name in ("t_first_event", "t_first_content"):
        value = getattr(r, name)
        if value is not None:
            stamps.append((name, value))
    stamps += [(f"t_content[{i}]", t) for i, t in enumerate(r.t_content)]
    if r.t_end is not None:
        stamps.append(("t_end", r.t_end))
    for (a, ta), (b, tb) in itertools.pairwise(stamps):
        if tb < ta:
            return f"{b} {tb} is before {a} {ta}"
    if r.t_content and r.t_first_content is not None and r.t_content[0] != r.t_first_content:
        return (
            f"t_first_content {r.t_first_content} is not the first content stamp {r.t_content[0]}"
        )
    return None


@rule(
    RuleId.TIME_ORDER,
    "In every record, start <= send <= first event <= first token <= every later token <= end; "
    "inter-token gaps are never negative.",
    "Latencies are only published from timings that could have happened.",
)
def time_order(ctx: Context) -> Findings:
    for where, run, ev in ctx.runs_with_evidence():
        yield from _each_record(ctx, RuleId.TIME_ORDER, where, run, ev, _order_problem, "impossible timing",
                                "timestamps come from one monotonic clock in send order; re-measure")  # fmt: skip
        span = _span_problem(ev)
        if span:
            yield finding(RuleId.TIME_ORDER, f"{where}.file", f"{run.file}: {span}",
                          "keep the times `bench run` wrote; re-measure", ctx.figures_using(run.id))  # fmt: skip


def instant(text: str) -> dt.datetime | None:
    """An ISO 8601 wall-clock time (a time without zone is read as UTC); None if it is not one."""
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)


SPAN_AFTER_LAST_S = 0.025
"""``bench run`` stamps ``ended_at`` from the monotonic clock right after the last request
ends: 0.00-1.09 ms after the last record in the repository's 34 files (docs/rules.md,
SK119); 25 ms allows for an event loop delayed on a loaded machine."""
SPAN_BEYOND_WINDOW_S = 0.001
"""Records cannot end after the window (microsecond rounding of the ISO times aside)."""


def _span_problem(ev: Evidence) -> str | None:
    """The records span the header's wall-clock window (``ended_at`` is stamped from the
    same monotonic clock right after the last request), so rescaled times show."""
    start, end = instant(ev.header.started_at), instant(ev.header.ended_at)
    if start is None or end is None:
        if ev.header.imported_from is not None:
            return None  # imported files may carry no wall clock
        return "the header's started_at or ended_at is not a wall-clock time"
    window = (end - start).total_seconds()
    span = max((r.t_end if r.t_end is not None else r.t_send for r in ev.requests), default=0.0)
    if ev.header.imported_from is not None:  # another harness's clocks: the old bound
        late, early = max(1.0, 0.05 * window), max(1.0, 0.05 * window)
    else:
        late, early = SPAN_AFTER_LAST_S, SPAN_BEYOND_WINDOW_S
    if window > 0 and not -early <= window - span <= late:
        return (f"the records span {span:.6f} s but the header's run lasted {window:.6f} s "
                f"(`bench run` stamps its end {late * 1000:g} ms after the last record at most)")  # fmt: skip
    return None


def _each_record(
    ctx: Context, rule_id: RuleId, where: str, run: Run, ev: Evidence,
    problem: Callable[[RequestRecord], str | None], what: str, fix: str,
) -> Findings:  # fmt: skip
    bad = [(r.id, p) for r in ev.requests if (p := problem(r)) is not None]
    if bad:
        yield finding(
            rule_id, f"{where}.file",
            f"{run.file}: {len(bad)} record(s) with {what}, first {bad[0][0]}: {bad[0][1]}",
            fix, ctx.figures_using(run.id),
        )  # fmt: skip


def _token_problem(r: RequestRecord) -> str | None:
    if not r.ok:
        return None
    if r.requested_output_tokens is None or r.completion_tokens is None:
        return "no requested or received output-token count"
    if r.completion_tokens < len(r.t_content):
        return f"{len(r.t_content)} content events but {r.completion_tokens} tokens received"
    return None


@rule(
    RuleId.OUTPUT_TOKENS_COUNTED,
    "Every successful record says how many output tokens were requested and received, and "
    "never fewer tokens than content events arrived.",
    "Throughput is computed from tokens that were actually received.",
)
def output_tokens_counted(ctx: Context) -> Findings:
    for where, run, ev in ctx.runs_with_evidence():
        yield from _each_record(ctx, RuleId.OUTPUT_TOKENS_COUNTED, where, run, ev, _token_problem, "impossible token counts",
                                "record requested_output_tokens and the server's usage (or the client's count)")  # fmt: skip


@rule(
    RuleId.CLEAN_RUNS,
    "Runs backing a measured figure have no failed requests, and no output-length mismatches "
    "unless the mismatch is disclosed (topic output_length).",
    "Failures and short answers are counted and shown beside every grid point, never dropped.",
)
def clean_runs(ctx: Context) -> Findings:
    disclosed = ctx.disclosed(DisclosureTopic.OUTPUT_LENGTH)
    for where, f in ctx.measured_figures():
        for run_id in f.runs:
            summary = ctx.summary(run_id, f.concurrency) if ctx.package.run(run_id) else None
            mismatches = 0 if summary is None or disclosed else summary.length_mismatches
            if summary and (summary.failed or mismatches):
                total = summary.failed + summary.completed
                yield finding(
                    RuleId.CLEAN_RUNS,
                    f"{where}.runs",
                    f"run {run_id} at concurrency {f.concurrency} has {summary.failed} failed "
                    f"requests of {total} ({summary.failed / total * 100:.1f} % error rate) "
                    f"and {mismatches} output-length mismatches",
                    "re-run until every measured request succeeds at the requested length, or "
                    "disclose engines that ignore ignore_eos (topic: output_length)",
                    (f.id,),
                )


@rule(
    RuleId.UNIQUE_REQUESTS,
    "Request ids (and send positions) are unique within a run, and every record names the "
    "run of its file's header.",
    "One request is counted once; records are not pasted in from another run.",
)
def unique_requests(ctx: Context) -> Findings:
    for where, run, ev in ctx.runs_with_evidence():
        ids = [r.id for r in ev.requests]
        seqs = [r.seq for r in ev.requests if r.seq is not None]
        foreign = sorted({r.run for r in ev.requests} - {ev.header.run})
        problems = []
        if len(set(ids)) != len(ids):
            problems.append(f"{len(ids) - len(set(ids))} duplicate request id(s)")
        if len(set(seqs)) != len(seqs):
            problems.append("duplicate send positions (seq)")
        folded = [i.strip().casefold() for i in ids]
        if len(set(ids)) == len(ids) and len(set(folded)) != len(folded):
            problems.append("request ids that differ only in case or spaces")
        stamps = [(r.t_send, r.t_end, r.t_content) for r in ev.requests]
        if len(set(stamps)) != len(stamps):
            problems.append(f"{len(stamps) - len(set(stamps))} record(s) repeating another's "
                            "send, end and token times")  # fmt: skip
        if foreign:
            problems.append(f"records of run(s) {', '.join(foreign)} in run {ev.header.run}")
        if problems:
            yield finding(
                RuleId.UNIQUE_REQUESTS, f"{where}.file", f"{run.file}: {'; '.join(problems)}",
                "each run is one file of its own, one record per request sent",
                ctx.figures_using(run.id),
            )  # fmt: skip


def _id_problem(ev: Evidence) -> str | None:
    """servekit ids (``rN-cC-wI``/``mI``) say the concurrency, kind and index of a request:
    they must agree with the record, and indices run 0..n-1 with none missing."""
    seen: dict[tuple[int, str], list[int]] = {}
    for r in ev.requests:
        m = SERVEKIT_ID.match(r.id)
        if m is None:
            return None  # not written by servekit bench run: nothing to read from ids
        conc, kind, index = int(m[1]), m[2], int(m[3])
        if conc != r.concurrency or (kind == "w") != r.warmup:
            return f"{r.id} is labelled concurrency {r.concurrency}, warmup {r.warmup}"
        seen.setdefault((conc, kind), []).append(index)
    for (conc, kind), indices in seen.items():
        if sorted(indices) != list(range(len(indices))):
            missing = sorted(set(range(max(indices) + 1)) - set(indices))
            return f"concurrency {conc} {'warmup' if kind == 'w' else 'measured'} requests " + (
                f"{missing} are missing" if missing else "repeat an index"
            )
    return None


def _sent_problem(ev: Evidence) -> str | None:
    """What ``bench run`` writes of every request sent: a v2 header's ``requests_sent`` and
    each record's send position ``seq``, 0..n-1 with none missing (imported files excepted)."""
    if ev.version < 2 or ev.header.imported_from is not None:
        return None
    if ev.header.requests_sent is None:
        return "the v2 header has no requests_sent, so dropped requests cannot be ruled out"
    spec = ev.header.workload
    if spec is not None:
        asked = len(spec.concurrencies) * (spec.requests + spec.warmup)
        if asked != ev.header.requests_sent:
            return (f"the header's workload asks for {asked} requests; requests_sent says "
                    f"{ev.header.requests_sent}")  # fmt: skip
    seqs = sorted(r.seq for r in ev.requests if r.seq is not None)
    if len(seqs) != len(ev.requests):
        return f"{len(ev.requests) - len(seqs)} record(s) have no send position (seq)"
    if seqs != list(range(len(seqs))):
        missing = sorted(set(range(max(seqs, default=0) + 1)) - set(seqs))[:5]
        return f"send positions (seq) {missing} are missing"
    return None


@rule(
    RuleId.ALL_REQUESTS_RECORDED,
    "Every request sent is in the evidence, failed ones included: the record count equals "
    "the header's requests_sent (v2) and servekit request indices have no gaps.",
    "Failed requests are counted, never silently dropped.",
)
def all_requests_recorded(ctx: Context) -> Findings:
    for where, run, ev in ctx.runs_with_evidence():
        sent = ev.header.requests_sent
        problem = _id_problem(ev) or _sent_problem(ev)
        if sent is not None and sent != len(ev.requests):
            problem = f"the header says {sent} requests were sent; {len(ev.requests)} are recorded"
        if problem:
            yield finding(
                RuleId.ALL_REQUESTS_RECORDED, f"{where}.file", f"{run.file}: {problem}",
                "keep every record `servekit bench run` wrote, failures included",
                ctx.figures_using(run.id),
            )  # fmt: skip


def _warmup_problem(ev: Evidence, conc: int) -> str | None:
    warm, measured = ev.warmups(conc), ev.measured(conc)
    if not warm or not measured:
        return None
    if max(r.t_send for r in warm) > min(r.t_send for r in measured):
        return f"at concurrency {conc} a warmup was sent after a measured request"
    seqs_w = [r.seq for r in warm if r.seq is not None]
    seqs_m = [r.seq for r in measured if r.seq is not None]
    if seqs_w and seqs_m and max(seqs_w) > min(seqs_m):
        return f"at concurrency {conc} a warmup's send position follows a measured request's"
    return None


@rule(
    RuleId.WARMUP_FIRST,
    "Warmups come first at every concurrency (by send time and position) and are excluded "
    "by flag; a measured grid point has at least one warmup, or a disclosure (topic warmup).",
    "Cold-start requests are neither hidden among nor passed off as measured ones.",
)
def warmup_first(ctx: Context) -> Findings:
    for where, f in ctx.measured_figures():
        for run_id in f.runs:
            ev = ctx.evidence(run_id) if ctx.package.run(run_id) else None
            if ev is None:
                continue
            problem = _warmup_problem(ev, f.concurrency)
            unwarmed = not ev.warmups(f.concurrency) and not ctx.disclosed(DisclosureTopic.WARMUP)
            if problem is None and unwarmed:
                problem = f"run {run_id} has no warmup at concurrency {f.concurrency}"
            if problem:
                yield finding(
                    RuleId.WARMUP_FIRST, f"{where}.runs", problem,
                    "send warmups first (`bench run --warmup N`), or disclose that none was "
                    "sent (topic: warmup)", (f.id,),
                )  # fmt: skip
