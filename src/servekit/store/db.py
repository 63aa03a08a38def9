"""Opening the store: the engine, SQLite's pragmas, migrations, one transaction per unit.

SQLite (the default, ``SERVEKIT_HOME/servekit.db``) runs in WAL mode with foreign keys on,
and every transaction starts with ``BEGIN IMMEDIATE`` so concurrent writers queue on the
busy timeout instead of failing when a reader upgrades. A snapshot (``Store.snapshot``,
reads only: what every page asks) starts with a plain ``BEGIN`` instead and skips the
writer queue: in WAL mode a reader neither waits for a writer nor holds one up. PostgreSQL is used through
psycopg 3 when ``SERVEKIT_DATABASE_URL`` is set. Migrations run on open.
"""

from __future__ import annotations

import functools
import logging
import select as io_select
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import (
    ColumnElement,
    Engine,
    Executable,
    Table,
    bindparam,
    create_engine,
    event,
    func,
    insert,
    select,
)
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.exc import DataError, DisconnectionError, SQLAlchemyError
from sqlalchemy.orm import Session

from servekit.config import Settings
from servekit.errors import StoreError, UsageError

log = logging.getLogger(__name__)

DB_FILE = "servekit.db"
KITS_DIR = "kits"
BUSY_TIMEOUT_MS = 30_000
READ_ONLY = "servekit_read_only"  # the execution option that marks a snapshot's connection
RECYCLE_S = 1800  # a PostgreSQL connection older than this is replaced on checkout


def database_url(settings: Settings) -> str:
    """The SQLAlchemy URL: ``SERVEKIT_DATABASE_URL``, else SQLite under the home."""
    url = settings.database_url
    if not url:
        return f"sqlite:///{settings.home / DB_FILE}"
    for plain in ("postgresql://", "postgres://"):
        if url.startswith(plain):
            return "postgresql+psycopg://" + url[len(plain) :]
    return url


def _sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.isolation_level = None  # SQLAlchemy's "begin" hook issues BEGIN
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


class _WriterGate:
    """One writer at a time inside this process, queued on a lock instead of on SQLite's
    busy handler (which sleeps up to 100 ms a retry: 16 threads spent most time asleep)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def begin(self, conn: Connection) -> None:
        if conn.get_execution_options().get(READ_ONLY):
            conn.exec_driver_sql("BEGIN")  # deferred: a WAL reader takes no write lock
            return
        if not self._lock.acquire(timeout=BUSY_TIMEOUT_MS / 1000):
            raise StoreError(
                "the SQLite store stayed busy for 30 s", hint="another transaction is stuck open"
            )
        conn.info["servekit_gate"] = True
        try:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        except BaseException:
            self.end(conn)
            raise

    def end(self, conn: Connection) -> None:
        if conn.info.pop("servekit_gate", False):  # once, even if commit fails then rolls back
            self._lock.release()


def _sqlite_directory(directory: Path) -> None:
    """Create the SQLite database's directory (SERVEKIT_HOME on a first start)."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(
            f"cannot create {directory} for the SQLite database: {exc.strerror or exc}",
            hint="set SERVEKIT_HOME (or SERVEKIT_DATABASE_URL) to a directory you can write",
        ) from exc


def make_engine(url: str) -> Engine:
    """An engine with the store's connection settings for ``url``."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database:
            _sqlite_directory(Path(parsed.database).parent)
        engine = create_engine(url, pool_size=20, max_overflow=10)
        gate = _WriterGate()
        event.listen(engine, "connect", _sqlite_connect)
        event.listen(engine, "begin", gate.begin)
        event.listen(engine, "commit", gate.end)
        event.listen(engine, "rollback", gate.end)
        return engine
    engine = create_engine(url, pool_size=20, max_overflow=10, pool_recycle=RECYCLE_S)
    event.listen(engine, "checkout", _refuse_dead)
    return engine


def _dead(dbapi_connection: Any) -> bool:
    """A pooled psycopg connection is dead if psycopg knows it is closed or broken, or if
    its socket has anything to read while it sits idle in the pool: a server that ends a
    session (``pg_terminate_backend``, a restart, ``idle_session_timeout``) sends its
    goodbye and closes the socket. One ``poll`` with no timeout, no round trip: this
    replaces ``pool_pre_ping``'s ``SELECT 1``, one round trip on every checkout."""
    if dbapi_connection.closed or dbapi_connection.broken:
        return True
    poller = io_select.poll()
    poller.register(dbapi_connection.fileno(), io_select.POLLIN | io_select.POLLPRI)
    return bool(poller.poll(0))


