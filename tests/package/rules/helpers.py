"""Break a valid package in one place and see which rules refuse it.

``fired(tmp_path, mutate=..., runs=..., evidence=...)`` writes the valid test package,
applies a definition edit, record lists, and raw edits of the JSON Lines (the header
and each request as JSON objects, or the text itself), then runs every rule.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from servekit.package.evidence import RequestRecord
from servekit.package.load import load_package
from servekit.package.models import Metric, Scope, Statistic
from servekit.package.rules import CheckReport, check
from tests.package.factories import base_definition, default_runs, recompute, write_package

Definition = dict[str, Any]
Mutate = Callable[[Definition], object]
Lines = list[dict[str, Any]]  # [header, request, request, ...]


def figure(d: Definition, fid: str) -> dict[str, Any]:
    return next(f for f in d["measurements"]["figures"] if f["id"] == fid)


def run_def(d: Definition, rid: str) -> dict[str, Any]:
    return next(r for r in d["measurements"]["runs"] if r["id"] == rid)


def set_path(path: str, value: Any) -> Mutate:
    def mutate(d: Definition) -> None:
        *parents, last = path.split(".")
        target: Any = d
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        target[last] = value

    return mutate


def edit_lines(root: Path, run: str, edit: Callable[[Lines], object]) -> None:
    path = root / "evidence" / f"{run}.jsonl"
    lines = [json.loads(t) for t in path.read_text().splitlines() if t.strip()]
    edit(lines)
    path.write_text("".join(json.dumps(obj) + "\n" for obj in lines))


def report(
    root: Path,
    mutate: Mutate | None = None,
    runs: dict[str, list[RequestRecord]] | None = None,
    evidence: dict[str, Callable[[Lines], object]] | None = None,
    text: dict[str, Callable[[str], str]] | None = None,
) -> CheckReport:
    runs = runs or default_runs()
    definition = copy.deepcopy(base_definition(runs["run-a"]))
    if mutate is not None:
        mutate(definition)
    write_package(root, definition, runs)
    for run, edit in (evidence or {}).items():
        edit_lines(root, run, edit)
    for run, change in (text or {}).items():
        path = root / "evidence" / f"{run}.jsonl"
        path.write_text(change(path.read_text()))
    return check(load_package(root))


def fired(root: Path, *args: Any, **kwargs: Any) -> set[str]:
    return {v.rule for v in report(root, *args, **kwargs).violations}


def node_value(runs: dict[str, list[RequestRecord]], conc: int) -> float:
    return recompute(runs["run-a"], Metric.OUTPUT_THROUGHPUT, Statistic.VALUE, conc, Scope.NODE)


def measured(lines: Lines, conc: int) -> Lines:
    return [r for r in lines[1:] if r["concurrency"] == conc and not r["warmup"]]
