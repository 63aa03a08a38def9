"""The schema as a Mermaid ER diagram, generated from the models (docs/store.md embeds it)."""

from __future__ import annotations

from servekit.store.models import Base


def mermaid() -> str:
    """``erDiagram`` text: each table with its columns (PK/FK marked) and each foreign key."""
    lines = ["erDiagram"]
    tables = sorted(Base.metadata.tables.values(), key=lambda t: t.name)
    for table in tables:
        for fk in sorted(table.foreign_keys, key=lambda f: f.parent.name):
            lines.append(f'    {fk.column.table.name} ||--o{{ {table.name} : "{fk.parent.name}"')
    for table in tables:
        lines.append(f"    {table.name} {{")
        for col in table.columns:
            kind = type(col.type).__name__.lower()
            keys = ",".join(
                k for k, on in (("PK", col.primary_key), ("FK", bool(col.foreign_keys))) if on
            )
            lines.append(f"        {kind} {col.name}{' ' + keys if keys else ''}")
        lines.append("    }")
    return "\n".join(lines) + "\n"