def _refuse_dead(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
    if _dead(dbapi_connection):
        raise DisconnectionError("the pooled connection was closed by the server")  # retried


def next_id(table: Table, dialect: str) -> ColumnElement[int]:
    """The id the next row of ``table`` gets, taken before the insert so that the rows
    that refer to it can be written in the same statement. PostgreSQL: the column's
    sequence. SQLite: one more than the largest, which no other transaction can take
    while this one holds the database's one write lock (``BEGIN IMMEDIATE``)."""
    if dialect == "postgresql":
        return func.nextval(func.pg_get_serial_sequence(table.name, "id"))
    return select(func.coalesce(func.max(table.c.id), 0) + 1).scalar_subquery()


Rows = Sequence[Mapping[str, Any]]
Shape = tuple[tuple[Table, int, tuple[str, ...]], ...]


def _param(table: Table, row: int, column: str) -> str:
    return f"{table.name}_{row}_{column}"


@functools.cache
def _one_insert(shape: Shape) -> Executable:
    """The one statement of :func:`insert_rows` on PostgreSQL, built once per shape
    (tables, row counts, columns): a single-row INSERT per row (SQLAlchemy caches the
    compiled form of those, not of a multi-row VALUES), all but the last as ``WITH``."""
    inserts = [
        insert(table).values(
            {c: bindparam(_param(table, i, c), type_=table.c[c].type) for c in columns}
        )
        for table, rows, columns in shape
        for i in range(rows)
    ]
    *first, last = inserts
    return last.add_cte(*(ins.cte(f"w{n}") for n, ins in enumerate(first))) if first else last


def insert_rows(session: Session, writes: Sequence[tuple[Table, Rows]]) -> None:
    """Insert ``rows`` into each table, in order (a row may refer to one written before it).

    PostgreSQL: one statement (:func:`_one_insert`), one round trip; foreign keys are
    checked at the statement's end, so the order of its clauses does not matter. SQLite
    has no INSERT inside WITH: one statement per table, in order, in process.
    """
    conn = session.connection()
    if conn.dialect.name != "postgresql":
        for table, rows in writes:
            conn.execute(insert(table), list(rows))
        return
    shape = tuple((table, len(rows), tuple(rows[0])) for table, rows in writes)
    conn.execute(
        _one_insert(shape),
        {
            _param(t, i, c): v
            for t, rows in writes
            for i, row in enumerate(rows)
            for c, v in row.items()
        },
    )


def migrate(engine: Engine) -> str:
    """Apply every migration up to the newest; returns the revision now in force."""
    cfg = Config()
    cfg.set_main_option("script_location", "servekit.store:migrations")
    try:
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")
            row = conn.exec_driver_sql("SELECT version_num FROM alembic_version").first()
    except SQLAlchemyError as exc:
        raise StoreError(
            f"cannot migrate the store at {engine.url.render_as_string()}: {exc}",
            hint="check SERVEKIT_DATABASE_URL / SERVEKIT_HOME and that the database is reachable",
        ) from exc
    return str(row[0]) if row else "base"


@dataclass(frozen=True)
class Store:
    """An open store: its engine and where the kit bytes live."""

    engine: Engine
    home: Path

    @property
    def kits_dir(self) -> Path:
        return self.home / KITS_DIR

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """One unit of work: committed when the block ends, rolled back on any exception.

        A value the database refuses (PostgreSQL: a NUL in text, a string longer than its
        column, a number out of range) is a :class:`UsageError`, never a 500: the front
        ends bound every field first, and this is the backstop for one they missed."""
        try:
            with Session(self.engine, expire_on_commit=False) as session, session.begin():
                yield session
        except DataError as exc:
            reason = str(exc.orig).splitlines()[0] if exc.orig else "refused"
            raise UsageError(
                f"the database refused a value: {reason}",
                hint="a text holds a NUL or is too long, or a number is out of range; correct it",
            ) from exc

    @contextmanager
    def snapshot(self) -> Iterator[Session]:
        """A unit of work that only reads: one consistent view, outside SQLite's writer
        queue (a write in it is a mistake, and on SQLite waits on the busy timeout)."""
        with Session(self._reader, expire_on_commit=False) as session, session.begin():
            yield session

    @cached_property
    def _reader(self) -> Engine:
        """The engine for snapshots: the same pool, marked read-only."""
        return self.engine.execution_options(**{READ_ONLY: True})


def open_store(settings: Settings, *, run_migrations: bool = True) -> Store:
    """Open (and migrate) the store the settings name."""
    engine = make_engine(database_url(settings))
    if run_migrations:
        migrate(engine)
    return Store(engine=engine, home=settings.home)
