"""Kit verification: each golden fixture fails with its own error; valid kits verify."""

from __future__ import annotations

import base64
import hashlib
import json
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from servekit.errors import (
    ArchiveLimitError,
    ClaimRecheckError,
    ExtendedHeaderError,
    ExtraFileError,
    FileChangedError,
    GzipStreamError,
    KeyGrantError,
    MemberMetadataError,
    MemberOrderError,
    MissingFileError,
    NonCanonicalArchiveError,
    NonCanonicalReceiptError,
    ReceiptLimitError,
    SignatureError,
    SubjectMismatchError,
    TarHeaderError,
    UnexpectedKitError,
    UnsafeArchiveError,
    UntrustedKeyError,
    VerificationError,
)
from servekit.kit.archive import write_archive
from servekit.receipts.archive import kit_file
from servekit.receipts.canonical import canonical_json
from servekit.receipts.keys import TrustStore, load_public_key, load_signing_key, load_trust_store
from servekit.receipts.manifest import manifest_entries, render_manifest
from servekit.receipts.signing import sign_payload
from servekit.verify.expect import Expectation
from servekit.verify.kit import verify_kit
from tests.assets.make_kit_fixtures import MTIME, build, private_key
from tests.kit.helpers import ASSETS, KEYS, PACKAGE_DIR

TRUST = load_trust_store(KEYS / "publisher.pub", bare_key=True)
GRANTS = load_trust_store(KEYS / "trust.toml")
KIT = "<the kit>"  # refusals of the archive as a whole name the kit's own path

FIXTURES: dict[str, tuple[type[VerificationError], str]] = {
    "kit_tampered_compose": (FileChangedError, "deploy/compose.yaml"),
    "kit_missing_evidence": (MissingFileError, "evidence/run-b.jsonl"),
    "kit_extra_file": (ExtraFileError, "deploy/extra.sh"),
    "kit_tampered_receipt_payload": (SignatureError, "receipt.dsse.json"),
    "kit_untrusted_key": (UntrustedKeyError, "receipt.dsse.json"),
    "kit_manifest_not_resigned": (SubjectMismatchError, "MANIFEST"),
    "kit_path_traversal": (UnsafeArchiveError, "../x"),
    "kit_symlink_member": (UnsafeArchiveError, "deploy/k8s/secrets.yaml"),
    "kit_duplicate_member": (UnsafeArchiveError, "deploy/compose.yaml"),
    "kit_case_twin": (UnsafeArchiveError, "readme.md"),
    "kit_file_over_directory": (UnsafeArchiveError, "deploy/build/BUILD.md"),
    "kit_gzip_appended_member": (GzipStreamError, KIT),
    "kit_header_bad_checksum": (TarHeaderError, "deploy/zz-skip"),
    "kit_pax_path_override": (ExtendedHeaderError, "././@PaxHeader"),
    "kit_gnu_long_name": (ExtendedHeaderError, "././@LongLink"),
    "kit_setuid_launch": (MemberMetadataError, "deploy/launch.sh"),
    "kit_wrong_mtime": (MemberMetadataError, KIT),
    "kit_after_end_of_archive": (NonCanonicalArchiveError, KIT),
    "kit_manifest_not_first": (MemberOrderError, "README.md"),
    "kit_oversized_member": (ArchiveLimitError, "README.md"),
    "kit_decompression_bomb": (NonCanonicalArchiveError, KIT),
    "kit_receipt_reencoded": (NonCanonicalReceiptError, "receipt.dsse.json"),
    "kit_receipt_nested": (ReceiptLimitError, "receipt.dsse.json"),
    "kit_receipt_lone_surrogate": (NonCanonicalReceiptError, "receipt.dsse.json"),
    "kit_outside_grant": (KeyGrantError, "receipt.dsse.json"),
    "kit_recorded_violations": (ClaimRecheckError, "receipt.dsse.json"),
    "kit_figure_not_recomputed": (ClaimRecheckError, "receipt.dsse.json"),
}
TRUSTED_BY = {"kit_outside_grant": GRANTS}


