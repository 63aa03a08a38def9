"""Opening the store: the default SQLite file, its pragmas, migrations that match the models."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine, create_engine, event, text

from servekit.config import load_settings
from servekit.store.db import Store, database_url, open_store
from servekit.store.diagram import mermaid
from servekit.store.models import Base
from servekit.store.publishing import publication_state

ROOT = Path(__file__).resolve().parents[2]


def test_the_default_store_is_sqlite_under_home_in_wal_mode_with_foreign_keys(
    tmp_path: Path,
) -> None:
    settings = load_settings({"SERVEKIT_HOME": str(tmp_path / "var")})
    store = open_store(settings)
    try:
        assert (tmp_path / "var" / "servekit.db").is_file()
        with store.engine.connect() as conn:
            assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
            assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
            assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == "0006"
    finally:
        store.engine.dispose()


def test_a_postgresql_url_uses_psycopg_3() -> None:
    settings = load_settings({"SERVEKIT_DATABASE_URL": "postgresql://u@db/servekit"})
    assert database_url(settings) == "postgresql+psycopg://u@db/servekit"


def test_the_migrations_build_exactly_the_models(shared_engine: Engine) -> None:
    with shared_engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == []


def test_docs_embed_the_generated_schema_diagram() -> None:
    assert mermaid() in (ROOT / "docs" / "store.md").read_text(), (
        "regenerate the diagram in docs/store.md"
    )


def test_every_test_the_invariants_table_names_exists() -> None:
    """docs/store.md names, for each invariant, the test that proves it: each must exist."""
    text_ = (ROOT / "docs" / "store.md").read_text()
    table = text_[text_.index("## Invariants") : text_.index("The hypothesis state machine")]
    named = re.findall(r"`(tests/[\w/]+\.py)::(test_\w+)`", table)
    assert len(named) > 30
    missing = [
        f"{path}::{name}"
        for path, name in named
        if not re.search(rf"^def {name}\(", (ROOT / path).read_text(), re.M)
    ]
    assert missing == []


def test_a_snapshot_reads_while_a_writer_holds_the_store(tmp_path: Path) -> None:
    """Pages read in snapshots: a plain BEGIN outside the writer queue, so a transaction
    that writes and stays open (a slow checkout) holds up no page."""
    store = open_store(load_settings({"SERVEKIT_HOME": str(tmp_path / "var")}))
    read: list[tuple[int, int, int]] = []

    def page() -> None:
        with store.snapshot() as s:
            read.append(publication_state(session=s))

    try:
        with store.transaction() as writer:
            writer.execute(text("SELECT 1"))  # BEGIN IMMEDIATE: the writer's lock is held
            reader = threading.Thread(target=page)
            reader.start()
            reader.join(timeout=5)
            assert read == [(0, 0, 0)], "the snapshot waited for the writer"
    finally:
        store.engine.dispose()


def test_a_connection_the_server_ended_is_replaced_on_checkout_without_a_ping(
    fresh_store: Store,
) -> None:
    """No ``pool_pre_ping`` (a round trip per checkout): a pooled connection whose backend
    was terminated is noticed on checkout from its socket and replaced, so the next
    transaction runs. Without the check it fails with "terminating connection"."""
    engine = fresh_store.engine
    if engine.dialect.name != "postgresql":
        pytest.skip("SQLite has no server to end a connection")
    with engine.connect() as conn:
        victim = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()
    admin = create_engine(engine.url)
    try:
        with admin.connect() as conn:  # returns once the backend has exited
            assert conn.execute(text("SELECT pg_terminate_backend(:p, 10000)"), {"p": victim})
    finally:
        admin.dispose()
    sent: list[str] = []
    event.listen(engine, "before_cursor_execute", lambda *a: sent.append(a[2]))
    with fresh_store.transaction() as s:
        pid = s.execute(text("SELECT pg_backend_pid()")).scalar()
    assert pid != victim
    assert sent == ["SELECT pg_backend_pid()"]  # nothing else went to the server
