"""Verify a kit offline: its bytes, its receipt's signature, and the receipt's subjects.

Steps (each failure raises the specific :class:`~servekit.errors.VerificationError`
subclass, naming the file, the expected and the actual value):

  1. read the kit safely into memory (:mod:`servekit.verify.archive`): an archive must
     be byte for byte the canonical rendering of its members;
  2. require a non-empty trust store;
  3. require ``MANIFEST`` and ``receipt.dsse.json``;
  4. verify the DSSE signature over the stored payload bytes against the trusted keys;
     the envelope must be in its one canonical form;
  5. parse the statement: in-toto v1, servekit predicate v1, signed by the key it names,
     canonical JSON; the key's grant covers the package's publisher and id; the package
     is the one ``--expect`` asked for;
  6. the kit subject's digest equals the sha256 of ``MANIFEST``;
  7. ``MANIFEST`` matches every file: none missing, none changed, none extra;
  8. ``package.yaml`` is the package the receipt describes (id, version, publisher), the
     archive's mtime is its date, and the model subject is its pin (and
     ``model/pin.json``'s, when the kit ships one);
  9. the evidence subjects are exactly the package's evidence files, digest for digest;
 10. the claim rules, re-run on the kit's evidence, find no violation and recompute every
     figure the receipt records (:mod:`servekit.verify.claims`).

The kit is read once (step 1) and ``package.yaml`` parsed once (step 8); every later
step, the claim rules included, reads those verified bytes in memory and writes nothing.
The result carries them (:attr:`KitVerification.contents` and ``.package``) for replay
and the feed check, which never read the kit's path again.

This module never imports the kit builder: a verifier must stand on its own.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from servekit import progress
from servekit.errors import (
    ExtraFileError,
    FileChangedError,
    KeyGrantError,
    MemberMetadataError,
    MissingFileError,
    SubjectMismatchError,
)
from servekit.package.files import MANIFEST_FILE, PACKAGE_FILE, PIN_FILE, RECEIPT_FILE, UNLISTED
from servekit.package.load import parse_package
from servekit.package.models import Package
from servekit.receipts.archive import kit_mtime
from servekit.receipts.canonical import sha256_hex
from servekit.receipts.formats import (
    DIGEST_ALGORITHM,
    KIT_SUBJECT_PREFIX,
    MODEL_SUBJECT_PREFIX,
    kit_subject_name,
    model_subject_name,
    tree_digest_hex,
)
from servekit.receipts.keys import TrustStore
from servekit.receipts.manifest import ManifestEntry, kit_digest, parse_manifest
from servekit.receipts.models import FigureRecord, Statement, Subject
from servekit.receipts.signing import read_statement, require_trust, verify_envelope
from servekit.receipts.statement import evidence_files
from servekit.verify.archive import KitContents, Limits, read_kit
from servekit.verify.claims import recheck_claims
from servekit.verify.expect import Expectation
from servekit.verify.unpack import write_files


@dataclass(frozen=True)
class KitVerification:
    """What a verified kit holds: the report, and the verified bytes and package that
    replay and the feed check use (they never read the kit again)."""

    source: str
    package_id: str
    version: str
    publisher: str
    key_id: str
    kit_digest: str
    files: int
    model: str
    evidence: tuple[str, ...]
    simulator: bool
    figures: tuple[FigureRecord, ...]
    contents: KitContents = dataclasses.field(repr=False, compare=False)
    package: Package = dataclasses.field(repr=False, compare=False)  # parsed from contents
    signed_at: dt.datetime | None = None  # the receipt's; None in receipts from before it

    def as_dict(self) -> dict[str, Any]:
        return {
            "package": self.package_id,
            "version": self.version,
            "verified": True,
            "kit": self.source,
            "publisher": self.publisher,
            "key_id": self.key_id,
            "kit_digest": f"{DIGEST_ALGORITHM}:{self.kit_digest}",
            "files": self.files,
            "model": self.model,
            "evidence": list(self.evidence),
            "simulator": self.simulator,
            "figures": [f.model_dump(mode="json") for f in self.figures],
            "signed_at": self.signed_at.strftime("%Y-%m-%dT%H:%M:%SZ") if self.signed_at else None,
        }


def _require(kit: KitContents, name: str) -> bytes:
    data = kit.get(name)
    if data is None:
        raise MissingFileError(
            f"the kit has no {name}",
            file=name,
            expected="present",
            actual="absent",
            hint="a kit built by `servekit kit build` always holds MANIFEST and receipt.dsse.json",
        )
    return data


def _sha(digest: Mapping[str, str]) -> str:
    return digest.get(DIGEST_ALGORITHM, "(no sha256 digest)")


def _one_subject(statement: Statement, prefix: str, what: str) -> Subject:
    found = [s for s in statement.subject if s.name.startswith(prefix)]
    if len(found) != 1:
        raise SubjectMismatchError(
            f"the receipt must name exactly one {what} subject",
            file=RECEIPT_FILE,
            expected=f"one subject named {prefix}...",
            actual=f"{len(found)}: {', '.join(s.name for s in found) or 'none'}",
        )
    return found[0]


# --- step 6 ---------------------------------------------------------------------------


def _check_kit_subject(statement: Statement, manifest: bytes) -> str:
    pkg = statement.predicate.package
    subject = _one_subject(statement, KIT_SUBJECT_PREFIX, "kit")
    expected_name = kit_subject_name(pkg.id, pkg.version)
    if subject.name != expected_name:
        raise SubjectMismatchError(
            "the kit subject names another package",
            file=RECEIPT_FILE,
            expected=expected_name,
            actual=subject.name,
        )
    digest = kit_digest(manifest)
    if _sha(subject.digest) != digest:
        raise SubjectMismatchError(
            "MANIFEST is not the manifest the receipt signed: the kit was changed after signing",
            file=MANIFEST_FILE,
            expected=f"{DIGEST_ALGORITHM}:{_sha(subject.digest)}",
            actual=f"{DIGEST_ALGORITHM}:{digest}",
            hint="do not deploy this kit; obtain it again from the publisher",
        )
    return digest


# --- step 7 ---------------------------------------------------------------------------


def _check_entry(entry: ManifestEntry, data: bytes | None) -> None:
    expected = f"{DIGEST_ALGORITHM}:{entry.sha256}, {entry.size} bytes"
    if data is None:
        raise MissingFileError(
            "a file listed in MANIFEST is missing",
            file=entry.path,
            expected=expected,
            actual="absent",
        )
    actual = f"{DIGEST_ALGORITHM}:{sha256_hex(data)}, {len(data)} bytes"
    if len(data) != entry.size or sha256_hex(data) != entry.sha256:
        raise FileChangedError(
            "a file differs from MANIFEST",
            file=entry.path,
            expected=expected,
            actual=actual,
            hint="do not deploy this kit; obtain it again from the publisher",
        )


def _check_files(kit: KitContents, entries: tuple[ManifestEntry, ...]) -> None:
    with progress.track_count("verifying kit files", len(entries), unit="files") as bar:
        for entry in entries:
            _check_entry(entry, kit.get(entry.path))
            bar.advance(1)
    listed = {e.path for e in entries} | UNLISTED
    for path in sorted(set(kit.files) - listed):
        raise ExtraFileError(
            "the kit holds a file that MANIFEST does not list",
            file=path,
            expected="only the files listed in MANIFEST",
            actual=f"an extra file of {len(kit.files[path])} bytes",
            hint="someone added it after signing; do not use it",
        )


def check_manifest(kit: KitContents) -> str:
    """Steps 3 and 7 without the signature: every file is the one ``MANIFEST`` lists.

    Returns the kit digest (the sha256 of ``MANIFEST``); what signed it is the caller's
    to check (``verify reproduction`` binds the digest its signer named).
    """
    manifest = _require(kit, MANIFEST_FILE)
    _check_files(kit, parse_manifest(manifest))
    return kit_digest(manifest)


# --- step 8 ---------------------------------------------------------------------------


def _mismatch(message: str, file: str, expected: str, actual: str) -> SubjectMismatchError:
    return SubjectMismatchError(message, file=file, expected=expected, actual=actual)


def _check_package(statement: Statement, package: Package) -> None:
    ref = statement.predicate.package
    if (ref.id, ref.version, ref.publisher) != (package.id, package.version, package.publisher):
        raise _mismatch(
            "package.yaml is not the package the receipt describes",
            PACKAGE_FILE,
            f"{ref.id} {ref.version} by {ref.publisher}",
            f"{package.id} {package.version} by {package.publisher}",
        )


def _check_mtime(kit: KitContents, package: Package) -> None:
    """Every archive member carries the package's date (a directory kit has no mtime)."""
    if kit.mtime is not None and kit.mtime != kit_mtime(package):
        raise MemberMetadataError(
            "the archive's mtime is not the package's date",
            file=kit.source,
            expected=str(kit_mtime(package)),
            actual=str(kit.mtime),
            hint="do not unpack or deploy this kit; obtain it again from the publisher",
        )


