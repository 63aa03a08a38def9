"""Opening the store: the default SQLite file, its pragmas, migrations that match the models."""

from __future__ import annotations

import re
import threading
import uuid
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from sqlalchemy import Connection, Engine, MetaData, Table, create_engine, event, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from servekit.config import load_settings
from servekit.store import ledger
from servekit.store.audit import audit
from servekit.store.checkout import QUOTE_TTL, confirm
from servekit.store.db import Store, database_url, make_engine, migrate, open_store
from servekit.store.diagram import mermaid
from servekit.store.models import Base, OrderKind, PackageVersion, Quote, Refund, utcnow
from servekit.store.providers import SandboxProvider
from servekit.store.publishing import publication_state
from tests.store.conftest import Backend, Packages, member, publish_one

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
            assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == "0007"
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


def _empty_database(backend: Backend, tmp_path: Path) -> str:
    """A database with no tables, dropped with the backend's others."""
    if backend.kind == "sqlite":
        return f"sqlite:///{tmp_path / 'before-0006.db'}"
    name = f"servekit_t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(backend.admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    admin.dispose()
    backend.created.append(name)
    return make_url(backend.admin_url).set(database=name).render_as_string(hide_password=False)


def _copy_version_as_of(head: Session, older: Connection, package_id: str) -> int:
    """Copy a version published into the current schema (``head``) into an older
    database, only the columns that database has: the ORM would read and write columns a
    later migration added (0007's placeholder_commit). Returns the copied row's id."""
    table = Table("package_versions", MetaData(), autoload_with=older)
    current = PackageVersion.__table__.c
    names = [c.name for c in table.c if c.name != "id"]
    row = head.execute(
        select(*(current[n] for n in names)).where(current.package_id == package_id)
    ).one()
    inserted = older.execute(table.insert().values(dict(zip(names, row, strict=True))))
    (new_id,) = inserted.inserted_primary_key or ()
    return int(new_id)


def test_0006_records_the_refunds_made_before_it(
    backend: Backend, packages: Packages, key: Path, tmp_path: Path, db: Session
) -> None:
    """A store refunded the old way (order marked refunded, entitlement revoked, reversal
    posted) migrates to 0006 with that refund recorded, and passes the new audit. The
    data is written as 0005 knew it: no column a later migration added is read or set."""
    engine = make_engine(_empty_database(backend, tmp_path))
    cfg = Config()
    cfg.set_main_option("script_location", "servekit.store:migrations")
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0005")
    with Session(engine) as s, s.begin():
        publish_one(packages.priced, key, tmp_path / "kits", db)
        version = _copy_version_as_of(db, s.connection(), "test-priced")
        who = member(s, "acme")
        quote = Quote(
            workspace_id=who.workspace_id,
            version_id=version,
            kind=OrderKind.PURCHASE,
            currency="usd",
            amount_cents=4999,
            licence_required=False,
            expires_at=utcnow() + QUOTE_TTL,
        )
        s.add(quote)
        s.flush()
        order = confirm(who, quote.id, "k", provider=SandboxProvider(), session=s)
        reversal = ledger.reversal(order.id, 4999, "usd", "sandbox", session=s)
        s.execute(text("UPDATE orders SET status = 'refunded'"))
        s.execute(
            text("UPDATE entitlements SET revoked_at = :t, revoke_reason = 'refunded: old'"),
            {"t": order.created_at},
        )
    assert migrate(engine) == "0007"
    with Session(engine) as s, s.begin():
        (row,) = s.scalars(select(Refund)).all()
        assert (row.order_id, row.amount_cents, row.full_refund, row.entry_id, row.reason) == (
            order.id,
            4999,
            True,
            reversal,
            "refunded: old",
        )
        assert audit(session=s).ok
    engine.dispose()
