"""The package JSON Schema, generated from the models (``schema/package.schema.json``)."""

from __future__ import annotations

import json

from servekit.package.models import SCHEMA_VERSION, Package

SCHEMA_ID = f"https://servekit.dev/schema/package/v{SCHEMA_VERSION}.json"


def package_json_schema() -> dict[str, object]:
    """The JSON Schema of ``package.yaml``."""
    schema = Package.model_json_schema(mode="validation")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}


def package_json_schema_text() -> str:
    """The schema as the exact text committed to ``schema/package.schema.json``."""
    return json.dumps(package_json_schema(), indent=2, sort_keys=True) + "\n"
