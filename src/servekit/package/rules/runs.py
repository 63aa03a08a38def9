"""Runs: each run belongs to this package, ran the declared workload at the declared
load, is its own independent file, and every current run of a configuration is used."""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import math
import re
from urllib.parse import urlparse

import numpy as np

from servekit.package.evidence import Evidence, RequestRecord, prompt_key, prompt_target
from servekit.package.models import Figure, Run, Workload
from servekit.package.rules.context import Context
from servekit.package.rules.disclosures import is_simulator
from servekit.package.rules.engines import served_model_arg
from servekit.package.rules.records import SERVEKIT_ID, instant
from servekit.package.rules.registry import Findings, RuleId, finding, rule
from servekit.package.rules.shipped import differences

MAX_TOLERANCE_PCT = 10.0  # replicates that may differ by more are not replicates
MAX_CONCURRENCY_TOLERANCE_PCT = 25.0
PROMPT_DRIFT = 0.02
CALIBRATED_DRIFT = 0.05  # calibrated prompts land within 0.2 % in the examples  # server-counted prompt tokens may differ from the target by 2 %


@rule(
    RuleId.RUNS_AGREE,
    "Repeated runs of one configuration agree within the package's declared tolerance.",
    "Figures whose replicates disagree (TTFT at concurrency 8: 237 %) are not published.",
)
def runs_agree(ctx: Context) -> Findings:
    tol = ctx.package.measurements.tolerance_pct
    if tol > MAX_TOLERANCE_PCT:
        yield finding(
            RuleId.RUNS_AGREE, "measurements.tolerance_pct",
            f"a {tol:g} % tolerance lets replicates disagree by more than {MAX_TOLERANCE_PCT:g} %",
            "find why the runs disagree and re-run; do not widen the tolerance to fit",
            tuple(f.id for _, f in ctx.measured_figures()),
        )  # fmt: skip
    for where, f in ctx.measured_figures():
        values = {r: ctx.recompute(f, r) for r in f.runs if ctx.package.run(r) is not None}
        primary = values.get(f.runs[0]) if f.runs else None
        if primary is None:
            continue
        for run_id, got in values.items():
            if got is None or run_id == f.runs[0]:
                continue
            diff = abs(got - primary) / abs(primary) * 100 if primary else math.inf
            if diff > tol:
                yield finding(
                    RuleId.RUNS_AGREE,
                    f"{where}.runs",
                    f"'{f.label}': run {run_id} gives {got:.3f} against {primary:.3f} from "
                    f"{f.runs[0]}, a {diff:.2f} % difference over the {tol:g} % tolerance",
                    "find why the runs disagree and re-run; do not widen the tolerance to fit",
                    (f.id,),
                )


@rule(
    RuleId.GRID_COVERAGE,
    "A run holds exactly the workload's warmup and measured requests at the figure's concurrency, on the declared GPUs.",
    "A grid point is published only from the requests the workload declares, on the target.",
)
def grid_coverage(ctx: Context) -> Findings:
    pkg = ctx.package
    for i, run in enumerate(pkg.measurements.runs):
        where, workload = f"measurements.runs[{i}]", pkg.workload(run.workload)
        if not run.current:
            continue  # a retracted run (an interrupted one, say) is evidence for nothing
        if workload is None:
            yield finding(
                RuleId.GRID_COVERAGE, f"{where}.workload", f"workload '{run.workload}' is not defined",
                "define it", ctx.figures_using(run.id),
            )  # fmt: skip
            continue
        ev = ctx.evidence(run.id)
        if ev is not None:
            yield from _coverage(ctx, where, run, ev, workload)


def _coverage(ctx: Context, where: str, run: Run, ev: Evidence, workload: Workload) -> Findings:
    pkg, figs = ctx.package, ctx.figures_using(run.id)
    if ev.header.gpus != pkg.hardware.target.count:
        yield finding(
            RuleId.GRID_COVERAGE, f"{where}.file",
            f"{run.file} was run on {ev.header.gpus} GPUs, the target has "
            f"{pkg.hardware.target.count}", "measure on the target hardware", figs,
        )  # fmt: skip
    if is_simulator(ev) != run.simulator:
        yield finding(
            RuleId.GRID_COVERAGE, f"{where}.simulator", f"{run.file} says simulator={is_simulator(ev)}",
            f"set simulator: {str(is_simulator(ev)).lower()}", figs,
        )  # fmt: skip
    extra = sorted(set(ev.concurrencies) - set(workload.concurrencies))
    if extra:
        yield finding(
            RuleId.GRID_COVERAGE, f"{where}.file",
            f"{run.file} holds concurrencies {extra} that workload '{workload.id}' does not declare",
            "declare the grid that was run", figs,
        )  # fmt: skip
    for conc in workload.concurrencies:
        measured, warm = len(ev.measured(conc)), len(ev.warmups(conc))
        if (measured, warm) != (workload.measured_requests, workload.warmup_requests):
            yield finding(
                RuleId.GRID_COVERAGE,
                f"{where}.file",
                f"{run.file} holds {measured} measured and {warm} warmup requests at concurrency "
                f"{conc}; workload '{workload.id}' declares {workload.measured_requests} and "
                f"{workload.warmup_requests}",
                "re-run the grid, or declare what was run",
                figs,
            )


