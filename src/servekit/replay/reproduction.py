"""A signed reproduction: "I replayed this kit's grid on my hardware, and here is how it compared".

The statement is an in-toto Statement v1 whose subjects are the kit's receipt (by the
sha256 of ``receipt.dsse.json``) and every replay evidence file, and whose predicate
(``https://servekit.dev/reproduction/v1``) is the comparison. It is signed as a DSSE
envelope with the buyer's Ed25519 key, like a receipt (docs/kit.md, "Reproductions").

Steps of :func:`verify_reproduction` (the signature says who; the rest says it is true):
  1. the envelope's signature by a trusted key;
  2. in-toto v1 with the reproduction predicate, signed by the key it names;
  3. its receipt subject is the predicate's kit receipt;
  4. every row's verdict follows from its own numbers and the stated tolerance, and
     ``reproduced`` from the rows and the failed requests;
  5. with ``kit``: every kit file is the one its ``MANIFEST`` lists, and the kit's receipt
     digest, kit digest, package id, version and publisher are the predicate's;
  6. with ``replay_dir``: every evidence subject names a file inside that directory (no
     absolute path, no ``..``, no link out), digest for digest;
  7. with both: every row and workload is recomputed from the bound evidence files with
     the kit's figures (the claim rules' arithmetic, as ``bench compare`` does) and must
     equal what was signed; the verdict at the kit's own tolerance is reported too.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from servekit import __version__
from servekit.errors import ReplayError, ReproductionError, SignatureError, UntrustedKeyError
from servekit.package.evidence import Evidence, load_evidence
from servekit.package.files import RECEIPT_FILE
from servekit.package.models import MeasurementStatus, Package, Provenance
from servekit.receipts.canonical import canonical_json, sha256_hex
from servekit.receipts.formats import DIGEST_ALGORITHM, STATEMENT_TYPE
from servekit.receipts.keys import SigningKey, TrustStore
from servekit.receipts.signing import VerifiedPayload, sign_payload, verify_envelope
from servekit.replay.compare import compare_figure, contained, verdict_of, workload_results
from servekit.replay.models import (
    RECEIPT_SUBJECT_PREFIX,
    REPRODUCTION_PREDICATE_TYPE,
    Comparison,
    FigureComparison,
    Frozen,
    HostFacts,
    KitRef,
    Verdict,
    WorkloadResult,
)
from servekit.seams import parsing, problem_text, read_bytes
from servekit.verify.archive import read_kit
from servekit.verify.contents import kit_package
from servekit.verify.kit import check_manifest

REPRODUCTION_FILE = "reproduction.dsse.json"


class Subject(Frozen):
    name: str
    digest: dict[str, str]


class ReproductionPredicate(Frozen):
    """servekit reproduction predicate v1."""

    kit: KitRef
    replayer_key_id: str
    replayed_at: str
    host: HostFacts
    tolerance_pct: float
    reproduced: bool = Field(
        description="Every replayed figure within tolerance or better, no request failed."
    )
    figures: tuple[FigureComparison, ...]
    workloads: tuple[WorkloadResult, ...]
    tool: str


class ReproductionStatement(Frozen):
    model_config = Frozen.model_config | {"populate_by_name": True}

    type: str = Field(alias="_type")
    subject: tuple[Subject, ...] = Field(min_length=1)
    predicate_type: str = Field(alias="predicateType")
    predicate: ReproductionPredicate


def receipt_subject_name(kit: KitRef) -> str:
    return f"{RECEIPT_SUBJECT_PREFIX}{kit.package}@{kit.version}"


def reproduction_statement(comparison: Comparison, key_id: str) -> dict[str, Any]:
    """The statement of ``comparison`` as JSON data."""
    kit = comparison.kit
    subjects = [
        {"name": receipt_subject_name(kit), "digest": {DIGEST_ALGORITHM: kit.receipt_sha256}}
    ]
    subjects += [
        {"name": f.file, "digest": {DIGEST_ALGORITHM: f.sha256}} for f in comparison.evidence
    ]
    predicate = ReproductionPredicate(
        kit=kit,
        replayer_key_id=key_id,
        replayed_at=comparison.replayed_at,
        host=comparison.host,
        tolerance_pct=comparison.tolerance_pct,
        reproduced=comparison.reproduced,
        figures=comparison.figures,
        workloads=comparison.workloads,
        tool=f"servekit {__version__}",
    )
    return {
        "_type": STATEMENT_TYPE,
        "subject": subjects,
        "predicateType": REPRODUCTION_PREDICATE_TYPE,
        "predicate": predicate.model_dump(mode="json"),
    }


def sign_reproduction(comparison: Comparison, key: SigningKey) -> bytes:
    """The DSSE envelope (canonical JSON bytes) of the signed reproduction."""
    payload = canonical_json(reproduction_statement(comparison, key.public.key_id))
    return sign_payload(payload, key)


def _mismatch(message: str, file: str, expected: str, actual: str) -> ReproductionError:
    return ReproductionError(message, file=file, expected=expected, actual=actual)


def _statement(payload: bytes, key_id: str, file: str) -> ReproductionStatement:
    def failed(exc: Exception) -> ReproductionError:
        expected = "reproduction predicate v1"
        return _mismatch("not a servekit reproduction", file, expected, problem_text(exc))

    with parsing(failed, ValueError):
        obj = json.loads(payload)
        statement = ReproductionStatement.model_validate(obj)
    types = (statement.type, statement.predicate_type)
    if types != (STATEMENT_TYPE, REPRODUCTION_PREDICATE_TYPE):
        wanted = f"{STATEMENT_TYPE} / {REPRODUCTION_PREDICATE_TYPE}"
        raise _mismatch("not a servekit reproduction", file, wanted, " / ".join(types))
    if statement.predicate.replayer_key_id != key_id:
        raise _mismatch(
            "the reproduction names another key than the one that signed it",
            file,
            key_id,
            statement.predicate.replayer_key_id,
        )
    return statement


def _check_receipt(statement: ReproductionStatement, file: str) -> None:
    ref = statement.predicate.kit
    named = {s.name: s.digest.get(DIGEST_ALGORITHM) for s in statement.subject}
    if named.get(receipt_subject_name(ref)) != ref.receipt_sha256:
        raise _mismatch(
            "the receipt subject is not the predicate's kit",
            file,
            f"{receipt_subject_name(ref)} sha256:{ref.receipt_sha256}",
            ", ".join(named),
        )


# --- step 4: each verdict follows from its numbers ---------------------------------------


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _row_verdict(row: FigureComparison, tol: float) -> tuple[float | None, Verdict]:
    """The (difference, verdict) a row's own numbers give (as ``bench compare`` decides)."""
    if row.verdict is Verdict.RETRACTED:  # the kit says which figures are; step 5 checks it
        return row.diff_pct, row.verdict
    if row.buyer is None:
        keep = row.verdict is Verdict.NOT_REPLAYED
        return None, Verdict.NOT_REPLAYED if keep else Verdict.NO_DATA
    if row.provenance is Provenance.REPORTED:
        return None, Verdict.REPORTED
    return verdict_of(row.published, row.buyer, row.metric, tol)


