"""The package JSON Schema, generated from the models (``schema/package.schema.json``)."""

from __future__ import annotations

import json
import re
from typing import Any

from servekit.package.models import SCHEMA_VERSION, Package

SCHEMA_ID = f"https://servekit.dev/schema/package/v{SCHEMA_VERSION}.json"


def package_json_schema() -> dict[str, object]:
    """The JSON Schema of ``package.yaml``."""
    schema = Package.model_json_schema(mode="validation")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}


def package_json_schema_text() -> str:
    """The schema as the exact text committed to ``schema/package.schema.json``."""
    return json.dumps(package_json_schema(), indent=2, sort_keys=True) + "\n"


# --- the field reference in docs/package.md, generated from the schema ---------------

REFERENCE_START = "<!-- field reference: generated from the schema, do not edit -->"
REFERENCE_END = "<!-- end of field reference -->"


def _type_name(prop: dict[str, Any], defs: dict[str, Any]) -> str:
    """A short type for one schema property: ``string``, ``[Run]``, ``date | null``..."""
    if "$ref" in prop:
        name = str(prop["$ref"]).rsplit("/", 1)[-1]
        return name if "properties" in defs[name] else _type_name(defs[name], defs)
    if "anyOf" in prop:
        return " \\| ".join(_type_name(p, defs) for p in prop["anyOf"])
    if "enum" in prop:
        return " \\| ".join(f"`{v}`" for v in prop["enum"])
    kind = prop.get("type", "any")
    if kind == "array":
        return f"[{_type_name(prop.get('items', {}), defs)}]"
    if kind == "string" and "format" in prop:
        return str(prop["format"])
    return str(kind)


def _sections(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """``Package`` first, then every definition in the order the fields reach it."""
    defs: dict[str, Any] = schema["$defs"]
    order, todo = [("Package", schema)], [schema]
    while todo:
        text = json.dumps(todo.pop(0).get("properties", {}))
        for name in re.findall(r'"#/\$defs/([A-Za-z]+)"', text):
            if name not in {n for n, _ in order} and "properties" in defs[name]:
                order.append((name, defs[name]))
                todo.append(defs[name])
    return order


def package_reference_markdown() -> str:
    """Every field of ``package.yaml`` as Markdown tables: the reference in docs/package.md."""
    lines = [REFERENCE_START, ""]
    schema = package_json_schema()
    for name, section in _sections(schema):
        lines += [f"### `{name}`", ""]
        if section.get("description"):
            lines += [" ".join(str(section["description"]).split()), ""]
        lines += ["| field | type | required | description |", "| --- | --- | --- | --- |"]
        required = set(section.get("required", ()))
        for field, prop in section["properties"].items():
            description = " ".join(str(prop.get("description", "")).split()).replace("|", "\\|")
            needed = "yes" if field in required else "no"
            kind = _type_name(prop, schema["$defs"])  # type: ignore[arg-type]
            lines.append(f"| `{field}` | {kind} | {needed} | {description} |")
        lines.append("")
    return "\n".join([*lines, REFERENCE_END])


def with_reference(document: str) -> str:
    """``document`` (docs/package.md) with its generated reference replaced by a fresh one."""
    head, _, rest = document.partition(REFERENCE_START)
    _, _, tail = rest.partition(REFERENCE_END)
    return head + package_reference_markdown() + tail