def _local_path(model: str) -> bool:
    """A model argument that is a directory on the serving host (a download of the pin)."""
    return model.startswith(("/", "./", "../", "~"))


def _header_problems(ctx: Context, run: Run, ev: Evidence, workload: Workload) -> list[str]:
    pkg, h = ctx.package, ev.header
    out = []
    if h.engine_version is not None and h.engine_version != pkg.engine.version:
        out.append(f"the server reported engine version '{h.engine_version}', the package pins "
                   f"'{pkg.engine.version}'")  # fmt: skip
    if h.engine_name is not None and h.engine_name.lower() != pkg.engine.name.lower():
        out.append(f"the server is engine '{h.engine_name}', the package pins '{pkg.engine.name}'")
    if h.api != workload.api.value:
        out.append(
            f"the run used the {h.api} API, workload '{workload.id}' declares {workload.api}"
        )
    if h.hardware is not None and h.hardware != pkg.hardware.target.label:
        out.append(f"the run names hardware '{h.hardware}', the target is "
                   f"'{pkg.hardware.target.label}'")  # fmt: skip
    served = pkg.serve.served_model_name or pkg.model.repo
    if ev.version >= 2 or h.served_models is not None:  # read whatever the format claims
        if h.model != served or (h.served_models is not None and served not in h.served_models):
            out.append(f"the run asked for model '{h.model}' of {list(h.served_models or [])}; "
                       f"the package serves '{served}'")  # fmt: skip
    elif h.model not in (served, pkg.model.repo) and not _local_path(h.model):
        out.append(f"the v1 run asked for model '{h.model}'; the package serves '{served}' "
                   "(a directory on the serving host is read as a download of the pin)")  # fmt: skip
    named = served_model_arg(h.serve.argv) if h.serve is not None else None
    if named is not None and named != pkg.model.repo and not _local_path(named):
        out.append(f"the recorded serve command loads model '{named}', the package pins "
                   f"'{pkg.model.repo}'")  # fmt: skip
    if h.seed != workload.seed:
        out.append(f"the run's seed is {h.seed}, workload '{workload.id}' declares {workload.seed}")
    return out


@rule(
    RuleId.RECORDS_BELONG,
    "A run's header matches the package: engine name and version, served model, API, "
    "hardware, seed (what a v1 file lacks is listed as cannot verify).",
    "Figures of another engine, model or machine are not sold as this configuration's.",
)
def records_belong(ctx: Context) -> Findings:
    for where, run, ev in ctx.runs_with_evidence():
        workload = ctx.workload_of(run)
        problems = _header_problems(ctx, run, ev, workload) if workload else []
        if problems:
            yield finding(
                RuleId.RECORDS_BELONG, f"{where}.file", f"{run.file}: {'; '.join(problems)}",
                "measure this package's engine, model and hardware, or fix the package",
                ctx.figures_using(run.id),
            )  # fmt: skip


def _drifted(ev: Evidence, counted: int | None, requested: int | None) -> bool:
    """Server-counted prompt tokens far from a target the harness calibrated against the
    same server (``tokenizer`` names the calibration; uncalibrated runs are not compared)."""
    calibrated = ev.header.tokenizer is not None and "uncalibrated" not in ev.header.tokenizer
    if not calibrated or counted is None or not requested:
        return False
    return abs(counted - requested) > CALIBRATED_DRIFT * requested


