"""Alembic environment: runs on the connection :func:`servekit.store.db.migrate` passes in."""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

from servekit.store.models import Base

connection = context.config.attributes.get("connection")
if not isinstance(connection, Connection):  # pragma: no cover - only via servekit.store.db
    raise RuntimeError("run migrations through servekit.store.db.migrate")
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
