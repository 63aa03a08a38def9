"""Every file read names the file and why it failed, in the caller's error class."""

from __future__ import annotations

from pathlib import Path

import pytest

from servekit.errors import EvidenceError, PackageFileError, UsageError
from servekit.package.evidence import load_evidence
from servekit.seams import (
    ReadFailure,
    read_bytes,
    read_head,
    read_optional,
    read_text,
    read_utf8,
    reading,
)


def _usage(failure: ReadFailure) -> UsageError:
    return UsageError(f"{failure} ({'missing' if failure.missing else 'present'})")


def test_a_missing_file_is_named_and_marked_missing(tmp_path: Path) -> None:
    path = tmp_path / "absent.json"
    with pytest.raises(UsageError, match=r"absent\.json: no such file \(missing\)") as info:
        read_bytes(path, _usage)
    assert isinstance(info.value.__cause__, FileNotFoundError)


def test_a_directory_and_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"is a directory, not a file \(present\)"):
        read_utf8(tmp_path, _usage)
    latin = tmp_path / "latin.txt"
    latin.write_bytes(b"caf\xe9")
    with pytest.raises(UsageError, match=r"latin\.txt: not UTF-8 text \(byte 3\)") as info:
        read_utf8(latin, _usage)
    assert isinstance(info.value.__cause__, UnicodeDecodeError)
    assert read_bytes(latin, _usage) == b"caf\xe9"


def test_read_text_keeps_its_message_form(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"^\S*nothing\.yaml: no such file$"):
        read_text(tmp_path / "nothing.yaml", UsageError)


def test_an_optional_file_may_be_absent_but_not_unreadable(tmp_path: Path) -> None:
    assert read_optional(tmp_path / "state.json", _usage) is None
    with pytest.raises(UsageError, match="is a directory"):
        read_optional(tmp_path, _usage)
    (tmp_path / "state.json").write_bytes(b"{}")
    assert read_optional(tmp_path / "state.json", _usage) == b"{}"


def test_read_head(tmp_path: Path) -> None:
    assert read_head(str(tmp_path / "generation"), 4) == b""
    (tmp_path / "generation").write_bytes(b"abcdef")
    assert read_head(str(tmp_path / "generation"), 4) == b"abcd"


def test_reading_translates_a_streamed_read_and_lets_servekit_errors_through(
    tmp_path: Path,
) -> None:
    latin = tmp_path / "lines.txt"
    latin.write_bytes(b"one\ntwo \xff\n")
    lines = latin.open(encoding="utf-8")
    with pytest.raises(UsageError, match="not UTF-8 text"), reading(latin, _usage), lines:
        list(lines)
    with pytest.raises(EvidenceError, match="own"), reading(latin, _usage):
        raise EvidenceError("own", path=latin)


def test_evidence_errors_are_package_file_errors(tmp_path: Path) -> None:
    with pytest.raises(PackageFileError, match="evidence file not found") as info:
        load_evidence(tmp_path / "run.jsonl")
    assert isinstance(info.value, EvidenceError) and info.value.exit_code == 3
    assert info.value.path == str(tmp_path / "run.jsonl")