def _range_problems(ev: Evidence, w: Workload) -> list[str]:
    lo, hi = w.prompt_tokens.min, w.prompt_tokens.max
    out = []
    for r in ev.requests:
        if r.requested_output_tokens is not None and r.requested_output_tokens != w.output_tokens:
            out.append(f"{r.id} requested {r.requested_output_tokens} output tokens")
        if r.requested_prompt_tokens is not None and not lo <= r.requested_prompt_tokens <= hi:
            out.append(f"{r.id} asked for a {r.requested_prompt_tokens}-token prompt")
        if (
            r.ok
            and r.prompt_tokens is not None
            and not (lo * (1 - PROMPT_DRIFT) <= r.prompt_tokens <= hi * (1 + PROMPT_DRIFT))
        ):
            out.append(f"{r.id} sent a {r.prompt_tokens}-token prompt")
        elif _drifted(ev, r.prompt_tokens, r.requested_prompt_tokens):
            out.append(f"{r.id} counted {r.prompt_tokens} prompt tokens for a calibrated "
                       f"{r.requested_prompt_tokens}")  # fmt: skip
    spec = ev.header.workload
    if spec is None and ev.version >= 2 and ev.header.imported_from is None:
        out.append("the v2 header has no workload, which `bench run` always writes")
    if spec is not None:
        asked = (spec.prompt_min, spec.prompt_max, spec.output_tokens, spec.requests, spec.warmup)
        declared = (lo, hi, w.output_tokens, w.measured_requests, w.warmup_requests)
        if asked != declared or not set(w.concurrencies) <= set(spec.concurrencies):
            out.append(f"the header's workload {asked} is not the declared {declared}")
    return out


@rule(
    RuleId.WORKLOAD_RANGES,
    "Requested output tokens equal the workload's, requested and counted prompt lengths lie "
    "in its declared range (2 % drift allowed for counted ones), and a v2 header's workload "
    "is the declared one.",
    "A workload is described as it was run, not as it was meant to be.",
)
def workload_ranges(ctx: Context) -> Findings:
    for where, run, ev in ctx.runs_with_evidence():
        workload = ctx.workload_of(run)
        problems = _range_problems(ev, workload) if workload else []
        if problems:
            yield finding(
                RuleId.WORKLOAD_RANGES,
                f"{where}.file",
                f"{run.file}: {len(problems)} departure(s) from workload '{run.workload}', "
                f"first: {problems[0]}",
                "declare the prompt range and output length that were run",
                ctx.figures_using(run.id),
            )


@rule(
    RuleId.ACHIEVED_CONCURRENCY,
    "A figure labelled concurrency N rests on at least N measured requests per run, and the "
    "time-weighted mean in flight over the steady window is within concurrency_tolerance_pct of N.",
    "A concurrency label describes the load that was really applied.",
)
def achieved_concurrency(ctx: Context) -> Findings:
    tol = ctx.package.measurements.concurrency_tolerance_pct
    if tol > MAX_CONCURRENCY_TOLERANCE_PCT:
        yield finding(
            RuleId.ACHIEVED_CONCURRENCY, "measurements.concurrency_tolerance_pct",
            f"a {tol:g} % concurrency tolerance lets a label exceed the applied load by more "
            f"than {MAX_CONCURRENCY_TOLERANCE_PCT:g} %", "label figures with the load applied",
            tuple(f.id for _, f in ctx.measured_figures()),
        )  # fmt: skip
    for where, f in ctx.measured_figures():
        for run_id in f.runs:
            ev = ctx.evidence(run_id) if ctx.package.run(run_id) else None
            if ev is None or not ev.measured(f.concurrency):
                continue
            yield from _load(ctx, where, f, run_id, len(ev.measured(f.concurrency)), tol)


def _load(ctx: Context, where: str, f: Figure, run_id: str, count: int, tol: float) -> Findings:
    got = ctx.achieved(run_id, f.concurrency)
    if count < f.concurrency:
        problem = f"only {count} measured requests at concurrency {f.concurrency}"
    elif got is None or abs(got - f.concurrency) > f.concurrency * tol / 100:
        shown = "none" if got is None else f"{got:.2f}"
        problem = (f"the records keep {shown} requests in flight on average over the steady "
                   f"window, not {f.concurrency} (tolerance {tol:g} %)")  # fmt: skip
    else:
        return
    yield finding(
        RuleId.ACHIEVED_CONCURRENCY, f"{where}.concurrency", f"'{f.label}', run {run_id}: {problem}",
        "label the figure with the load that was applied, or re-measure", (f.id,),
    )  # fmt: skip


def _file_digest(ctx: Context, run: Run) -> str:
    return hashlib.sha256(ctx.loaded.source.read_bytes(run.file)).hexdigest()


@rule(
    RuleId.RUN_IDENTITY,
    "Each run is its own file: no two runs share a file, its contents or its run_uid.",
    "Replicates are separate measurements, not one file counted twice.",
)
def run_identity(ctx: Context) -> Findings:
    seen: dict[str, str] = {}
    for where, run, ev in ctx.runs_with_evidence():
        if ev.version >= 2 and ev.header.imported_from is None and not ev.header.run_uid:
            yield finding(
                RuleId.RUN_IDENTITY, f"{where}.file", f"{run.file}: the v2 header has no run_uid, which "
                "`bench run` always writes", "keep the header `bench run` wrote",
                ctx.figures_using(run.id),
            )  # fmt: skip
        keys = [f"file {run.file}", f"contents {_file_digest(ctx, run)}"]
        keys += [f"run_uid {ev.header.run_uid}"] if ev.header.run_uid else []
        for key in keys:
            if key in seen:
                yield finding(
                    RuleId.RUN_IDENTITY, f"{where}.file", f"run {run.id} has the same {key.split()[0]} as run "
                    f"{seen[key]}", "give each run its own evidence file from its own measurement",
                    ctx.figures_using(run.id) + ctx.figures_using(seen[key]),
                )  # fmt: skip
                break
            seen[key] = run.id


