from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from servekit.package.schema import (
    REFERENCE_END,
    REFERENCE_START,
    package_json_schema,
    package_json_schema_text,
    package_reference_markdown,
    with_reference,
)

ROOT = Path(__file__).resolve().parents[2]


def test_committed_schema_is_current() -> None:
    committed = (ROOT / "schema" / "package.schema.json").read_text()
    assert committed == package_json_schema_text(), "run `make schema` and commit the result"


def test_example_packages_validate_against_the_json_schema() -> None:
    schema = package_json_schema()
    for path in sorted((ROOT / "examples" / "packages").glob("*/package.yaml")):
        data = json.loads(json.dumps(yaml.safe_load(path.read_text()), default=str))
        jsonschema.validate(data, schema)


def _fields(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    sections = [("Package", schema), *schema["$defs"].items()]
    return [
        (name, field, prop)
        for name, section in sections
        for field, prop in section.get("properties", {}).items()
    ]


def test_every_field_has_a_description() -> None:
    undescribed = [
        f"{name}.{field}"
        for name, field, prop in _fields(package_json_schema())
        if len(str(prop.get("description", "")).strip()) < 8
    ]
    assert undescribed == [], "describe these in src/servekit/package/models.py"


def test_docs_field_reference_is_generated_from_the_schema() -> None:
    document = (ROOT / "docs" / "package.md").read_text()
    assert REFERENCE_START in document and REFERENCE_END in document
    assert with_reference(document) == document, "run `make schema` and commit the result"


def test_the_reference_names_every_field_with_its_description() -> None:
    reference = package_reference_markdown()
    for name, field, prop in _fields(package_json_schema()):
        description = " ".join(str(prop["description"]).split()).replace("|", "\\|")
        assert f"| `{field}` |" in reference and description in reference, f"{name}.{field}"
    assert "| `status` | `draft` \\| `published` \\| `superseded` | yes |" in reference