def _check_model_subject(statement: Statement, package: Package) -> str:
    pin = package.model
    subject = _one_subject(statement, MODEL_SUBJECT_PREFIX, "model")
    expected = f"{model_subject_name(pin.repo, pin.commit)} {tree_digest_hex(pin.tree_digest)}"
    actual = f"{subject.name} {_sha(subject.digest)}"
    if actual != expected:
        raise _mismatch(
            "the receipt's model subject is not the package's model pin",
            PACKAGE_FILE,
            expected,
            actual,
        )
    return subject.name


def _load_pin(data: bytes) -> dict[str, Any]:
    try:
        pin = json.loads(data)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested past json's stack
        raise _mismatch(
            "model/pin.json is not JSON", PIN_FILE, "a JSON model pin", str(exc)
        ) from exc
    if not isinstance(pin, dict):
        raise _mismatch(
            "model/pin.json is not a JSON object", PIN_FILE, "an object", type(pin).__name__
        )
    return pin


def _check_pin_file(kit: KitContents, package: Package) -> None:
    """model/pin.json names the package's tree digest (and its repo and commit, if any)."""
    data = kit.get(PIN_FILE)
    if package.model.files is not None and data is None:
        raise MissingFileError(
            "the package names a model pin file the kit does not hold",
            file=PIN_FILE,
            expected="present",
            actual="absent",
        )
    if data is None:
        return
    pin, model = _load_pin(data), package.model
    wanted = {"tree_digest": model.tree_digest, "repo": model.repo, "commit": model.commit}
    for field, expected in wanted.items():
        if field == "tree_digest" or pin.get(field) is not None:
            _check_pin_field(field, expected, pin.get(field))


