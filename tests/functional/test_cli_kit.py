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
    "kit_untrusted_key": ("KeyGrantError", 26),  # trust.toml grants that key other packages
    "kit_manifest_not_resigned": ("SubjectMismatchError", 14),
    "kit_path_traversal": ("UnsafeArchiveError", 15),
    "kit_symlink_member": ("UnsafeArchiveError", 15),
    "kit_duplicate_member": ("UnsafeArchiveError", 15),
    "kit_case_twin": ("UnsafeArchiveError", 15),
    "kit_file_over_directory": ("UnsafeArchiveError", 15),
    "kit_gzip_appended_member": ("GzipStreamError", 17),
    "kit_header_bad_checksum": ("TarHeaderError", 18),
    "kit_pax_path_override": ("ExtendedHeaderError", 19),
    "kit_gnu_long_name": ("ExtendedHeaderError", 19),
    "kit_setuid_launch": ("MemberMetadataError", 20),
    "kit_wrong_mtime": ("MemberMetadataError", 20),
    "kit_after_end_of_archive": ("NonCanonicalArchiveError", 21),
    "kit_manifest_not_first": ("MemberOrderError", 22),
    "kit_oversized_member": ("ArchiveLimitError", 23),
    "kit_decompression_bomb": ("NonCanonicalArchiveError", 21),
    "kit_receipt_reencoded": ("NonCanonicalReceiptError", 24),
    "kit_receipt_nested": ("ReceiptLimitError", 25),
    "kit_receipt_lone_surrogate": ("NonCanonicalReceiptError", 24),
    "kit_outside_grant": ("KeyGrantError", 26),
    "kit_recorded_violations": ("ClaimRecheckError", 28),
    "kit_figure_not_recomputed": ("ClaimRecheckError", 28),
}
TRUST_FILE = str(KEYS / "trust.toml")


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
    assert main(["verify", "kit", str(kit), "--trust", TRUST_FILE, "--json"]) == code
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert (report["verified"], report["error"], report["exit_code"]) == (False, error, code)
    assert report["file"] and report["expected"] and report["actual"]
    assert "error:" in err and f"file:     {report['file']}" in err


def test_the_valid_fixture_verifies_in_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "kit", str(ASSETS / "kit_valid.tar.gz"), "--trust", TRUST_FILE]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "This kit is kit-fixture version 1.0.0, published by servekit tests."
    assert "verified" in lines[1]
    figures = [line for line in lines if "TTFT p50" in line]
    assert figures and figures[0].endswith("ms [measured]"), "provenance must stay visible"


def test_expect_refuses_another_package_or_an_older_version(
    capsys: pytest.CaptureFixture[str],
) -> None:
    kit = str(ASSETS / "kit_valid.tar.gz")
    for wanted, code in [
        ("kit-fixture@1.0.0", 0),
        ("kit-fixture@>=0.9.2", 0),
        ("kit-fixture@>=1.0.0-rc1", 0),
        ("kit-fixture@1.0.1", 27),
        ("kit-fixture@>=1.0.1", 27),
        ("kit-fixture@>=1.0.0.1", 27),
        ("other@1.0.0", 27),
        ("kit-fixture", 2),
    ]:
        assert main(["verify", "kit", kit, "--trust", TRUST_FILE, "--expect", wanted]) == code
    assert "not the package you asked for" in capsys.readouterr().err


def test_a_trust_directory_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "kit", str(ASSETS / "kit_valid.tar.gz"), "--trust", str(tmp_path)]) == 5
    assert "cannot say who may sign what" in capsys.readouterr().err


def test_an_empty_trust_file_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty.pub").write_text("")
    kit = str(ASSETS / "kit_valid.tar.gz")
    assert main(["verify", "kit", kit, "--trust", str(tmp_path / "empty.pub")]) == 13
    assert "holds no key" in capsys.readouterr().err


def test_kit_unpack_writes_the_verified_files_with_canonical_modes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "kit"
    kit = str(ASSETS / "kit_valid.tar.gz")
    assert main(["kit", "unpack", kit, str(target), "--trust", TRUST_FILE]) == 0
    assert capsys.readouterr().out.startswith("This kit is kit-fixture version 1.0.0")
    files = sorted(p for p in target.rglob("*") if p.is_file())
    assert len(files) == 15
    modes = {p.relative_to(target).as_posix(): stat.S_IMODE(p.stat().st_mode) for p in files}
    assert modes.pop("deploy/launch.sh") == 0o755 and set(modes.values()) == {0o644}
    assert main(["verify", "kit", str(target), "--trust", TRUST_FILE]) == 0
    assert main(["kit", "unpack", kit, str(target), "--trust", TRUST_FILE]) == 2  # not empty


def test_kit_unpack_writes_nothing_from_a_kit_that_fails(tmp_path: Path) -> None:
    target = tmp_path / "kit"
    kit = str(ASSETS / "kit_pax_path_override.tar.gz")
    assert main(["kit", "unpack", kit, str(target), "--trust", TRUST_FILE]) == 19
    assert not target.exists()


def test_control_characters_in_names_reach_the_terminal_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.assets.make_kit_fixtures import _end, _gzip, _member

    evil = _gzip(_end(_member("MANIFEST\x1b[2J\r", b"")))
    (tmp_path / "k.tar.gz").write_bytes(evil)
    assert main(["verify", "kit", str(tmp_path / "k.tar.gz"), "--trust", TRUST_FILE]) == 15
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\r" not in err and "MANIFEST\\x1b[2J\\r" in err


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
    at = ("--signed-at", "2025-12-01T09:30:00+0000")  # the fixtures' signing time
    assert (
        main(["kit", "build", str(PACKAGE_DIR), "--key", str(key), "-o", str(first), *at, "--json"])
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["package"] == "kit-fixture" and len(report["files"]) == 15
    assert main(["kit", "build", str(PACKAGE_DIR), "--key", str(key), "-o", str(second), *at]) == 0
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
