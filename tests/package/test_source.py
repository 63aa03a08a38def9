"""A package reads the same from its directory and from a kit's bytes in memory; a message
about an in-memory file names its path inside the kit."""

from __future__ import annotations

from pathlib import Path

import pytest

from servekit.errors import EvidenceError, PackageFileError
from servekit.package.files import PACKAGE_FILE, PIN_FILE, package_sources
from servekit.package.load import LoadedPackage, load_package, loaded_from
from servekit.package.rules import check
from servekit.package.source import DirectorySource, MemorySource
from servekit.verify.archive import read_kit
from servekit.verify.contents import kit_loaded, kit_package
from tests.feed.test_feed import KIT
from tests.kit.helpers import EXAMPLES, PACKAGE_DIR

TINY_SIM = next(p for p in EXAMPLES if p.name == "tiny-sim")  # model.files: model-pin.json


def _kit_files(directory: Path) -> dict[str, bytes]:
    """The package's files by kit path, as ``kit build`` lays them out."""
    package = load_package(directory).package
    return {kit: (directory / rel).read_bytes() for kit, rel in package_sources(package)}


@pytest.mark.parametrize("directory", [PACKAGE_DIR, *EXAMPLES], ids=lambda p: p.name)
def test_the_claim_rules_find_the_same_in_memory_as_on_disk(directory: Path) -> None:
    on_disk = load_package(directory)
    in_memory = kit_loaded(_kit_files(directory), on_disk.package)
    assert isinstance(in_memory.source, MemorySource)
    assert check(in_memory) == check(on_disk)


def test_the_verified_kit_checks_as_the_package_it_was_built_from() -> None:
    kit = read_kit(KIT)
    in_memory = check(kit_loaded(kit.files, kit_package(kit)))
    assert in_memory == check(load_package(PACKAGE_DIR))
    assert in_memory.violations == ()


def test_a_malformed_evidence_line_in_memory_names_the_file_in_the_kit() -> None:
    kit = read_kit(KIT)
    files = {**kit.files, "evidence/run-b.jsonl": kit.files["evidence/run-b.jsonl"] + b"{oops\n"}
    lines = kit.files["evidence/run-b.jsonl"].count(b"\n") + 1
    with pytest.raises(EvidenceError) as info:
        check(kit_loaded(files, kit_package(kit)))
    assert (info.value.path, info.value.line) == ("evidence/run-b.jsonl", lines)
    assert str(info.value).startswith(f"evidence/run-b.jsonl:{lines}: not valid JSON")


def test_a_file_missing_from_memory_is_named_by_its_kit_path() -> None:
    files = _kit_files(TINY_SIM)
    del files[PIN_FILE]
    package = load_package(TINY_SIM).package
    assert package.model.files == "model-pin.json"  # the package's path is not the kit's
    with pytest.raises(PackageFileError) as info:
        kit_loaded(files, package)
    assert info.value.path == PACKAGE_FILE
    assert "model.files names a file that does not exist: model-pin.json" in str(info.value)
    assert info.value.hint == f"add {PIN_FILE} or correct the path"


def test_a_memory_source_keeps_its_own_copy_and_reads_nothing_outside() -> None:
    given = {"evidence/a.jsonl": b"x"}
    source = MemorySource(given, {"evidence/a.jsonl": "evidence/a.jsonl"})
    given["evidence/a.jsonl"] = b"changed after"
    assert source.read_bytes("evidence/a.jsonl") == b"x" and source.size("evidence/a.jsonl") == 1
    assert source.inside("../a.jsonl") is None and not source.is_file("evidence")
    with pytest.raises(FileNotFoundError, match=r"evidence/b\.jsonl"):
        source.read_bytes("evidence/b.jsonl")


def test_a_directory_source_reads_the_files_where_they_lie() -> None:
    loaded = load_package(PACKAGE_DIR)
    assert loaded.source == DirectorySource(PACKAGE_DIR) and loaded.root == PACKAGE_DIR
    assert loaded.source.read_bytes(PACKAGE_FILE) == (PACKAGE_DIR / PACKAGE_FILE).read_bytes()
    in_memory = LoadedPackage(package=loaded.package, source=MemorySource({}))
    with pytest.raises(TypeError, match="loaded from memory"):
        in_memory.path(PACKAGE_FILE)  # no directory to name a path in
    with pytest.raises(PackageFileError, match="names a file that does not exist"):
        loaded_from(loaded.package, MemorySource({}))