def _check_pin_field(field: str, expected: str, actual: object) -> None:
    if actual != expected:
        raise _mismatch(
            f"model/pin.json's {field} is not the package's", PIN_FILE, expected, repr(actual)
        )


# --- step 9 ---------------------------------------------------------------------------


def _check_evidence_file(path: str, subject: Subject | None, data: bytes | None) -> None:
    signed = f"{DIGEST_ALGORITHM}:{_sha(subject.digest)}" if subject else "no subject"
    actual = f"{DIGEST_ALGORITHM}:{sha256_hex(data)}" if data is not None else "no file"
    if signed != actual:
        raise _mismatch("an evidence file is not the one the receipt signed", path, signed, actual)


def _check_evidence(kit: KitContents, statement: Statement, package: Package) -> tuple[str, ...]:
    expected = evidence_files(package)
    fixed = (KIT_SUBJECT_PREFIX, MODEL_SUBJECT_PREFIX)
    named = {s.name: s for s in statement.subject if not s.name.startswith(fixed)}
    for name in sorted(set(named) - set(expected)):
        raise _mismatch(
            "the receipt names an evidence subject the package does not have",
            RECEIPT_FILE,
            f"subjects for {', '.join(expected) or 'no evidence file'}",
            name,
        )
    for path in expected:
        _check_evidence_file(path, named.get(path), kit.get(path))
    return expected