def _reproduced(
    figures: tuple[FigureComparison, ...], workloads: tuple[WorkloadResult, ...]
) -> bool:
    compared = [f for f in figures if f.verdict in (Verdict.WITHIN, Verdict.BETTER, Verdict.WORSE)]
    failed = sum(w.failed for w in workloads)
    return bool(compared) and not any(f.verdict.fails for f in figures) and failed == 0


def _check_rows(predicate: ReproductionPredicate, file: str) -> None:
    tol = predicate.tolerance_pct
    for row in predicate.figures:
        diff, result = _row_verdict(row, tol)
        if result is not row.verdict or not _close(diff, row.diff_pct):
            raise _mismatch(
                f"figure {row.id}: the signed verdict does not follow from its numbers",
                file,
                f"{result.value} (published {row.published:g}, measured "
                f"{'none' if row.buyer is None else f'{row.buyer:g}'}, tolerance ±{tol:g} %)",
                f"{row.verdict.value}, difference {row.diff_pct}",
            )
    if predicate.reproduced != _reproduced(predicate.figures, predicate.workloads):
        raise _mismatch(
            "the signed result does not follow from its figures",
            file,
            f"reproduced: {not predicate.reproduced} (from the verdicts and failed requests)",
            f"reproduced: {predicate.reproduced}",
        )


