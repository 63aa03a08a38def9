"""``servekit keys``, ``kit build`` and ``verify kit`` end to end, through the CLI."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from servekit.cli.main import main
from tests.functional.helpers import servekit
from tests.kit.helpers import ASSETS, EXAMPLES, KEYS, PACKAGE_DIR, private_key

CASES = {
    "kit_tampered_compose": ("FileChangedError", 10),
    "kit_missing_evidence": ("MissingFileError", 11),
    "kit_extra_file": ("ExtraFileError", 12),
    "kit_tampered_receipt_payload": ("SignatureError", 13),
    "kit_untrusted_key": ("UntrustedKeyError", 13),
    "kit_manifest_not_resigned": ("SubjectMismatchError", 14),
    "kit_path_traversal": ("UnsafeArchiveError", 15),
    "kit_symlink_member": ("UnsafeArchiveError", 15),
}


def test_generate_build_verify_every_example(tmp_path: Path) -> None:
    """The acceptance path: keys generate, kit build on each example, verify kit exits 0."""
    keys = tmp_path / "keys"
    generated = servekit("keys", "generate", "--out", str(keys), "--json")
    assert generated.returncode == 0, generated.stderr
    key_id = json.loads(generated.stdout)["key_id"]
    assert stat.S_IMODE((keys / "servekit.key").stat().st_mode) == 0o600
    for package in [*EXAMPLES, PACKAGE_DIR]:
        kit = tmp_path / f"{package.name}.tar.gz"
        built = servekit(
            "kit", "build", str(package), "--key", str(keys / "servekit.key"), "-o", str(kit)
        )
        assert built.returncode == 0, built.stderr
        verified = servekit(
            "verify", "kit", str(kit), "--trust", str(keys / "servekit.pub"), "--json"
        )
        assert verified.returncode == 0, verified.stderr
        assert json.loads(verified.stdout)["key_id"] == key_id


@pytest.mark.parametrize("name", CASES)
def test_each_golden_fixture_fails_with_its_error_and_exit_code(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    error, code = CASES[name]
    kit = ASSETS / f"{name}.tar.gz"
    assert (
        main(["verify", "kit", str(kit), "--trust", str(KEYS / "publisher.pub"), "--json"]) == code
    )
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert (report["verified"], report["error"], report["exit_code"]) == (False, error, code)
    assert report["file"] and report["expected"] and report["actual"]
    assert "error:" in err and f"file:     {report['file']}" in err


def test_the_valid_fixture_verifies_in_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "kit", str(ASSETS / "kit_valid.tar.gz"), "--trust", str(KEYS)]) == 0
    out = capsys.readouterr().out
    assert "verified" in out and "kit-fixture 1.0.0" in out and "TTFT p50" in out


def test_an_empty_trust_directory_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "kit", str(ASSETS / "kit_valid.tar.gz"), "--trust", str(tmp_path)]) == 13
    assert "holds no key" in capsys.readouterr().err


def test_kit_build_refuses_a_readable_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = private_key("publisher", tmp_path)
    key.chmod(0o644)
    assert (
        main(
            ["kit", "build", str(PACKAGE_DIR), "--key", str(key), "-o", str(tmp_path / "k.tar.gz")]
        )
        == 5
    )
    assert "chmod 600" in capsys.readouterr().err
    assert not (tmp_path / "k.tar.gz").exists()


def test_kit_build_json_and_byte_identical_rebuild(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key, first, second = (
        private_key("publisher", tmp_path),
        tmp_path / "a.tar.gz",
        tmp_path / "b.tar.gz",
    )
    assert (
        main(["kit", "build", str(PACKAGE_DIR), "--key", str(key), "-o", str(first), "--json"]) == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["package"] == "kit-fixture" and len(report["files"]) == 15
    assert main(["kit", "build", str(PACKAGE_DIR), "--key", str(key), "-o", str(second)]) == 0
    assert "kit digest" in capsys.readouterr().out
    assert first.read_bytes() == second.read_bytes() == (ASSETS / "kit_valid.tar.gz").read_bytes()


def test_keys_show(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["keys", "show", str(KEYS / "publisher.key"), "--json"]) == 0
    private = json.loads(capsys.readouterr().out)
    assert main(["keys", "show", str(KEYS / "publisher.pub")]) == 0
    text = capsys.readouterr().out
    assert private["kind"] == "private" and private["key_id"] in text and "public key" in text


def test_keys_generate_refuses_to_overwrite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["keys", "generate", "--out", str(tmp_path)]) == 0
    assert main(["keys", "generate", "--out", str(tmp_path)]) == 5
    assert "already exists" in capsys.readouterr().err
