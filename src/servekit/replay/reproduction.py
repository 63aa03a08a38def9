"""A signed reproduction: "I replayed this kit's grid on my hardware, and here is how it compared".

The statement is an in-toto Statement v1 whose subjects are the kit's receipt (by the
sha256 of ``receipt.dsse.json``) and every replay evidence file, and whose predicate
(``https://servekit.dev/reproduction/v1``) is the comparison. It is signed as a DSSE
envelope with the buyer's Ed25519 key, like a receipt (docs/kit.md, "Reproductions").

Steps of :func:`verify_reproduction`:
  1. the envelope's signature by a trusted key;
  2. in-toto v1 with the reproduction predicate, signed by the key it names;
  3. its receipt subject is the predicate's kit receipt; with ``kit``, that kit's receipt;
  4. with ``replay_dir``, every evidence subject is that directory's file, digest for digest.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from servekit import __version__
from servekit.errors import ReproductionError, SignatureError, UntrustedKeyError
from servekit.package.files import RECEIPT_FILE
from servekit.receipts.canonical import canonical_json, sha256_hex
from servekit.receipts.formats import DIGEST_ALGORITHM, STATEMENT_TYPE
from servekit.receipts.keys import SigningKey, TrustStore
from servekit.receipts.signing import VerifiedPayload, sign_payload, verify_envelope
from servekit.replay.models import (
    RECEIPT_SUBJECT_PREFIX,
    REPRODUCTION_PREDICATE_TYPE,
    Comparison,
    FigureComparison,
    Frozen,
    HostFacts,
    KitRef,
    WorkloadResult,
)
from servekit.seams import problem_text
from servekit.verify.archive import read_kit

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
    try:
        obj = json.loads(payload)
        statement = ReproductionStatement.model_validate(obj)
    except (ValueError, ValidationError) as exc:
        raise _mismatch(
            "not a servekit reproduction",
            file,
            "reproduction predicate v1",
            problem_text(exc),
        ) from exc
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


def _check_receipt(statement: ReproductionStatement, kit: Path | None, file: str) -> None:
    ref = statement.predicate.kit
    named = {s.name: s.digest.get(DIGEST_ALGORITHM) for s in statement.subject}
    if named.get(receipt_subject_name(ref)) != ref.receipt_sha256:
        raise _mismatch(
            "the receipt subject is not the predicate's kit",
            file,
            f"{receipt_subject_name(ref)} sha256:{ref.receipt_sha256}",
            ", ".join(named),
        )
    if kit is not None:
        actual = sha256_hex(read_kit(kit).get(RECEIPT_FILE) or b"")
        if actual != ref.receipt_sha256:
            raise _mismatch(
                "the reproduction is of another kit",
                str(kit),
                f"receipt sha256:{ref.receipt_sha256}",
                f"receipt sha256:{actual}",
            )


def _check_evidence(statement: ReproductionStatement, replay_dir: Path) -> None:
    for s in statement.subject:
        if s.name.startswith(RECEIPT_SUBJECT_PREFIX):
            continue
        path = replay_dir / s.name
        actual = sha256_hex(path.read_bytes()) if path.is_file() else "no file"
        if actual != s.digest.get(DIGEST_ALGORITHM):
            raise _mismatch(
                "a replay evidence file is not the one the reproduction signed",
                str(path),
                f"sha256:{s.digest.get(DIGEST_ALGORITHM)}",
                actual if actual == "no file" else f"sha256:{actual}",
            )


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
) -> tuple[ReproductionPredicate, str]:
    """Verify a signed reproduction (see the module docstring); returns it and its signer."""
    file = str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ReproductionError(
            "the reproduction cannot be read", file=file, actual=str(exc)
        ) from exc
    verified = _verified(data, trust, file)  # 1
    statement = _statement(verified.payload, verified.key_id, file)  # 2
    _check_receipt(statement, kit, file)  # 3
    if replay_dir is not None:
        _check_evidence(statement, replay_dir)  # 4
    return statement.predicate, verified.key_id