@rule(
    RuleId.ALL_RUNS_USED,
    "A measured figure uses every current run of its workload and configuration; a run left "
    "out is retracted with a reason and a date.",
    "Runs that disagree are not quietly dropped to make the rest agree.",
)
def all_runs_used(ctx: Context) -> Findings:
    pkg = ctx.package
    for where, f in ctx.measured_figures():
        first = pkg.run(f.runs[0]) if f.runs else None
        if first is None:
            continue
        key = (first.workload, first.config)
        missing = [
            r.id
            for r in pkg.measurements.runs
            if (r.workload, r.config) == key and r.current and r.id not in f.runs
        ]
        retracted = [r for r in f.runs if (run := pkg.run(r)) is not None and not run.current]
        retracted += sorted({r for r in f.runs if f.runs.count(r) > 1})  # one run named twice
        if missing or retracted:
            what = (
                f"leaves out current run(s) {missing}"
                if missing
                else f"uses retracted or repeated run(s) {retracted}"
            )
            yield finding(
                RuleId.ALL_RUNS_USED, f"{where}.runs", f"'{f.label}' {what}",
                "name every current run of the configuration; retract a run (status: retracted, "
                "reason, date) to leave it out", (f.id,),
            )  # fmt: skip
    yield from _unused_runs(ctx)


def _unused_runs(ctx: Context) -> Findings:
    """A current run no figure names is a run left out (whatever its ``config`` label says;
    a figure retracted with its reason accounts for its runs), and a run id defined twice
    hides one of its files."""
    pkg = ctx.package
    used = {r for f in pkg.measurements.figures for r in f.runs}
    ids = [r.id for r in pkg.measurements.runs]
    for i, run in enumerate(pkg.measurements.runs):
        where = f"measurements.runs[{i}]"
        if ids.count(run.id) > 1:
            yield finding(
                RuleId.ALL_RUNS_USED, f"{where}.id", f"run id '{run.id}' is defined {ids.count(run.id)} times",
                "give every run its own id", ctx.figures_using(run.id),
            )  # fmt: skip
        elif run.current and run.id not in used:
            yield finding(
                RuleId.ALL_RUNS_USED, f"{where}.status",
                f"current run '{run.id}' ({run.workload}, config {run.config}) backs no "
                "figure", "use it in the figures of its configuration, or retract it "
                "(status: retracted, reason, date)",
            )  # fmt: skip


def _window(ev: Evidence) -> tuple[float, float] | None:
    start = instant(ev.header.started_at)
    if start is None:
        return None
    anchor = start.timestamp()
    if not ev.requests:
        return None
    ends = [r.t_end if r.t_end is not None else r.t_send for r in ev.requests]
    return anchor + min(r.t_send for r in ev.requests), anchor + max(ends)


def _durations(ev: Evidence) -> list[tuple[float, ...]]:
    return sorted(
        (round(r.t_end - r.t_send, 7), *(round(t - r.t_send, 7) for t in r.t_content[:4]))
        for r in ev.requests
        if r.t_end is not None and not r.warmup
    )


_LOOPBACK = ("localhost", "::1", "0.0.0.0")


def _server(endpoint: str) -> tuple[str, int | None]:
    """An endpoint as a server: host (every loopback spelling is one) and port, whatever the
    scheme's case, a trailing slash or the ``/v1`` path say."""
    try:
        url = urlparse(endpoint.strip().lower())
        port = url.port or {"http": 80, "https": 443}.get(url.scheme)
    except ValueError:
        return endpoint, None
    host = url.hostname or ""
    loopback = host in _LOOPBACK or host.startswith("127.")
    return ("loopback" if loopback else host), port


def _same_server(a: Evidence, b: Evidence) -> bool:
    """Same endpoint; a loopback endpoint is the same server only from the same host."""
    if _server(a.header.endpoint) != _server(b.header.endpoint):
        return False
    loopback = _server(a.header.endpoint)[0] == "loopback"
    return not loopback or a.header.host.strip().lower() == b.header.host.strip().lower()


RESCALED_SPREAD = 1e-3
"""Honest replicates' inter-token gaps differ by 2-4 % (median absolute deviation of their
ratios, the examples' runs); a copy rescaled or shifted, with or without microsecond
noise, keeps them within 0.1 % of one ratio."""