def _files(name: str = "kit_valid") -> dict[str, bytes]:
    with tarfile.open(ASSETS / f"{name}.tar.gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]


def _kit(tmp_path: Path, files: dict[str, bytes]) -> Path:
    path = tmp_path / "kit.tar.gz"
    path.write_bytes(write_archive([kit_file(p, d) for p, d in files.items()], MTIME))
    return path


def test_the_valid_fixture_verifies() -> None:
    result = verify_kit(ASSETS / "kit_valid.tar.gz", TRUST)
    assert (result.package_id, result.version, result.files) == ("kit-fixture", "1.0.0", 15)
    assert result.key_id == load_public_key(KEYS / "publisher.pub").key_id
    assert result.evidence == ("evidence/run-a.jsonl", "evidence/run-b.jsonl")
    assert result.model.startswith("hf://servekit-test/tiny-model@3b1f6c0e")
    assert result.as_dict()["verified"] is True


@pytest.mark.parametrize("name", FIXTURES)
def test_each_failure_fixture_raises_its_own_error(name: str) -> None:
    error, file = FIXTURES[name]
    path = ASSETS / f"{name}.tar.gz"
    with pytest.raises(VerificationError) as info:
        verify_kit(path, TRUSTED_BY.get(name, TRUST))
    assert type(info.value) is error
    assert info.value.file == (str(path) if file == KIT else file)
    assert info.value.expected and info.value.actual and info.value.expected != info.value.actual


def _unpacked(target: Path, name: str = "kit_valid") -> Path:
    with tarfile.open(ASSETS / f"{name}.tar.gz") as tar:
        tar.extractall(target, filter="data")
    return target


def test_an_unpacked_kit_directory_verifies(tmp_path: Path) -> None:
    assert verify_kit(_unpacked(tmp_path / "kit"), TRUST).files == 15


def test_a_directory_kit_with_a_symlink_is_refused(tmp_path: Path) -> None:
    with tarfile.open(ASSETS / "kit_valid.tar.gz") as tar:
        tar.extractall(tmp_path / "kit", filter="data")
    (tmp_path / "kit" / "evidence" / "run-b.jsonl").unlink()
    (tmp_path / "kit" / "evidence" / "run-b.jsonl").symlink_to(
        tmp_path / "kit" / "evidence" / "run-a.jsonl"
    )
    with pytest.raises(UnsafeArchiveError, match="not a regular file") as info:
        verify_kit(tmp_path / "kit", TRUST)
    assert info.value.file == "evidence/run-b.jsonl" and info.value.actual == "a symlink"


def test_an_empty_trust_store_fails_even_a_valid_kit() -> None:
    with pytest.raises(SignatureError, match="holds no key"):
        verify_kit(ASSETS / "kit_valid.tar.gz", TrustStore(source="empty", keys={}))


def test_the_untrusted_kit_verifies_once_its_key_is_trusted() -> None:
    trust = load_trust_store(KEYS / "untrusted.pub", bare_key=True)
    assert verify_kit(ASSETS / "kit_untrusted_key.tar.gz", trust).key_id in trust.keys


def test_a_missing_receipt_or_manifest(tmp_path: Path) -> None:
    files = {p: d for p, d in _files().items() if p != "receipt.dsse.json"}
    with pytest.raises(MissingFileError) as info:
        verify_kit(_kit(tmp_path, files), TRUST)
    assert info.value.file == "receipt.dsse.json"
    files = {p: d for p, d in _files().items() if p != "MANIFEST"}
    with pytest.raises(MemberOrderError, match="must be MANIFEST"):
        verify_kit(_kit(tmp_path, files), TRUST)
    unpacked = _unpacked(tmp_path / "dir")
    (unpacked / "MANIFEST").unlink()
    with pytest.raises(MissingFileError) as info:
        verify_kit(unpacked, TRUST)
    assert info.value.file == "MANIFEST"


def _resign(
    tmp_path: Path, files: dict[str, bytes], edit: Callable[[dict[str, Any]], None]
) -> Path:
    """The kit re-signed by the trusted publisher after ``edit`` changed its statement;
    MANIFEST and the kit subject are recomputed, so only the edit can fail."""
    manifest = render_manifest(manifest_entries(files))
    envelope = json.loads(files["receipt.dsse.json"])
    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["subject"][0]["digest"]["sha256"] = hashlib.sha256(manifest).hexdigest()
    edit(statement)
    key = load_signing_key(private_key("publisher", tmp_path))
    receipt = sign_payload(canonical_json(statement), key)
    return _kit(tmp_path, {**files, "MANIFEST": manifest, "receipt.dsse.json": receipt})


def test_resigning_without_an_edit_still_verifies(tmp_path: Path) -> None:
    assert verify_kit(_resign(tmp_path, _files(), lambda s: None), TRUST).files == 15


def test_a_model_subject_that_is_not_the_pin(tmp_path: Path) -> None:
    def edit(statement: dict[str, Any]) -> None:
        statement["subject"][1]["digest"]["sha256"] = "0" * 64

    with pytest.raises(
        SubjectMismatchError, match="model subject is not the package's model pin"
    ) as info:
        verify_kit(_resign(tmp_path, _files(), edit), TRUST)
    assert info.value.file == "package.yaml" and info.value.actual.endswith("0" * 64)


def test_an_evidence_file_the_receipt_does_not_name(tmp_path: Path) -> None:
    def edit(statement: dict[str, Any]) -> None:
        statement["subject"] = [
            s for s in statement["subject"] if s["name"] != "evidence/run-b.jsonl"
        ]

    with pytest.raises(SubjectMismatchError, match="not the one the receipt signed") as info:
        verify_kit(_resign(tmp_path, _files(), edit), TRUST)
    assert (info.value.file, info.value.expected) == ("evidence/run-b.jsonl", "no subject")


def test_a_subject_for_evidence_the_package_does_not_have(tmp_path: Path) -> None:
    def edit(statement: dict[str, Any]) -> None:
        statement["subject"].append(
            {"name": "evidence/ghost.jsonl", "digest": {"sha256": "1" * 64}}
        )

    with pytest.raises(SubjectMismatchError, match="evidence subject the package does not have"):
        verify_kit(_resign(tmp_path, _files(), edit), TRUST)


def test_a_pin_file_for_another_tree(tmp_path: Path) -> None:
    files = _files()
    pin = json.loads(files["model/pin.json"])
    pin["tree_digest"] = "sha256:" + "2" * 64
    files["model/pin.json"] = json.dumps(pin).encode()
    with pytest.raises(SubjectMismatchError, match=r"pin\.json's tree_digest") as info:
        verify_kit(_resign(tmp_path, files, lambda s: None), TRUST)
    assert info.value.file == "model/pin.json"


def test_a_signed_pin_file_nested_past_jsons_stack_is_refused_not_a_traceback(
    tmp_path: Path,
) -> None:
    files = {**_files(), "model/pin.json": b"[" * 100_000 + b"]" * 100_000}
    with pytest.raises(SubjectMismatchError, match=r"pin\.json is not JSON") as info:
        verify_kit(_resign(tmp_path, files, lambda s: None), TRUST)
    assert info.value.file == "model/pin.json"


def test_a_receipt_naming_another_publisher_key(tmp_path: Path) -> None:
    def edit(statement: dict[str, Any]) -> None:
        statement["predicate"]["publisher_key_id"] = "f" * 64

    with pytest.raises(SignatureError, match="names another publisher key"):
        verify_kit(_resign(tmp_path, _files(), edit), TRUST)


def test_a_kit_subject_for_another_package(tmp_path: Path) -> None:
    def edit(statement: dict[str, Any]) -> None:
        statement["subject"][0]["name"] = "servekit-kit:other@1.0.0"

    with pytest.raises(SubjectMismatchError, match="names another package"):
        verify_kit(_resign(tmp_path, _files(), edit), TRUST)


def test_a_fresh_build_verifies() -> None:
    kit = build(PACKAGE_DIR, "publisher")
    assert kit.archive == (ASSETS / "kit_valid.tar.gz").read_bytes()


def test_a_receipt_for_another_publisher_is_refused(tmp_path: Path) -> None:
    def edit(statement: dict[str, Any]) -> None:
        statement["predicate"]["package"]["publisher"] = "Someone Else"

    with pytest.raises(SubjectMismatchError, match="not the package the receipt describes") as info:
        verify_kit(_resign(tmp_path, _files(), edit), TRUST)
    assert info.value.actual == "kit-fixture 1.0.0 by servekit tests"


def test_a_bare_key_can_sign_any_package_but_a_trust_file_grants_one(tmp_path: Path) -> None:
    def edit(statement: dict[str, Any]) -> None:
        statement["subject"][0]["name"] = "servekit-kit:kit-fixture-2@1.0.0"
        statement["predicate"]["package"]["id"] = "kit-fixture-2"

    kit = _resign(tmp_path, _files(), edit)
    with pytest.raises(KeyGrantError) as info:
        verify_kit(kit, GRANTS)
    assert info.value.actual == "kit-fixture-2 1.0.0 by servekit tests"
    with pytest.raises(SubjectMismatchError, match="not the package the receipt describes"):
        verify_kit(kit, TRUST)  # the grant passes; package.yaml still says kit-fixture


def test_expect_is_checked_once_the_receipt_is_authentic() -> None:
    kit = ASSETS / "kit_valid.tar.gz"
    assert verify_kit(kit, GRANTS, expect=Expectation.parse("kit-fixture@>=1.0.0")).files == 15
    with pytest.raises(UnexpectedKitError) as info:
        verify_kit(kit, GRANTS, expect=Expectation.parse("kit-fixture@>=1.10.0"))
    assert (info.value.expected, info.value.actual) == ("kit-fixture@>=1.10.0", "kit-fixture@1.0.0")


def test_a_receipt_from_before_signed_at_still_verifies(tmp_path: Path) -> None:
    def edit(statement: dict[str, Any]) -> None:
        del statement["predicate"]["signed_at"]

    assert verify_kit(_resign(tmp_path, _files(), edit), TRUST).files == 15


def test_a_figure_its_evidence_does_not_carry_is_refused_even_when_signed(tmp_path: Path) -> None:
    """A publisher key re-signs a kit whose package.yaml claims a better TTFT."""
    files = _files()
    text = files["package.yaml"].decode()
    figures = yaml.safe_load(text)["measurements"]["figures"]
    value = figures[0]["value"]
    assert text.count(f"value: {value}") == 1
    files["package.yaml"] = text.replace(f"value: {value}", f"value: {value / 2}").encode()

    def edit(statement: dict[str, Any]) -> None:
        statement["predicate"]["figures"][0]["value"] = value / 2

    with pytest.raises(ClaimRecheckError, match="claim rules refuse a figure") as info:
        verify_kit(_resign(tmp_path, files, edit), TRUST)
    assert info.value.expected == "no violation"


def test_a_receipt_with_two_kit_subjects(tmp_path: Path) -> None:
    def edit(statement: dict[str, Any]) -> None:
        statement["subject"].append(dict(statement["subject"][0]))

    with pytest.raises(SubjectMismatchError, match="must name exactly one kit subject"):
        verify_kit(_resign(tmp_path, _files(), edit), TRUST)


def test_a_pin_file_that_is_json_but_not_an_object(tmp_path: Path) -> None:
    files = {**_files(), "model/pin.json": b'["servekit-test/tiny-model"]'}
    with pytest.raises(SubjectMismatchError, match=r"pin\.json is not a JSON object") as info:
        verify_kit(_resign(tmp_path, files, lambda s: None), TRUST)
    assert (info.value.expected, info.value.actual) == ("an object", "list")


def test_a_kit_without_the_pin_file_its_package_names(tmp_path: Path) -> None:
    files = {p: d for p, d in _files().items() if p != "model/pin.json"}
    with pytest.raises(MissingFileError, match="names a model pin file the kit does not hold"):
        verify_kit(_resign(tmp_path, files, lambda s: None), TRUST)


def test_a_receipt_whose_per_run_values_name_other_runs(tmp_path: Path) -> None:
    def edit(statement: dict[str, Any]) -> None:
        per_run = statement["predicate"]["figures"][0]["per_run"]
        per_run["run-c"] = per_run.pop("run-b")

    with pytest.raises(ClaimRecheckError, match="not the one the claim rules recompute"):
        verify_kit(_resign(tmp_path, _files(), edit), TRUST)


def test_a_receipt_that_leaves_out_a_figure(tmp_path: Path) -> None:
    def edit(statement: dict[str, Any]) -> None:
        statement["predicate"]["figures"].pop()

    with pytest.raises(ClaimRecheckError, match="lists other figures than the package") as info:
        verify_kit(_resign(tmp_path, _files(), edit), TRUST)
    assert int(info.value.expected or 0) == int(info.value.actual or 0) + 1


def test_a_receipt_that_relabels_a_figure(tmp_path: Path) -> None:
    def edit(statement: dict[str, Any]) -> None:
        statement["predicate"]["figures"][0]["label"] = "TTFT p50 (best of three)"

    with pytest.raises(ClaimRecheckError, match="not the one the claim rules recompute"):
        verify_kit(_resign(tmp_path, _files(), edit), TRUST)
