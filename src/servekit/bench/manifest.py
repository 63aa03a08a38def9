"""``OUT/manifest.json``: which files in ``--out`` belong to the last ``bench run``.

``bench run`` writes it at the start (status ``running``) and again after each run file
and when it stops (``complete`` or ``partial``): each evidence file with its sha256 and
whether its run is whole. ``bench run``'s closing summary and ``bench summary DIR`` read
only the files it names, so stale ``run-*.jsonl`` of an older run in the same directory
never mix in; :func:`select_evidence` says what it left out and why.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from servekit.bench.journal import SUFFIX, write_atomic
from servekit.errors import BenchError, EvidenceError
from servekit.package.evidence import WorkloadSpec
from servekit.seams import parsing, read_utf8

MANIFEST_FILE = "manifest.json"
FORMAT: Literal["servekit.bench-manifest/v1"] = "servekit.bench-manifest/v1"
Status = Literal["running", "complete", "partial"]


class ManifestFile(BaseModel):
    """One evidence file of the run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    file: str
    sha256: str
    status: Literal["complete", "partial"]
    records: int


class RunManifest(BaseModel):
    """The files of one ``bench run`` invocation (resumed ones included) and its workload."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["servekit.bench-manifest/v1"] = FORMAT
    status: Status
    endpoint: str
    model: str
    api: str
    runs: int
    workload: WorkloadSpec
    files: tuple[ManifestFile, ...] = ()
    set_aside: tuple[str, ...] = ()
    """PARTIAL files a --resume measured again: kept, never summarized."""


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()  # evidence files are megabytes


def file_entry(path: Path, *, partial: bool) -> ManifestFile:
    with path.open("rb") as fh:
        records = sum(1 for _ in fh) - 1
    status: Literal["complete", "partial"] = "partial" if partial else "complete"
    return ManifestFile(file=path.name, sha256=sha256_file(path), status=status, records=records)


def write_manifest(out: Path, manifest: RunManifest) -> None:
    write_atomic(out / MANIFEST_FILE, manifest.model_dump_json(indent=2) + "\n")


def read_manifest(out: Path) -> RunManifest | None:
    """The manifest in ``out``, or None when there is none."""
    path = out / MANIFEST_FILE
    if not path.is_file():
        return None

    def malformed(exc: Exception) -> EvidenceError:
        return EvidenceError(
            f"not a bench run manifest ({type(exc).__name__}: {str(exc).splitlines()[0][:120]})",
            path=path,
            hint="rerun `servekit bench run`, or pass the evidence files themselves",
        )

    text = read_utf8(path, lambda failure: malformed(failure.exc))
    with parsing(malformed, ValueError):
        return RunManifest.model_validate(json.loads(text))


def no_evidence(path: Path) -> BenchError:
    return BenchError(
        f"no evidence at {path}",
        hint="pass an evidence file or the --out directory of `servekit bench run`",
    )


@dataclass(frozen=True)
class Selection:
    """The evidence files to summarize, and what was left out and why (for stderr)."""

    files: tuple[Path, ...]
    notes: tuple[str, ...] = ()


def _checked(out: Path, entry: ManifestFile) -> Path:
    path = out / entry.file
    if not path.is_file():
        raise EvidenceError(
            f"named in {MANIFEST_FILE} but missing",
            path=path,
            hint="restore the file, or measure again with `servekit bench run --force`",
        )
    actual = sha256_file(path)
    if actual != entry.sha256:
        raise EvidenceError(
            f"changed since {MANIFEST_FILE} was written: sha256 {actual}, expected {entry.sha256}",
            path=path,
            hint="evidence is never edited by hand; measure again with `servekit bench run`",
        )
    return path


def _manifest_notes(out: Path, manifest: RunManifest, named: set[str]) -> list[str]:
    notes = []
    stale = sorted(p.name for p in out.glob("*.jsonl") if p.name not in named)
    aside = [name for name in stale if name in manifest.set_aside]
    ignored = [name for name in stale if name not in manifest.set_aside]
    if ignored:
        notes.append(
            f"ignored (not in {out / MANIFEST_FILE}, from an older run): {', '.join(ignored)}"
        )
    if aside:
        notes.append(f"ignored (PARTIAL runs measured again by --resume): {', '.join(aside)}")
    journals = sorted(p.name for p in out.glob(f"*.jsonl{SUFFIX}"))
    if manifest.status == "running" or journals:
        notes.append(
            f"the run in {out} did not finish (manifest status: {manifest.status}; "
            f"unrecovered journals: {', '.join(journals) or 'none'}): run the same "
            "`servekit bench run` with --resume to recover and complete it"
        )
    partial = [f.file for f in manifest.files if f.status == "partial"]
    if partial:
        notes.append(f"PARTIAL (interrupted) runs included: {', '.join(partial)}")
    return notes


def _select_directory(directory: Path) -> Selection:
    manifest = read_manifest(directory)
    if manifest is None:
        files = tuple(sorted(directory.glob("*.jsonl")))
        if not files:
            raise no_evidence(directory)
        names = ", ".join(p.name for p in files)
        return Selection(
            files,
            (
                f"{directory} has no {MANIFEST_FILE} (not written by `servekit bench run`, or "
                f"by a version before manifests): summarizing every *.jsonl in it: {names}; "
                "name the files to summarize to choose",
            ),
        )
    files = tuple(_checked(directory, entry) for entry in manifest.files)
    return Selection(files, tuple(_manifest_notes(directory, manifest, {p.name for p in files})))


def select_evidence(paths: Sequence[Path]) -> Selection:
    """The files ``bench summary PATH...`` reads: each file itself; for a directory, the
    files its manifest names (checked against their sha256), or without a manifest every
    ``*.jsonl`` in it, with a note saying so."""
    files: list[Path] = []
    notes: list[str] = []
    for path in paths:
        if path.is_file():
            files.append(path)
            continue
        if not path.is_dir():
            raise no_evidence(path)
        selected = _select_directory(path)
        files.extend(selected.files)
        notes.extend(selected.notes)
    if not files:
        raise BenchError(
            f"no evidence in {', '.join(str(p) for p in paths)}: {MANIFEST_FILE} names no file",
            hint="; ".join(notes) or "no run completed a request; run `servekit bench run` again",
        )
    return Selection(tuple(files), tuple(notes))