def _gaps(r: RequestRecord) -> np.ndarray:
    stamps = [r.t_send, *r.t_content, r.t_end if r.t_end is not None else r.t_send]
    return np.diff(np.asarray(stamps, dtype=np.float64))


def _rescaled(a: Evidence, b: Evidence) -> bool:
    """Whether ``a``'s measured timings are ``b``'s multiplied by one factor (1: shifted)."""

    def order(ev: Evidence) -> list[RequestRecord]:
        done = [r for r in ev.requests if r.ok and not r.warmup]
        return sorted(done, key=lambda r: (r.concurrency, r.t_send))

    xs, ys = [], []
    for ra, rb in zip(order(a), order(b), strict=False):
        ga, gb = _gaps(ra), _gaps(rb)
        n = min(len(ga), len(gb))
        xs.append(ga[:n])
        ys.append(gb[:n])
    if not xs:
        return False
    x, y = np.concatenate(xs), np.concatenate(ys)
    keep = (x > 1e-4) & (y > 1e-4)
    x, y = x[keep], y[keep]
    if len(x) < 20 or _spread(y) <= 10 * RESCALED_SPREAD:
        return False  # timings too regular (synthetic) for their ratios to tell a copy
    return _spread(x / y) <= RESCALED_SPREAD


def _spread(values: np.ndarray) -> float:
    """Median absolute deviation relative to the median."""
    mid = float(np.median(values))
    return float(np.median(np.abs(values - mid))) / mid if mid else math.inf


COPY_U = 0.25
"""A copy's token-by-token fluctuations follow the original's: the residual variance left
when one run's fluctuations predict the other's, over that left when each request is paired
with the next one instead (U), is 0.0001-0.18 for a copy with 0-100 us of noise per stamp,
rescaled or shifted, and 0.60 or more for every honest replicate pair in the repository
(docs/rules.md, SK129). Refused below 0.25, unless the rest of the runs clears them."""
REST_U = 0.6
"""Under ``COPY_U``, a pair is still taken for independent when U of the rest of the runs
(:func:`rest_statistic`) is at least this: honest pairs measure 0.86 and above there (one
host pause shared at the same token made their whole-run U as low as 0.05), and copies of
the repository's runs with up to 500 us of noise per stamp 0.52 and below."""
FINE_STRUCTURE_S = 1e-6
"""Fluctuations under a microsecond (root mean square) are float rounding of synthetic
timings, not a clock's: such files have no fine structure to compare."""
_KEY = re.compile(r"^r\d+-(c\d+-[wm]\d+)$")
_MIN_POINTS = 50


def _fluctuations(r: RequestRecord) -> tuple[np.ndarray, np.ndarray] | None:
    """The inter-token gaps of a request less their mean (its fine structure), and when
    each gap ended."""
    if len(r.t_content) < 4:
        return None
    stamps = np.asarray(r.t_content, dtype=np.float64)
    gaps = np.diff(stamps)
    centred: np.ndarray = gaps - gaps.mean()
    return centred, stamps[1:]


Groups = dict[int, dict[str, tuple[np.ndarray, np.ndarray]]]
"""Per concurrency and request key: the fluctuations and the window (of ``WINDOWS``) each
one falls in."""
_GROUPS: dict[int, tuple[Evidence, Groups]] = {}
"""Each file's fluctuations, computed once for all its pairs; the entry holds the file, so
its id is not reused while it is cached (the 32 most recent)."""
WINDOWS = 16
"""A run's gaps are cut into this many windows of equal count, in the order they ended."""
LEFT_OUT = 4
"""U is taken with each ``LEFT_OUT`` adjacent windows (a quarter of the gaps) left out in
turn, and the largest counts: a pause of the host, however long, ends the gaps it
delays at about one time, so they fall in one or two windows."""


def _groups(ev: Evidence) -> Groups:
    cached = _GROUPS.get(id(ev))
    if cached is not None and cached[0] is ev:
        return cached[1]
    if len(_GROUPS) >= 32:
        _GROUPS.pop(next(iter(_GROUPS)))
    _GROUPS[id(ev)] = (ev, _fluctuation_groups(ev))
    return _GROUPS[id(ev)][1]


def _fluctuation_groups(ev: Evidence) -> Groups:
    """Fluctuations of the measured successful requests per concurrency, by the key ``bench
    run`` derives the prompt from (``cC-mI``), else by send order, with their windows."""
    done = sorted((r for r in ev.requests if r.ok and not r.warmup), key=lambda r: r.t_send)
    found: list[tuple[int, str, np.ndarray, np.ndarray]] = []
    for i, r in enumerate(done):
        m, fine = _KEY.match(r.id), _fluctuations(r)
        if fine is not None:
            found.append((r.concurrency, m[1] if m else str(i), *fine))
    if not found:
        return {}
    ends = np.concatenate([t for *_, t in found])
    rank = np.empty(len(ends), dtype=np.int64)
    rank[np.argsort(ends, kind="stable")] = np.arange(len(ends))
    windows = rank * WINDOWS // len(ends)
    out: Groups = {}
    at = 0
    for conc, key, fluctuations, t in found:
        out.setdefault(conc, {})[key] = (fluctuations, windows[at : at + len(t)])
        at += len(t)
    return out


