"""``servekit bench compare``: every figure of a kit next to the buyer's replay of it.

Steps:
  1. read ``replay.json`` and the kit; the kit's receipt must be the one the replay
     verified (its sha256 is in ``replay.json``);
  2. load each replayed evidence file, checking its digest against ``replay.json``;
  3. per figure of the package, recompute the buyer's value with the claim rules' own
     arithmetic (:func:`servekit.package.stats.summarize` and
     :func:`~servekit.package.stats.figure_value`) and give a verdict: within the
     tolerance, better, worse; reported figures get the buyer's value and no verdict;
     figures of a workload that was not replayed, or that the publisher retracted, are
     listed as such.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from servekit.errors import ReplayError
from servekit.package.evidence import Evidence, load_evidence
from servekit.package.files import RECEIPT_FILE
from servekit.package.models import Figure, MeasurementStatus, Metric, Package, Provenance
from servekit.package.stats import figure_value, summarize
from servekit.receipts.canonical import sha256_hex
from servekit.replay.models import (
    REPLAY_FILE,
    Comparison,
    FigureComparison,
    ReplayFile,
    ReplayHeader,
    Verdict,
    WorkloadResult,
)
from servekit.seams import ReadFailure, parsing, problem_text, read_bytes
from servekit.verify.archive import read_kit
from servekit.verify.contents import kit_package


def read_header(directory: Path) -> ReplayHeader:
    """``replay.json`` of a replay directory."""
    path = directory / REPLAY_FILE

    def not_a_header(exc: Exception) -> ReplayError:
        return ReplayError(f"{path} is not a replay header: {problem_text(exc)}")

    def unreadable(failure: ReadFailure) -> ReplayError:
        if failure.missing:
            return ReplayError(
                f"{path} not found", hint="DIR is the --out of `servekit bench replay`"
            )
        return not_a_header(failure.exc)

    data = read_bytes(path, unreadable)
    with parsing(not_a_header, json.JSONDecodeError):
        return ReplayHeader.model_validate_json(data)


def contained(directory: Path, name: str) -> Path:
    """``directory / name``, refusing a name that leaves ``directory``.

    An absolute name, a ``..`` part, or a path that resolves (through symbolic links)
    outside ``directory`` is a :class:`~servekit.errors.ReplayError`.
    """
    parts = name.split("/")
    if not name or name.startswith("/") or "\\" in name or {"", ".", ".."} & set(parts):
        raise ReplayError(
            f"evidence path {name!r} is not a plain path inside {directory}",
            hint="a replay's evidence files are named relative to its directory",
        )
    path = directory / name
    root = directory.resolve()
    if not path.resolve().is_relative_to(root):
        raise ReplayError(
            f"evidence path {name!r} leads outside {directory} (to {path.resolve()})",
            hint="a symbolic link in the replay directory points elsewhere; do not trust it",
        )
    return path


def _load(directory: Path, entry: ReplayFile) -> Evidence:
    path = contained(directory, entry.file)
    data = read_bytes(path, lambda failure: ReplayError(f"{path} cannot be read: {failure.exc}"))
    actual = sha256_hex(data)
    if actual != entry.sha256:
        raise ReplayError(
            f"{path} is not the file the replay wrote (sha256 {actual}, replay.json "
            f"says {entry.sha256})",
            hint="replay again; evidence must not be edited",
        )
    return load_evidence(path)


def load_replay(directory: Path, header: ReplayHeader) -> dict[str, tuple[Evidence, ...]]:
    """Step 2: each replayed workload's evidence files, digests checked."""
    return {w.id: tuple(_load(directory, f) for f in w.files) for w in header.workloads}


def _run_value(ev: Evidence, fig: Figure) -> float | None:
    summary = summarize(ev.requests, fig.concurrency)
    if summary.completed == 0:
        return None
    try:
        return figure_value(summary, fig.metric, fig.statistic, fig.scope, ev.header.gpus)
    except ValueError:
        return None


def figure_workload(package: Package, fig: Figure) -> str | None:
    """The workload a figure describes: its attribution, else its first run's workload."""
    if fig.measured_on is not None:
        return fig.measured_on.workload
    run = package.run(fig.runs[0]) if fig.runs else None
    return run.workload if run else None


def verdict_of(
    published: float, buyer: float, metric: Metric, tolerance_pct: float
) -> tuple[float | None, Verdict]:
    """(difference in percent of the published value, verdict) from the two numbers."""
    if published == 0:
        return None, Verdict.WITHIN if buyer == 0 else Verdict.WORSE
    diff = (buyer - published) / abs(published) * 100.0
    if abs(diff) <= tolerance_pct:
        return diff, Verdict.WITHIN
    higher_is_better = metric.is_throughput
    return diff, Verdict.BETTER if (diff > 0) == higher_is_better else Verdict.WORSE