# --- step 5: the kit --------------------------------------------------------------------


def _check_rows_against_kit(predicate: ReproductionPredicate, package: Package, kit: Path) -> None:
    """Each row is one of the kit's figures: its published value, provenance, retraction."""
    figures = {f.id: f for f in package.measurements.figures}
    rows = {r.id: r for r in predicate.figures}
    if rows.keys() != figures.keys():
        raise _mismatch(
            "the reproduction's figures are not the kit's",
            str(kit),
            ", ".join(figures),
            ", ".join(rows),
        )
    for row in predicate.figures:
        fig = figures[row.id]
        retracted = fig.status.state is MeasurementStatus.RETRACTED
        if (row.published, row.provenance, row.verdict is Verdict.RETRACTED) != (
            fig.value,
            fig.provenance,
            retracted,
        ):
            raise _mismatch(
                f"figure {row.id} is not the kit's",
                str(kit),
                f"published {fig.value:g}, {fig.provenance.value}"
                + (", retracted" if retracted else ""),
                f"published {row.published:g}, {row.provenance.value}, verdict {row.verdict.value}",
            )


def _check_kit(ref: KitRef, kit: Path) -> Package:
    contents = read_kit(kit)
    digest = check_manifest(contents)
    package = kit_package(contents)
    receipt = sha256_hex(contents.get(RECEIPT_FILE) or b"")
    signed = (ref.package, ref.version, ref.publisher, ref.kit_digest, ref.receipt_sha256)
    actual = (package.id, package.version, package.publisher, digest, receipt)
    if signed != actual:
        raise _mismatch(
            "the reproduction is of another kit",
            str(kit),
            f"{ref.package} {ref.version} by {ref.publisher}, kit sha256:{ref.kit_digest}, "
            f"receipt sha256:{ref.receipt_sha256}",
            f"{package.id} {package.version} by {package.publisher}, kit sha256:{digest}, "
            f"receipt sha256:{receipt}",
        )
    return package


# --- step 6: the evidence files -----------------------------------------------------------


def _evidence_files(statement: ReproductionStatement, replay_dir: Path) -> dict[str, Path]:
    """Each evidence subject's file inside ``replay_dir``, its digest checked."""
    files = {}
    for s in statement.subject:
        if s.name.startswith(RECEIPT_SUBJECT_PREFIX):
            continue
        try:
            path = contained(replay_dir, s.name)
        except ReplayError as exc:
            raise _mismatch(
                "the reproduction names an evidence file outside the replay directory",
                s.name,
                f"a plain path inside {replay_dir}",
                exc.message,
            ) from exc
        actual = sha256_hex(path.read_bytes()) if path.is_file() else "no file"
        if actual != s.digest.get(DIGEST_ALGORITHM):
            raise _mismatch(
                "a replay evidence file is not the one the reproduction signed",
                str(path),
                f"sha256:{s.digest.get(DIGEST_ALGORITHM)}",
                actual if actual == "no file" else f"sha256:{actual}",
            )
        files[s.name] = path
    return files


# --- step 7: recompute the comparison from the evidence -----------------------------------


def _replay(files: dict[str, Path]) -> dict[str, tuple[Evidence, ...]]:
    """The bound evidence by workload (``<workload>/run-N.jsonl``), in the signed order."""
    grouped: dict[str, list[Evidence]] = {}
    for name, path in files.items():
        workload = name.split("/", 1)[0] if "/" in name else ""
        grouped.setdefault(workload, []).append(load_evidence(path))
    return {w: tuple(runs) for w, runs in grouped.items()}


def _differs(signed: object, recomputed: object) -> bool:
    if isinstance(signed, float | int) and isinstance(recomputed, float | int):
        return not _close(float(signed), float(recomputed))
    if isinstance(signed, dict) and isinstance(recomputed, dict):
        return signed.keys() != recomputed.keys() or any(
            _differs(signed[k], recomputed[k]) for k in signed
        )
    return signed != recomputed