def _window_sums(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Per window: the count of points, sum x^2, sum y^2 and sum xy (4 x ``WINDOWS``)."""
    return np.stack([np.bincount(w, weights=v, minlength=WINDOWS)
                     for v in (np.ones_like(x), x * x, y * y, x * y)])  # fmt: skip


def _correlation(sums: np.ndarray) -> float | None:
    """The correlation of the points whose window sums add up to ``sums``."""
    count, sxx, syy, sxy = (float(v) for v in sums)
    if count < _MIN_POINTS:
        return None
    floor = count * FINE_STRUCTURE_S**2
    if not (floor < sxx < math.inf and floor < syy < math.inf):
        return None  # too regular (synthetic): no fine structure above float rounding
    return sxy / math.sqrt(sxx * syy)


def _paired(ga: Groups, gb: Groups, offset: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """a's fluctuations, b's paired with them (request k of a with request k + offset of b,
    same concurrency, in key order), and a's window of each."""
    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    ws: list[np.ndarray] = []
    for conc in sorted(ga.keys() & gb.keys()):
        keys = sorted(ga[conc].keys() & gb[conc].keys())
        for i, key in enumerate(keys):
            (fa, wa), (fb, _) = ga[conc][key], gb[conc][keys[(i + offset) % len(keys)]]
            n = min(len(fa), len(fb))
            xs.append(fa[:n])
            ys.append(fb[:n])
            ws.append(wa[:n])
    if not xs:
        empty = np.empty(0)
        return empty, empty, empty.astype(np.int64)
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(ws)


def _u(matched: float | None, shifted: float | None) -> float | None:
    if matched is None or shifted is None or matched <= 0:
        return None
    return (1 - matched**2) / max(1 - shifted**2, 1e-12)


def _sums(ga: Groups, gb: Groups) -> tuple[np.ndarray, np.ndarray]:
    """Window sums of a against b, request for request and request against the next."""
    return _window_sums(*_paired(ga, gb, 0)), _window_sums(*_paired(ga, gb, 1))


def copy_statistic(a: Evidence, b: Evidence) -> float | None:
    """U: how much better a's fluctuations predict b's request for request than for the next
    request (1 - r^2 matched over 1 - r^2 shifted). A shift leaves gaps alone, a scale
    keeps their correlation, and noise smaller than the fluctuations keeps it near 1."""
    matched, shifted = _sums(_groups(a), _groups(b))
    return _u(_correlation(matched.sum(axis=1)), _correlation(shifted.sum(axis=1)))


def _rest_of(ga: Groups, gb: Groups) -> float | None:
    """The largest U with each quarter of a's gaps (``LEFT_OUT`` adjacent windows) left out."""
    matched, shifted = _sums(ga, gb)
    total_m, total_s = matched.sum(axis=1), shifted.sum(axis=1)
    found: list[float] = []
    for left_out in range(WINDOWS - LEFT_OUT + 1):
        out = slice(left_out, left_out + LEFT_OUT)
        u = _u(_correlation(total_m - matched[:, out].sum(axis=1)),
               _correlation(total_s - shifted[:, out].sum(axis=1)))  # fmt: skip
        if u is not None:
            found.append(u)
    return max(found, default=None)


def rest_statistic(a: Evidence, b: Evidence) -> float | None:
    """U of the rest of the run: the largest U with a quarter of the gaps left out, the
    quarters cut from either file's gaps, the lower of the two (neither file chooses).

    Two honest runs can share one event (a pause of the host at the same token of the same
    requests, by chance or at a deterministic point of the same workload) that alone makes
    their U low: 0.05 for one 300 ms pause. A copy repeats the rest of the run too, so its
    rest stays low; an honest pair's rest is where honest pairs are (0.86 and above).
    None when a quarter left out leaves too few gaps to say."""
    ga, gb = _groups(a), _groups(b)
    found = [u for u in (_rest_of(ga, gb), _rest_of(gb, ga)) if u is not None]
    return min(found, default=None)


def _dependence(a: Evidence, b: Evidence) -> str | None:
    wa, wb = _window(a), _window(b)
    same = _same_server(a, b)
    if same and wa and wb and wa[0] < wb[1] and wb[0] < wa[1]:
        return "its records overlap in time with"
    return repeats_timings(a, b)


def repeats_timings(a: Evidence, b: Evidence) -> str | None:
    """How ``a`` repeats ``b``'s timings (exactly, rescaled or shifted, or request for
    request with noise added), or None for an independent measurement."""
    da, db = _durations(a), _durations(b)
    shared = sum(1 for x, y in zip(da, db, strict=False) if x == y)
    if da and shared * 2 > len(da):
        return f"repeats the per-request timings ({shared} of {len(da)} requests) of"
    if _rescaled(a, b):
        return "repeats, rescaled or shifted, the inter-token timings of"
    u = copy_statistic(a, b)
    if u is None or u >= COPY_U:
        return None
    rest = rest_statistic(a, b)
    if rest is not None and rest >= REST_U:
        return None  # one shared event, not a copy: the rest of the runs is independent
    shown = "" if rest is None else f", {rest:.3f} without any one quarter of the run"
    return (f"repeats, request for request, the token-by-token fluctuations (U = {u:.3f}"
            f"{shown}; honest replicates 0.60 and above) of")  # fmt: skip


def _unanchored(ev: Evidence) -> bool:
    """A file ``bench run`` wrote always carries its wall-clock window (imported ones may not)."""
    return ev.header.imported_from is None and (
        instant(ev.header.started_at) is None or instant(ev.header.ended_at) is None
    )


@rule(
    RuleId.INDEPENDENT_REPLICATES,
    "Runs are independent: no run repeats another's per-request timings, and no two runs on "
    "the same endpoint overlap in time.",
    "Two runs agreeing is evidence only when they were measured separately.",
)
def independent_replicates(ctx: Context) -> Findings:
    runs = list(ctx.runs_with_evidence())
    for where, run, ev in runs:
        if _unanchored(ev):
            yield finding(
                RuleId.INDEPENDENT_REPLICATES, f"{where}.file",
                f"{run.file}: started_at '{ev.header.started_at}' or ended_at "
                f"'{ev.header.ended_at}' is not a wall-clock time, so no overlap can be ruled out",
                "keep the times `bench run` wrote", ctx.figures_using(run.id),
            )  # fmt: skip
    for (_, ra, ea), (wb, rb, eb) in itertools.combinations(runs, 2):
        how = _dependence(eb, ea)
        if how:
            yield finding(
                RuleId.INDEPENDENT_REPLICATES, f"{wb}.file", f"run {rb.id} {how} run {ra.id}",
                "measure each replicate on its own, one after the other",
                ctx.figures_using(ra.id) + ctx.figures_using(rb.id),
            )  # fmt: skip


def _stock_baseline_only(ctx: Context) -> set[str]:
    """Runs that back only the stock baselines of speedups (SK131 reads those against the
    engine's defaults; they are not the configuration the kit ships)."""
    pkg = ctx.package
    baselines = {s.baseline for s in pkg.measurements.speedups if s.baseline_is_stock}
    out = set()
    for run in ctx.current_runs():
        using = ctx.figures_using(run.id)
        if using and set(using) <= baselines:
            out.add(run.id)
    return out


def _resting_speedups(ctx: Context, figures: tuple[str, ...]) -> Findings:
    for i, s in enumerate(ctx.package.measurements.speedups):
        if s.figure in figures:
            yield finding(
                RuleId.SHIPPED_IS_MEASURED, f"measurements.speedups[{i}]",
                f"speedup '{s.id}' rests on figure '{s.figure}', measured with a serve command "
                "the package does not ship", "measure the shipped configuration, or ship the "
                "measured one", (s.figure,),
            )  # fmt: skip


@rule(
    RuleId.SHIPPED_IS_MEASURED,
    "Every run's recorded serve command and environment equal the package's serve, flag for "
    "flag (a stock baseline's runs excepted: SK131 reads them).",
    "The figures (and a speedup) of a configuration the kit does not deploy are not published "
    "as its figures.",
)
def shipped_is_measured(ctx: Context) -> Findings:
    baseline = _stock_baseline_only(ctx)
    refused: set[str] = set()
    for where, run, _ in ctx.runs_with_evidence():
        serve = ctx.serve_of(run) if run.id not in baseline else None
        diff = differences(ctx.package, serve) if serve is not None else []
        if diff:
            figures = ctx.figures_using(run.id)
            refused |= set(figures)
            yield finding(
                RuleId.SHIPPED_IS_MEASURED, f"{where}.file",
                f"run {run.id} ran a serve command the package does not ship: {'; '.join(diff)}",
                "set serve (entrypoint, args, env, served_model_name) to the command that was "
                "measured, or measure the command the package ships", figures,
            )  # fmt: skip
    yield from _resting_speedups(ctx, tuple(sorted(refused)))


@rule(
    RuleId.RECORDED_NOT_BLANK,
    "A v2 file `bench run` wrote leaves no field null that the harness records: engine name "
    "and version (where the engine answers /version), served models, hardware, workload, serve "
    "configuration, requests sent, run id, and each record's send position and content parts.",
    "A blank is not trust: a field the harness could have recorded is never filled in from the "
    "package's declarations.",
)
def recorded_not_blank(ctx: Context) -> Findings:
    for where, run, ev in ctx.runs_with_evidence():
        blank = ev.blanks(ctx.engine_answers)
        if blank:
            yield finding(
                RuleId.RECORDED_NOT_BLANK, f"{where}.file",
                f"{run.file}: `bench run` records {', '.join(blank)}, which this v2 file leaves "
                "null, so the figures resting on it cannot be shown measured",
                "measure with `servekit bench run --hardware LABEL --serve-command '...'` and keep "
                "the file it writes", ctx.figures_using(run.id),
            )  # fmt: skip


CLOCK_SKEW = dt.timedelta(minutes=5)
"""How far a client's wall clock may run ahead of the publisher's calendar."""
_LAST_ZONE = dt.timezone(dt.timedelta(hours=-12))  # where a calendar day ends last


def _day_end(day: dt.date) -> dt.datetime:
    """The last instant any clock on Earth shows ``day`` (24:00 at UTC-12), plus the skew."""
    return dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), _LAST_ZONE) + CLOCK_SKEW


