"""PIN.json: written canonically, read back checked against its own tree digest."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from servekit.errors import FileChangedError, UsageError
from servekit.weights.models import PinnedFile, Sha256Source, WeightsPin
from servekit.weights.pinfile import pin_json, read_pin, write_pin


def _file(path: str, data: bytes) -> PinnedFile:
    return PinnedFile(
        path=path,
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        sha256_source=Sha256Source.LOCAL,
    )


PIN = WeightsPin.build(
    [_file("model.safetensors", b"weights"), _file("config.json", b"{}"), _file("a/b.txt", b"")]
)


def test_a_pin_round_trips(tmp_path: Path) -> None:
    write_pin(PIN, tmp_path / "PIN.json")
    assert read_pin(tmp_path / "PIN.json") == PIN
    data = json.loads((tmp_path / "PIN.json").read_text())
    assert data["format"] == 1 and data["digest_scheme"] == "servekit-tree-v1"
    assert [f["path"] for f in data["files"]] == ["a/b.txt", "config.json", "model.safetensors"]
    assert data["shard_count"] == 1 and data["total_bytes"] == 9 and data["file_count"] == 3


def test_the_text_is_canonical() -> None:
    rebuilt = WeightsPin.build(reversed(PIN.files))
    assert pin_json(rebuilt) == pin_json(PIN)


def test_an_edited_file_list_is_refused(tmp_path: Path) -> None:
    data = json.loads(pin_json(PIN))
    data["files"][1]["sha256"] = "0" * 64
    (tmp_path / "PIN.json").write_text(json.dumps(data))
    with pytest.raises(FileChangedError) as info:
        read_pin(tmp_path / "PIN.json")
    assert info.value.expected == PIN.tree_digest
    assert info.value.actual != PIN.tree_digest


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.update(format=2), "format"),
        (lambda d: d.update(total_bytes=1), "total_bytes"),
        (lambda d: d.update(file_count=9), "file_count"),
        (lambda d: d.update(files=[]), "files"),
        (lambda d: d["files"].reverse(), "sorted"),
        (lambda d: d.update(repo="org/x"), "repo and commit"),
        (lambda d: d["files"][0].update(path="../x"), "path"),
    ],
    ids=["format", "total", "count", "empty", "order", "repo-without-commit", "path"],
)
def test_a_malformed_pin_is_a_usage_error(tmp_path: Path, edit: object, message: str) -> None:
    data = json.loads(pin_json(PIN))
    edit(data)  # type: ignore[operator]
    (tmp_path / "PIN.json").write_text(json.dumps(data))
    with pytest.raises(UsageError, match=message):
        read_pin(tmp_path / "PIN.json")


def test_not_json_and_absent_are_usage_errors(tmp_path: Path) -> None:
    (tmp_path / "PIN.json").write_text("{not json")
    with pytest.raises(UsageError, match="not valid JSON"):
        read_pin(tmp_path / "PIN.json")
    with pytest.raises(UsageError, match="no such pin file"):
        read_pin(tmp_path / "absent.json")
