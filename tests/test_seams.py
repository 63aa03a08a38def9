"""pydantic's errors reach the user in one form, whichever module validated the input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from servekit.config import load_settings
from servekit.errors import EvidenceError, PackageSchemaError, UsageError
from servekit.package.evidence import parse_evidence
from servekit.package.load import parse_package
from servekit.seams import field_problems, problem_text, validation_problems
from servekit.weights.pinfile import parse_pin
from tests.functional.helpers import EXAMPLES


class Item(BaseModel):
    sha256: str


class Options(BaseModel):
    model_config = ConfigDict(extra="forbid")

    output_tokens: int = Field(ge=1)
    files: list[Item] = []
    name: str = "x"

    @field_validator("name")
    @classmethod
    def _no_slash(cls, value: str) -> str:
        if "/" in value:
            raise ValueError("--name may not hold '/'")
        return value


def _error(data: object) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        Options.model_validate(data)
    return info.value


def test_a_bound_names_the_option_and_the_value() -> None:
    text = validation_problems(_error({"output_tokens": 0}), {"output_tokens": "--output-tokens"})
    assert text == "--output-tokens must be at least 1 (got 0)"


def test_nested_fields_are_named_by_path_with_indexes() -> None:
    (problem,) = field_problems(_error({"output_tokens": 1, "files": [{"sha256": 5}]}))
    assert problem.loc == ("files", 0, "sha256")
    assert str(problem) == (
        "files[0].sha256 must be text, not a number or boolean: quote the value (got 5)"
    )


def test_missing_unknown_and_validator_sentences() -> None:
    problems = field_problems(_error({"nmae": "a", "name": "a/b"}))
    assert [str(p) for p in problems] == [
        "output_tokens is required",
        "--name may not hold '/'",
        "nmae is an unknown field (remove it, or check its spelling against the schema)",
    ]


def test_pydantics_own_wording_never_reaches_the_user() -> None:
    text = validation_problems(_error({"output_tokens": "many"}))
    assert text.startswith("output_tokens must be a valid integer")
    assert "Input should" not in text and "pydantic" not in text


def test_problem_text_of_other_libraries_is_their_first_line() -> None:
    assert problem_text(ValueError("first\nsecond")) == "first"
    assert problem_text(KeyError()) == "KeyError"
    assert problem_text(_error({})) == "output_tokens is required"


def test_a_setting_is_named_by_its_environment_variable() -> None:
    with pytest.raises(UsageError, match=r"SERVEKIT_PROGRESS \S.* \(got 'maybe'\)"):
        load_settings({"SERVEKIT_PROGRESS": "maybe"})


def test_a_pin_names_the_field(tmp_path: Path) -> None:
    data = json.loads((EXAMPLES / "tiny-sim" / "model-pin.json").read_text())
    data["files"][0]["size"] = -1
    with pytest.raises(UsageError, match=r"files\[0\]\.size must be at least 0 \(got -1\)"):
        parse_pin(json.dumps(data), source="pin.json")


def test_evidence_names_the_line_and_the_field(tmp_path: Path) -> None:
    lines = (EXAMPLES / "tiny-sim" / "evidence").glob("*.jsonl")
    first = next(iter(sorted(lines))).read_text().splitlines()
    record = json.loads(first[1])
    record["t_first_event"] = "soon"
    with pytest.raises(EvidenceError) as info:
        parse_evidence(tmp_path / "run.jsonl", [first[0], json.dumps(record)])
    assert ":2" in str(info.value) and "t_first_event must be" in str(info.value)
    assert "Input should" not in str(info.value)


def test_a_package_problem_is_worded_as_everywhere_else() -> None:
    text = (EXAMPLES / "tiny-sim" / "package.yaml").read_text()
    with pytest.raises(PackageSchemaError) as info:
        parse_package(Path("package.yaml"), text.replace("shard_count: 1", "shard_count: -3", 1))
    (problem,) = info.value.problems
    assert problem.field == "model.shard_count"
    assert problem.message == "must be at least 1 (got -3)"