def verdict(fig: Figure, buyer: float, tolerance_pct: float) -> tuple[float | None, Verdict]:
    """(difference in percent of the published value, verdict) for a measured figure."""
    return verdict_of(fig.value, buyer, fig.metric, tolerance_pct)


def _row(
    fig: Figure, workload: str | None, buyer: float | None, per_run: dict[str, float], tol: float
) -> FigureComparison:
    diff: float | None = None
    if fig.status.state is MeasurementStatus.RETRACTED:
        result = Verdict.RETRACTED
    elif buyer is None:
        result = Verdict.NO_DATA
    elif fig.provenance is Provenance.REPORTED:
        result = Verdict.REPORTED
    else:
        diff, result = verdict(fig, buyer, tol)
    return FigureComparison(
        id=fig.id,
        label=fig.label,
        metric=fig.metric,
        statistic=fig.statistic,
        concurrency=fig.concurrency,
        scope=fig.scope,
        unit=fig.unit,
        decimals=fig.decimals,
        provenance=fig.provenance,
        workload=workload,
        published=fig.value,
        buyer=buyer,
        per_run=per_run,
        diff_pct=diff,
        verdict=result,
    )


def compare_figure(
    package: Package, fig: Figure, replay: Mapping[str, tuple[Evidence, ...]], tol: float
) -> FigureComparison:
    """Step 3 for one figure."""
    workload = figure_workload(package, fig)
    runs = replay.get(workload or "")
    if runs is None:
        row = _row(fig, workload, None, {}, tol)
        keep = row.verdict is Verdict.RETRACTED
        return row if keep else row.model_copy(update={"verdict": Verdict.NOT_REPLAYED})
    values = {ev.header.run: _run_value(ev, fig) for ev in runs}
    per_run = {run: v for run, v in values.items() if v is not None}
    buyer = values.get(runs[0].header.run) if runs else None
    return _row(fig, workload, buyer, per_run, tol)


def workload_results(
    package: Package, replay: Mapping[str, tuple[Evidence, ...]]
) -> tuple[WorkloadResult, ...]:
    results = []
    for w in package.workloads:
        runs = replay.get(w.id)
        if runs is None:
            results.append(WorkloadResult(id=w.id, replayed=False))
            continue
        summaries = [summarize(ev.requests, c) for ev in runs for c in w.concurrencies]
        results.append(
            WorkloadResult(
                id=w.id,
                replayed=True,
                runs=tuple(ev.header.run for ev in runs),
                completed=sum(s.completed for s in summaries),
                failed=sum(s.failed for s in summaries),
            )
        )
    return tuple(results)


def nothing_to_compare(result: Comparison) -> bool:
    """Whether the kit publishes no measured figure to hold the replay against, and the
    replay measured at least one of its reported figures without a failed request.

    Then there is nothing to reproduce and nothing went wrong: the buyer gets their own
    measurement beside each reported value (exit 0), not a regression (exit 55).
    """
    shown = [f for f in result.figures if f.verdict is not Verdict.RETRACTED]
    return (
        all(f.provenance is Provenance.REPORTED for f in shown)
        and any(f.verdict is Verdict.REPORTED for f in shown)
        and result.failed_requests == 0
    )


def compare(kit: Path, directory: Path, *, tolerance_pct: float | None = None) -> Comparison:
    """Compare every figure of ``kit`` with the replay in ``directory``."""
    header = read_header(directory)  # 1
    contents = read_kit(kit)
    receipt = sha256_hex(contents.get(RECEIPT_FILE) or b"")
    if receipt != header.kit.receipt_sha256:
        raise ReplayError(
            f"{directory} replays another kit: its receipt is sha256:"
            f"{header.kit.receipt_sha256}, this kit's is sha256:{receipt}",
            hint=f"compare with the kit the replay verified ({header.kit_source})",
        )
    package = kit_package(contents)
    replay = load_replay(directory, header)  # 2
    tol = tolerance_pct if tolerance_pct is not None else package.measurements.tolerance_pct
    figures = tuple(compare_figure(package, f, replay, tol) for f in package.measurements.figures)
    return Comparison(
        kit=header.kit,
        tolerance_pct=tol,
        figures=figures,
        workloads=workload_results(package, replay),
        host=header.host,
        replayed_at=header.started_at,
        evidence=tuple(f for w in header.workloads for f in w.files),
    )
