"""Verifying a tree against its pin: fail fast on names and sizes, then hash and compare."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from servekit.errors import (
    ExtraFileError,
    FileChangedError,
    MissingFileError,
    ReadError,
    UntrustedKeyError,
    VerificationError,
)
from servekit.kit.build import build_kit
from servekit.package.files import PIN_FILE
from servekit.receipts.keys import load_trust_store
from servekit.verify.weights import (
    Expected,
    Stage,
    check_weights,
    expected_from_kit,
    verify_weights,
)
from servekit.weights.hashing import MAP_MIN_BYTES, READ_BUFFER
from servekit.weights.models import ProblemKind, WeightsPin
from servekit.weights.pin import pin_directory
from servekit.weights.pinfile import pin_json
from tests.kit.helpers import KEYS, private_key

ROOT = Path(__file__).resolve().parents[2]
K3 = ROOT / "examples" / "packages" / "kimi-k3-8xb300"
TRUST = load_trust_store(KEYS / "publisher.pub", bare_key=True)


def _tree(root: Path) -> Path:
    (root / "tokenizer").mkdir(parents=True)
    (root / "config.json").write_text('{"layers": 2}')
    (root / "tokenizer" / "tokenizer.json").write_text('{"vocab": []}')
    big = bytes(range(256)) * ((READ_BUFFER * 3) // 256 + 7)  # several read buffers
    (root / "model-00001-of-00002.safetensors").write_bytes(big)
    (root / "model-00002-of-00002.safetensors").write_bytes(big[:5000])
    return root


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return _tree(tmp_path / "tree")


@pytest.fixture
def expected(tree: Path) -> Expected:
    return Expected.from_pin(pin_directory(tree), "PIN.json")


def _error(tree: Path, expected: Expected) -> VerificationError:
    with pytest.raises(VerificationError) as info:
        verify_weights(tree, expected)
    return info.value


def test_an_unchanged_tree_verifies(tree: Path, expected: Expected) -> None:
    report = verify_weights(tree, expected, workers=2)
    assert report.ok and report.stage is Stage.HASHING
    assert report.actual_tree_digest == expected.tree_digest
    assert report.files == 4 and report.bytes == sum(f.size for f in expected.pin.files)  # type: ignore[union-attr]


def test_a_flipped_middle_byte_of_a_large_file_is_named(tree: Path, expected: Expected) -> None:
    shard = tree / "model-00001-of-00002.safetensors"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0x01
    shard.write_bytes(bytes(data))
    error = _error(tree, expected)
    assert type(error) is FileChangedError
    assert error.file == shard.name
    pinned = expected.pin.file(shard.name)  # type: ignore[union-attr]
    assert error.expected == f"sha256 {pinned.sha256}"  # type: ignore[union-attr]
    assert error.actual is not None and error.actual != error.expected


def test_a_flipped_byte_is_named_when_the_workers_map_the_tree(tmp_path: Path) -> None:
    # a tree large enough to be hashed by the forked mapped workers, not the reader
    tree = tmp_path / "tree"
    tree.mkdir()
    shard = bytes(range(256)) * (MAP_MIN_BYTES // 4 // 256)
    for i in range(5):
        (tree / f"model-{i}.safetensors").write_bytes(shard[: len(shard) - i])
    expected = Expected.from_pin(pin_directory(tree), "PIN.json")
    assert verify_weights(tree, expected, workers=3).ok
    flipped = tree / "model-3.safetensors"
    data = bytearray(flipped.read_bytes())
    data[len(data) // 3] ^= 0x80
    flipped.write_bytes(bytes(data))
    with pytest.raises(FileChangedError) as info:
        verify_weights(tree, expected, workers=3)
    error = info.value
    assert sum(f.stat().st_size for f in tree.iterdir()) >= MAP_MIN_BYTES
    assert error.file == flipped.name
    assert error.expected == f"sha256 {expected.pin.file(flipped.name).sha256}"  # type: ignore[union-attr]
    assert error.actual is not None and error.actual.startswith("sha256 ")
    assert error.actual != error.expected and error.hint


def test_a_truncated_file_fails_before_any_hashing(tree: Path, expected: Expected) -> None:
    with (tree / "config.json").open("r+b") as f:
        f.truncate(3)
    report = check_weights(tree, expected)
    assert report.stage is Stage.LISTING
    assert [(p.kind, p.path) for p in report.problems] == [(ProblemKind.SIZE, "config.json")]
    assert report.problems[0].expected == "13 bytes" and report.problems[0].actual == "3 bytes"
    assert type(_error(tree, expected)) is FileChangedError


def test_a_removed_file_is_missing(tree: Path, expected: Expected) -> None:
    (tree / "tokenizer" / "tokenizer.json").unlink()
    error = _error(tree, expected)
    assert type(error) is MissingFileError and error.file == "tokenizer/tokenizer.json"
    assert error.actual == "absent"


def test_an_added_file_is_extra(tree: Path, expected: Expected) -> None:
    (tree / "notes.txt").write_text("hello")
    error = _error(tree, expected)
    assert type(error) is ExtraFileError and error.file == "notes.txt"


def test_a_rename_names_both_files(tree: Path, expected: Expected) -> None:
    (tree / "config.json").rename(tree / "config2.json")
    error = _error(tree, expected)
    assert type(error) is MissingFileError and error.file == "config.json"
    assert "extra: config2.json" in error.message


def test_every_problem_is_listed_and_read_errors_come_first(tree: Path, expected: Expected) -> None:
    (tree / "config.json").unlink()
    (tree / "extra.bin").write_bytes(b"x")
    (tree / "loop").symlink_to("loop")
    report = check_weights(tree, expected)
    assert {(p.kind, p.path) for p in report.problems} == {
        (ProblemKind.MISSING, "config.json"),
        (ProblemKind.EXTRA, "extra.bin"),
        (ProblemKind.UNSAFE, "loop"),
    }
    error = _error(tree, expected)
    assert type(error) is ReadError and error.file == "loop"
    assert "3 problems" in error.message


def test_a_snapshot_link_leaving_the_cache_is_refused(tmp_path: Path) -> None:
    repo = tmp_path / "models--org--name"
    snap = repo / "snapshots" / ("a" * 40)
    (repo / "blobs").mkdir(parents=True)
    snap.mkdir(parents=True)
    (repo / "blobs" / "b1").write_bytes(b"weights")
    (snap / "model.safetensors").symlink_to("../../blobs/b1")
    expected = Expected.from_pin(pin_directory(snap), "PIN.json")
    (snap / "model.safetensors").unlink()
    (tmp_path / "evil").write_bytes(b"weights")
    (snap / "model.safetensors").symlink_to(tmp_path / "evil")
    error = _error(snap, expected)
    assert type(error) is ReadError and error.file == "model.safetensors"
    assert "evil" in (error.actual or "")


def test_a_digest_only_expectation_verifies_and_refuses(tree: Path, expected: Expected) -> None:
    only = Expected(tree_digest=expected.tree_digest, pin=None, source="package.yaml")
    assert verify_weights(tree, only).ok
    (tree / "config.json").write_text('{"layers": 3}')
    error = _error(tree, only)
    assert type(error) is FileChangedError and error.file == "."
    assert "files cannot be named" in (error.expected or "")


def _kit(tmp_path: Path, pin: WeightsPin) -> Path:
    kit = tmp_path / "kit"
    shutil.copytree(K3, kit)
    manifest = kit / "package.yaml"
    text = manifest.read_text()
    for old, new in (
        ('commit: "0000000000000000000000000000000000000000"', f'commit: "{"c" * 40}"'),
        (
            "sha256:ebf0b1a75a29ab5e01f319252302c418d0e8f9340e402950497094a6fc64aced",
            pin.tree_digest,
        ),
        ("total_bytes: 1561000000000", f"total_bytes: {pin.total_bytes}"),
        ("shard_count: 96", f"shard_count: {pin.shard_count}\n  files: {PIN_FILE}"),
    ):
        assert old in text
        text = text.replace(old, new)
    manifest.write_text(text)
    (kit / "model").mkdir()
    (kit / PIN_FILE).write_text(pin_json(pin))
    return kit


def _signed_kit(tmp_path: Path, pin: WeightsPin) -> Path:
    built = build_kit(_kit(tmp_path, pin), private_key("publisher", tmp_path))
    (tmp_path / "kit.tar.gz").write_bytes(built.archive)
    return tmp_path / "kit.tar.gz"


def test_a_kit_carries_the_pin(tmp_path: Path, tree: Path) -> None:
    local = pin_directory(tree)
    pin = WeightsPin.build(local.files, repo="moonshotai/Kimi-K3", revision="main", commit="c" * 40)
    expected = expected_from_kit(_signed_kit(tmp_path, pin), TRUST)
    assert expected.pin == pin and (expected.repo, expected.commit) == (
        "moonshotai/Kimi-K3",
        "c" * 40,
    )
    assert verify_weights(tree, expected).ok


def test_an_unsigned_kit_is_refused_before_its_pin_is_believed(tmp_path: Path, tree: Path) -> None:
    local = pin_directory(tree)
    pin = WeightsPin.build(local.files, repo="moonshotai/Kimi-K3", revision="main", commit="c" * 40)
    with pytest.raises(MissingFileError) as info:  # a package directory is no kit
        expected_from_kit(_kit(tmp_path, pin), TRUST)
    assert info.value.file == "MANIFEST"


def test_a_kit_signed_by_another_key_is_refused(tmp_path: Path, tree: Path) -> None:
    local = pin_directory(tree)
    pin = WeightsPin.build(local.files, repo="moonshotai/Kimi-K3", revision="main", commit="c" * 40)
    with pytest.raises(UntrustedKeyError):
        expected_from_kit(
            _signed_kit(tmp_path, pin), load_trust_store(KEYS / "untrusted.pub", bare_key=True)
        )
