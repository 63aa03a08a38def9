"""Store fixtures: every store test runs on SQLite and on PostgreSQL.

``backend`` is parametrized over both; the PostgreSQL leg is skipped, saying why, only when
the server at ``SERVEKIT_TEST_POSTGRES_URL`` cannot be reached. Each run makes its own
uniquely named databases (a migrated template, then copies of it) and drops them at the end.
``db`` is a session inside a transaction that is rolled back after the test; tests that need
real commits (concurrency, the API server) take ``fresh_store``, a database of their own.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sqlalchemy import create_engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from servekit.kit.build import BuiltKit, build_kit
from servekit.store import accounts
from servekit.store.checkout import confirm, create_quote
from servekit.store.db import Store, make_engine, migrate
from servekit.store.models import OrderKind, Role
from servekit.store.providers import ProviderName, SandboxProvider
from servekit.store.publishing import publish_built
from servekit.store.results import OrderInfo, Principal

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "tests" / "assets"
K3 = ROOT / "examples" / "packages" / "kimi-k3-8xb300"
PG_DEFAULT = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
THRESHOLD = 10_000.0


@dataclass
class Backend:
    """One database server: makes fresh, migrated databases and drops them at the end."""

    kind: str
    root: Path
    admin_url: str = ""
    template: str = ""
    created: list[str] = field(default_factory=list)

    def new_url(self) -> str:
        name = f"servekit_t_{uuid.uuid4().hex[:12]}"
        if self.kind == "sqlite":
            path = self.root / f"{name}.db"
            shutil.copyfile(self.root / f"{self.template}.db", path)
            return f"sqlite:///{path}"
        admin = create_engine(self.admin_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}" TEMPLATE "{self.template}"')
        admin.dispose()
        self.created.append(name)
        return make_url(self.admin_url).set(database=name).render_as_string(hide_password=False)


def _sqlite_backend(root: Path) -> Backend:
    backend = Backend("sqlite", root, template="template")
    engine = make_engine(f"sqlite:///{root / 'template.db'}")
    migrate(engine)
    engine.dispose()  # closing the last connection folds the WAL into the file
    return backend


def _pg_backend(root: Path) -> Backend:
    url = os.environ.get("SERVEKIT_TEST_POSTGRES_URL", PG_DEFAULT)
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    template = f"servekit_t_{uuid.uuid4().hex[:12]}_tpl"
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{template}"')
    except OperationalError as exc:
        pytest.skip(f"PostgreSQL is not reachable at {url}: {str(exc).splitlines()[0]}")
    finally:
        admin.dispose()
    backend = Backend("postgresql", root, admin_url=url, template=template, created=[template])
    engine = make_engine(make_url(url).set(database=template).render_as_string(hide_password=False))
    migrate(engine)
    engine.dispose()
    return backend


def _drop(backend: Backend) -> None:
    admin = create_engine(backend.admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        for name in reversed(backend.created):
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    admin.dispose()


@pytest.fixture(scope="session", params=["sqlite", "postgresql"])
def backend(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Backend]:
    root = tmp_path_factory.mktemp(f"store-{request.param}")
    made = _sqlite_backend(root) if request.param == "sqlite" else _pg_backend(root)
    try:
        yield made
    finally:
        if made.kind == "postgresql":
            _drop(made)


@pytest.fixture(scope="session")
def shared_engine(backend: Backend) -> Iterator[object]:
    engine = make_engine(backend.new_url())
    yield engine
    engine.dispose()


@pytest.fixture
def db(shared_engine: object) -> Iterator[Session]:
    """A session whose work is rolled back after the test (savepoints inside)."""
    from sqlalchemy import Engine

    assert isinstance(shared_engine, Engine)
    with shared_engine.connect() as conn:
        outer = conn.begin()
        session = Session(bind=conn, join_transaction_mode="create_savepoint")
        try:
            yield session
        finally:
            session.close()
            outer.rollback()


@pytest.fixture
def kits_dir(tmp_path: Path) -> Path:
    return tmp_path / "kits"


@pytest.fixture
def fresh_store(backend: Backend, tmp_path: Path) -> Iterator[Store]:
    """A store on a database of its own, with real commits."""
    store = Store(engine=make_engine(backend.new_url()), home=tmp_path / "home")
    yield store
    store.engine.dispose()


@pytest.fixture(scope="session")
def key(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("keys") / "publisher.key"
    shutil.copyfile(ASSETS / "keys" / "publisher.key", path)
    path.chmod(0o600)
    return path


def make_variant(
    dest: Path,
    *,
    pkg_id: str,
    version: str,
    usd: float,
    tier: str = "standard",
    maint: float | None = None,
) -> Path:
    """A copy of the kit fixture package under another id, version and price."""
    shutil.copytree(ASSETS / "kit_package", dest)
    path = dest / "package.yaml"
    text = path.read_text()
    text = re.sub(r"^id: .*$", f"id: {pkg_id}", text, count=1, flags=re.M)
    text = re.sub(r"^version: .*$", f"version: {version}", text, count=1, flags=re.M)
    pricing = f"pricing:\n  usd: {usd}\n  tier: {tier}\n"
    if maint is not None:
        pricing += f"  maintenance:\n    available: true\n    usd_per_year: {maint}\n"
    path.write_text(text[: text.index("pricing:")] + pricing)
    return dest


@dataclass(frozen=True)
class Packages:
    free: Path
    priced: Path
    priced_v2: Path
    priced_v3: Path
    costly: Path
    enterprise: Path


@pytest.fixture(scope="session")
def packages(tmp_path_factory: pytest.TempPathFactory) -> Packages:
    root = tmp_path_factory.mktemp("packages")
    return Packages(
        free=make_variant(root / "free", pkg_id="test-free", version="1.0.0", usd=0),
        priced=make_variant(
            root / "p1", pkg_id="test-priced", version="1.0.0", usd=49.99, maint=19
        ),
        priced_v2=make_variant(
            root / "p2", pkg_id="test-priced", version="1.1.0", usd=59, maint=19
        ),
        priced_v3=make_variant(
            root / "p3", pkg_id="test-priced", version="1.2.0", usd=59, maint=19
        ),
        costly=make_variant(root / "costly", pkg_id="test-costly", version="1.0.0", usd=THRESHOLD),
        enterprise=K3,
    )


_BUILT: dict[tuple[Path, Path], BuiltKit] = {}


def publish_one(path: Path, key: Path, kits_dir: Path, session: Session) -> None:
    """Publish the package at ``path`` as :func:`servekit.store.publishing.publish` does,
    with its kit built once per worker: the shops of most store tests publish the same four
    packages, and building their kits took most of those tests' time (docs/testing.md).
    tests/store/test_publishing.py calls ``publish`` itself, a build each time."""
    if (path, key) not in _BUILT:
        _BUILT[path, key] = build_kit(path, key)
    publish_built(_BUILT[path, key], kits_dir=kits_dir, threshold_usd=THRESHOLD, session=session)


def member(session: Session, slug: str, role: Role = Role.OWNER) -> Principal:
    """A new user owning (or with ``role`` in) a new workspace ``slug``."""
    uid = accounts.create_user(
        f"{slug}-{uuid.uuid4().hex[:6]}@example.com", "correct horse", session=session
    )
    wid = accounts.create_workspace(slug, slug.title(), owner_id=uid, session=session)
    if role is not Role.OWNER:
        accounts.add_member(wid, uid, role, session=session)
    session.flush()
    return accounts.principal_for_user(uid, slug, session=session)


class StripeLikeProvider(SandboxProvider):
    """The sandbox under Stripe's name, so orders carry Stripe-shaped references; it
    records the refunds it is asked for."""

    name = ProviderName.STRIPE

    def __init__(self) -> None:
        super().__init__()
        self.refunds: list[tuple[str, int]] = []

    def charge(self, amount_cents: int, currency: str, *, idempotency_key: str, memo: str) -> str:
        return (
            "pi_"
            + super().charge(amount_cents, currency, idempotency_key=idempotency_key, memo=memo)[8:]
        )

    def refund(self, payment_ref: str, amount_cents: int, *, idempotency_key: str) -> str:
        self.refunds.append((payment_ref, amount_cents))
        return "re_1"


def sold_priced(
    session: Session, packages: Packages, key: Path, kits_dir: Path, slug: str = "acme"
) -> OrderInfo:
    """The priced test package published and bought by a new workspace ``slug`` through
    :class:`StripeLikeProvider` (orders with a Stripe-shaped payment reference)."""
    publish_one(packages.priced, key, kits_dir, session)
    who = member(session, slug)
    quote = create_quote(who, "test-priced", "1.0.0", OrderKind.PURCHASE, session=session)
    return confirm(who, quote.id, "k", provider=StripeLikeProvider(), session=session)