def _parse_kit_package(kit: KitContents) -> Package:
    data = _require(kit, PACKAGE_FILE)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileChangedError(
            "package.yaml is not UTF-8 text", file=PACKAGE_FILE, expected="UTF-8", actual=str(exc)
        ) from exc
    return parse_package(Path(PACKAGE_FILE), text)


# --- step 5 -------------------------------------------------------------------------


def _check_grant(statement: Statement, trust: TrustStore, key_id: str) -> None:
    """The signing key may sign this publisher's package with this id."""
    ref = statement.predicate.package
    grant = trust.grants.get(key_id)
    if grant is None or not grant.allows(ref.publisher, ref.id):
        raise KeyGrantError(
            "the key that signed this kit may not sign this package",
            file=RECEIPT_FILE,
            expected=f"key {key_id} signs {grant.describe() if grant else 'nothing'}",
            actual=f"{ref.id} {ref.version} by {ref.publisher}",
            hint=f"the trust store {trust.source} does not grant this key that package; "
            "another publisher's key cannot vouch for it",
        )


def _statement(kit: KitContents, trust: TrustStore, expect: Expectation | None) -> Statement:
    receipt = _require(kit, RECEIPT_FILE)  # 3
    verified = verify_envelope(receipt, trust, file=RECEIPT_FILE)  # 4
    statement = read_statement(verified, file=RECEIPT_FILE)  # 5
    _check_grant(statement, trust, verified.key_id)
    if expect is not None:
        expect.check(statement.predicate.package.id, statement.predicate.package.version)
    return statement


def _package(kit: KitContents, statement: Statement) -> tuple[Package, str]:
    package = _parse_kit_package(kit)  # 8
    _check_package(statement, package)
    _check_mtime(kit, package)
    model = _check_model_subject(statement, package)
    _check_pin_file(kit, package)
    return package, model


def verify_kit(
    path: Path | str,
    trust: TrustStore,
    *,
    limits: Limits | None = None,
    expect: Expectation | None = None,
) -> KitVerification:
    """Verify the kit at ``path`` (``.tar.gz`` or directory) against ``trust``; raise on failure."""
    return verify_contents(read_kit(path, limits), trust, expect=expect)  # 1


def verify_contents(
    kit: KitContents, trust: TrustStore, *, expect: Expectation | None = None
) -> KitVerification:
    """Steps 2-10 on a kit already read into memory."""
    require_trust(trust)  # 2
    manifest = _require(kit, MANIFEST_FILE)  # 3
    statement = _statement(kit, trust, expect)  # 3, 4, 5
    digest = _check_kit_subject(statement, manifest)  # 6
    _check_files(kit, parse_manifest(manifest))  # 7
    package, model = _package(kit, statement)  # 8
    evidence = _check_evidence(kit, statement, package)  # 9
    figures = recheck_claims(kit.files, package, statement)  # 10
    return KitVerification(
        source=kit.source,
        package_id=package.id,
        version=package.version,
        publisher=package.publisher,
        key_id=statement.predicate.publisher_key_id,
        kit_digest=digest,
        files=len(kit.files),
        model=model,
        evidence=evidence,
        simulator=statement.predicate.simulator,
        figures=figures,
        contents=kit,
        package=package,
        signed_at=statement.predicate.signed_at,
    )


def unpack_kit(
    path: Path | str,
    trust: TrustStore,
    directory: Path,
    *,
    expect: Expectation | None = None,
) -> KitVerification:
    """Verify the kit, then write exactly the verified bytes under ``directory``.

    This is how a buyer unpacks a kit: never with ``tar -x``, which would write what the
    archive says rather than what was verified (docs/kit.md, threat model).
    """
    result = verify_kit(path, trust, expect=expect)
    write_files(result.contents.files, directory)
    return result