def _dates_after(ctx: Context, run: Run, start: dt.datetime) -> list[str]:
    pkg = ctx.package
    dates = [("the run's measured date (runs[].date)", run.date),
             ("the package's proof date (proof_verified)", pkg.proof_verified),
             ("the package's publication date (published)", pkg.published)]  # fmt: skip
    return [f"{what} {day}" for what, day in dates if day is not None and start > _day_end(day)]


@rule(
    RuleId.DATES_IN_ORDER,
    "Every run's recorded start precedes the package's measured date (runs[].date), proof date "
    "and publication date.",
    "Evidence from the future of the claims it backs is not evidence for them.",
)
def dates_in_order(ctx: Context) -> Findings:
    for where, run, ev in ctx.runs_with_evidence():
        start = instant(ev.header.started_at)
        later = _dates_after(ctx, run, start) if start is not None else []
        if later:
            yield finding(
                RuleId.DATES_IN_ORDER, f"{where}.file",
                f"{run.file} started at {ev.header.started_at}, after {', '.join(later)}",
                "date the run when it was measured; a package is measured before it is "
                "verified and published", ctx.figures_using(run.id),
            )  # fmt: skip


def _prompt_range(ctx: Context, run: Run, ev: Evidence) -> tuple[int, int] | None:
    """The range ``bench run`` drew from: the header's workload, else (v1) the package's."""
    if ev.header.workload is not None:
        return ev.header.workload.prompt_min, ev.header.workload.prompt_max
    w = ctx.workload_of(run)
    return (w.prompt_tokens.min, w.prompt_tokens.max) if w else None