def _first_difference(signed: Frozen, recomputed: Frozen) -> str | None:
    a, b = signed.model_dump(mode="json"), recomputed.model_dump(mode="json")
    for field in a:
        if _differs(a[field], b.get(field)):
            return f"{field}: signed {a[field]!r}, recomputed {b.get(field)!r}"
    return None


def _recompute(
    predicate: ReproductionPredicate, package: Package, files: dict[str, Path], file: str
) -> None:
    replay = _replay(files)
    tol = predicate.tolerance_pct
    figures = tuple(compare_figure(package, f, replay, tol) for f in package.measurements.figures)
    workloads = workload_results(package, replay)
    if [w.id for w in predicate.workloads] != [w.id for w in workloads]:
        raise _mismatch(
            "the reproduction's workloads are not the kit's",
            file,
            ", ".join(w.id for w in workloads),
            ", ".join(w.id for w in predicate.workloads),
        )
    for row, again in zip(predicate.figures, figures, strict=True):  # ids: step 5
        _same(row.id, row, again, file)
    for workload, redone in zip(predicate.workloads, workloads, strict=True):
        _same(f"workload {workload.id}", workload, redone, file)


def _same(what: str, signed: Frozen, recomputed: Frozen, file: str) -> None:
    difference = _first_difference(signed, recomputed)
    if difference is not None:
        raise _mismatch(
            f"{what}: the signed figures are not what the bound evidence gives",
            file,
            "the comparison recomputed from the evidence files with the kit's figures",
            difference,
        )


@dataclass(frozen=True)
class VerifiedReproduction:
    """A reproduction whose signature, verdicts and (with the kit and replay) figures hold."""

    predicate: ReproductionPredicate
    key_id: str
    kit_checked: bool
    recomputed: bool
    kit_tolerance_pct: float | None = None
    reproduced_at_kit_tolerance: bool | None = None


def _at_tolerance(predicate: ReproductionPredicate, tol: float) -> bool:
    rows = tuple(
        r.model_copy(update=dict(zip(("diff_pct", "verdict"), _row_verdict(r, tol), strict=True)))
        for r in predicate.figures
    )
    return _reproduced(rows, predicate.workloads)


def _verified(data: bytes, trust: TrustStore, file: str) -> VerifiedPayload:
    """The envelope's signature, with the failure worded for a reproduction."""
    try:
        return verify_envelope(data, trust, file=file)
    except SignatureError as exc:
        cls = UntrustedKeyError if isinstance(exc, UntrustedKeyError) else SignatureError
        what = "by a key that is not in the trust store" if cls is UntrustedKeyError else "invalid"
        raise cls(
            f"the reproduction's signature is {what}",
            file=file,
            expected=exc.expected,
            actual=exc.actual,
            hint="pass the replayer's public key with --trust (compare its key id with the one "
            "they publish); a changed reproduction cannot be trusted",
        ) from exc


def verify_reproduction(
    path: Path, trust: TrustStore, *, kit: Path | None = None, replay_dir: Path | None = None
) -> VerifiedReproduction:
    """Verify a signed reproduction (see the module docstring)."""
    file = str(path)
    data = read_bytes(
        path,
        lambda failure: ReproductionError(
            "the reproduction cannot be read", file=file, actual=str(failure.exc)
        ),
    )
    verified = _verified(data, trust, file)  # 1
    statement = _statement(verified.payload, verified.key_id, file)  # 2
    predicate = statement.predicate
    _check_receipt(statement, file)  # 3
    _check_rows(predicate, file)  # 4
    package = _check_kit(predicate.kit, kit) if kit is not None else None  # 5
    if package is not None and kit is not None:
        _check_rows_against_kit(predicate, package, kit)
    files = _evidence_files(statement, replay_dir) if replay_dir is not None else None  # 6
    if package is not None and files is not None:
        _recompute(predicate, package, files, file)  # 7
    tol = package.measurements.tolerance_pct if package is not None else None
    return VerifiedReproduction(
        predicate=predicate,
        key_id=verified.key_id,
        kit_checked=package is not None,
        recomputed=package is not None and files is not None,
        kit_tolerance_pct=tol,
        reproduced_at_kit_tolerance=_at_tolerance(predicate, tol) if tol is not None else None,
    )
