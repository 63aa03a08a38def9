from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import yaml

from servekit.package.schema import package_json_schema, package_json_schema_text

ROOT = Path(__file__).resolve().parents[2]


def test_committed_schema_is_current() -> None:
    committed = (ROOT / "schema" / "package.schema.json").read_text()
    assert committed == package_json_schema_text(), "run `make schema` and commit the result"


def test_example_packages_validate_against_the_json_schema() -> None:
    schema = package_json_schema()
    for path in sorted((ROOT / "examples" / "packages").glob("*/package.yaml")):
        data = json.loads(json.dumps(yaml.safe_load(path.read_text()), default=str))
        jsonschema.validate(data, schema)