def _foreign_lengths(ev: Evidence, lo: int, hi: int) -> list[str]:
    """Records whose requested prompt length is not the one their seed, concurrency, kind and
    index give (a record renumbered after a drop, or relabelled to another concurrency)."""
    out = []
    for r in ev.requests:
        m = SERVEKIT_ID.match(r.id)
        if m is None or r.requested_prompt_tokens is None:
            continue
        key = prompt_key(r.concurrency, r.warmup, int(m[3]))
        want = prompt_target(ev.header.seed, key, lo, hi)
        if r.requested_prompt_tokens != want:
            out.append(f"{r.id} asked for {r.requested_prompt_tokens} tokens, seed "
                       f"{ev.header.seed} gives {key} {want}")  # fmt: skip
    return out


@rule(
    RuleId.PROMPTS_RECOMPUTED,
    "Every servekit record's requested prompt length is the one its run's seed, its "
    "concurrency, kind and index give.",
    "Records dropped and renumbered, or relabelled to another concurrency, do not pass for "
    "the requests that were sent.",
)
def prompts_recomputed(ctx: Context) -> Findings:
    for where, run, ev in ctx.runs_with_evidence():
        bounds = _prompt_range(ctx, run, ev)
        foreign = _foreign_lengths(ev, *bounds) if bounds and bounds[0] <= bounds[1] else []
        if foreign:
            yield finding(
                RuleId.PROMPTS_RECOMPUTED, f"{where}.file",
                f"{run.file}: {len(foreign)} record(s) carry another request's prompt length, "
                f"first {foreign[0]}", "keep the records `bench run` wrote, as it numbered them",
                ctx.figures_using(run.id),
            )  # fmt: skip
