"""Bad input gets an error naming the file, the line or field path, and the fix."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from servekit.errors import EvidenceError, PackageError, PackageFileError, PackageSchemaError
from servekit.package.load import load_package
from servekit.package.rules import check
from servekit.package.rules.pin import listing_digest
from tests.package.factories import PIN_FILES, write_package
from tests.yamlio import dump_yaml


@pytest.fixture
def pkg(tmp_path: Path) -> Path:
    write_package(tmp_path)
    return tmp_path


def _edit(pkg: Path, old: str, new: str) -> None:
    path = pkg / "package.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def _line_of(pkg: Path, needle: str) -> int:
    lines = (pkg / "package.yaml").read_text().splitlines()
    return next(i for i, line in enumerate(lines, start=1) if needle in line)


def test_malformed_yaml_names_file_and_line(pkg: Path) -> None:
    _edit(pkg, "name: Tiny test package", "name: [unclosed")
    with pytest.raises(PackageFileError) as info:
        load_package(pkg)
    assert info.value.path.endswith("package.yaml") and info.value.line is not None
    assert "not valid YAML" in info.value.message


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("published: '2026-11-30'", "published: 2026-13-45"),
        ("shard_count: 1", "shard_count: " + "9" * 5000),
    ],
    ids=["impossible-date", "5000-digit-number"],
)
def test_a_value_yaml_resolves_but_cannot_build_is_a_file_error(
    pkg: Path, old: str, new: str
) -> None:
    _edit(pkg, old, new)
    with pytest.raises(PackageFileError, match="cannot be read"):
        load_package(pkg)


def test_unknown_field_names_path_and_line(pkg: Path) -> None:
    _edit(pkg, "  shard_count: 1", "  shard_count: 1\n  shards_count: 1")
    with pytest.raises(PackageSchemaError) as info:
        load_package(pkg)
    (problem,) = info.value.problems
    assert problem.field == "model.shards_count"
    assert "unknown field" in problem.message
    assert problem.line == _line_of(pkg, "shards_count")


def test_wrong_type_names_field(pkg: Path) -> None:
    _edit(pkg, "  shard_count: 1", "  shard_count: many")
    with pytest.raises(PackageSchemaError) as info:
        load_package(pkg)
    assert [p.field for p in info.value.problems] == ["model.shard_count"]
    assert info.value.problems[0].line == _line_of(pkg, "shard_count: many")


def test_digest_of_the_wrong_shape(pkg: Path) -> None:
    digest = listing_digest(PIN_FILES)
    _edit(pkg, "tree_digest: " + digest, "tree_digest: " + digest[:-1])
    with pytest.raises(PackageSchemaError) as info:
        load_package(pkg)
    assert info.value.problems[0].field == "model.tree_digest"
    assert "sha256" in info.value.problems[0].message


def test_unquoted_number_gets_a_quoting_hint(pkg: Path) -> None:
    _edit(pkg, "  commit: " + "a" * 40, "  commit: 1234567")
    with pytest.raises(PackageSchemaError) as info:
        load_package(pkg)
    assert "quote the value" in info.value.problems[0].message


def test_missing_evidence_file(pkg: Path) -> None:
    (pkg / "evidence" / "run-b.jsonl").unlink()
    with pytest.raises(PackageFileError) as info:
        load_package(pkg)
    assert "measurements.runs[1].file" in info.value.message
    assert "evidence/run-b.jsonl" in info.value.message


def test_path_leaving_the_package_is_refused(pkg: Path) -> None:
    _edit(pkg, "file: licenses/MODEL_LICENSE.md", "file: ../MODEL_LICENSE.md")
    with pytest.raises(PackageSchemaError) as info:
        load_package(pkg)
    assert info.value.problems[0].field == "model.license.file"


def test_duplicate_key(pkg: Path) -> None:
    _edit(pkg, "  shard_count: 1", "  shard_count: 1\n  shard_count: 2")
    with pytest.raises(PackageFileError) as info:
        load_package(pkg)
    assert "duplicate key 'shard_count'" in info.value.message
    assert info.value.line == _line_of(pkg, "shard_count: 2")


def test_missing_package_yaml(tmp_path: Path) -> None:
    with pytest.raises(PackageFileError, match=r"package\.yaml not found"):
        load_package(tmp_path)


def test_not_a_directory(tmp_path: Path) -> None:
    with pytest.raises(PackageError, match="not a package directory"):
        load_package(tmp_path / "nope")


def test_malformed_evidence_line(pkg: Path) -> None:
    path = pkg / "evidence" / "run-a.jsonl"
    lines = path.read_text().splitlines()
    lines[3] = lines[3][:-5]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(EvidenceError) as info:
        check(load_package(pkg))
    assert info.value.line == 4 and "not valid JSON" in info.value.message


@pytest.mark.parametrize(
    "line",
    ['{"record":"run","seed":' + "9" * 5000 + "}", "[" * 100_000 + "]" * 100_000],
    ids=["5000-digit-number", "nested-100000-deep"],
)
def test_evidence_json_can_parse_but_not_build_is_an_evidence_error(pkg: Path, line: str) -> None:
    path = pkg / "evidence" / "run-a.jsonl"
    lines = path.read_text().splitlines()
    lines[2] = line
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(EvidenceError, match="cannot be read") as info:
        check(load_package(pkg))
    assert info.value.line == 3


def test_evidence_record_with_wrong_field(pkg: Path) -> None:
    path = pkg / "evidence" / "run-a.jsonl"
    lines = path.read_text().splitlines()
    lines[2] = lines[2].replace('"concurrency":', '"concurency":')
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(EvidenceError) as info:
        check(load_package(pkg))
    assert info.value.line == 3 and "concurrency" in info.value.message


def test_every_problem_is_listed_at_once(pkg: Path) -> None:
    data = yaml.safe_load((pkg / "package.yaml").read_text())
    data["model"]["shard_count"] = "x"
    data["engine"]["build"] = "binary"
    (pkg / "package.yaml").write_text(dump_yaml(data))
    with pytest.raises(PackageSchemaError) as info:
        load_package(pkg)
    assert {p.field for p in info.value.problems} == {"model.shard_count", "engine.build"}


@pytest.mark.parametrize("model_dir", ["models/bf16", "/models/../etc", "/models//bf16", "/m d"])
def test_model_dir_is_a_plain_absolute_path(pkg: Path, model_dir: str) -> None:
    _edit(pkg, "serve:", f"serve:\n  model_dir: {model_dir!r}")
    with pytest.raises(PackageSchemaError) as info:
        load_package(pkg)
    assert info.value.problems[0].field == "serve.model_dir"


def test_model_dir_loads(pkg: Path) -> None:
    _edit(pkg, "serve:", "serve:\n  model_dir: /models/converted-bf16")
    assert load_package(pkg).package.serve.model_dir == "/models/converted-bf16"


def test_an_empty_package_yaml_is_refused(pkg: Path) -> None:
    (pkg / "package.yaml").write_text("# nothing yet\n")
    with pytest.raises(PackageFileError, match="the file is empty") as info:
        load_package(pkg)
    assert "examples/packages/" in str(info.value.hint)


def test_a_package_yaml_that_is_a_list_is_refused_at_line_1(pkg: Path) -> None:
    (pkg / "package.yaml").write_text("- id: tiny\n- version: 1.0.0\n")
    with pytest.raises(PackageFileError, match="top level must be a mapping") as info:
        load_package(pkg)
    assert info.value.line == 1


def test_a_problem_inside_a_list_names_the_items_line(pkg: Path) -> None:
    data = yaml.safe_load((pkg / "package.yaml").read_text())
    data["workloads"][0]["concurrencies"] = [1, "four"]
    (pkg / "package.yaml").write_text(dump_yaml(data))
    with pytest.raises(PackageSchemaError) as info:
        load_package(pkg)
    problem = info.value.problems[0]
    assert problem.field == "workloads[0].concurrencies[1]"
    assert problem.line == _line_of(pkg, "four")


def test_a_missing_field_of_a_list_item_points_at_the_item(pkg: Path) -> None:
    data = yaml.safe_load((pkg / "package.yaml").read_text())
    del data["measurements"]["runs"][1]["file"]
    (pkg / "package.yaml").write_text(dump_yaml(data))
    with pytest.raises(PackageSchemaError) as info:
        load_package(pkg)
    (problem,) = info.value.problems
    assert problem.field == "measurements.runs[1].file"
    assert problem.message == "is required"
    assert problem.line == _line_of(pkg, "id: run-b")


def _evidence_lines(pkg: Path, edit: Callable[[list[str]], list[str]]) -> None:
    path = pkg / "evidence" / "run-a.jsonl"
    path.write_text("\n".join(edit(path.read_text().splitlines())) + "\n")


def test_an_evidence_line_that_is_not_an_object(pkg: Path) -> None:
    _evidence_lines(pkg, lambda lines: [*lines[:2], "[1, 2]", *lines[3:]])
    with pytest.raises(EvidenceError, match="a line must be a JSON object") as info:
        check(load_package(pkg))
    assert info.value.line == 3


def test_blank_evidence_lines_are_skipped_and_an_empty_file_refused(pkg: Path) -> None:
    _evidence_lines(pkg, lambda lines: [lines[0], "", "   ", *lines[1:]])
    check(load_package(pkg))  # blank lines between records are harmless
    _evidence_lines(pkg, lambda lines: [""])
    with pytest.raises(EvidenceError, match="empty evidence file") as info:
        check(load_package(pkg))
    assert "servekit bench run" in str(info.value.hint)
