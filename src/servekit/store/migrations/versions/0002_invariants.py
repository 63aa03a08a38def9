"""The invariants the database itself enforces, as triggers on SQLite and PostgreSQL.

1. licence signatures, their affirmations and ledger postings are append-only
   (UPDATE, DELETE and, on PostgreSQL, TRUNCATE are rejected);
2. each signature row's ``prev_hash`` is the ``row_hash`` of the row before it (genesis:
   64 zeros), so the chain cannot be spliced by an insert;
3. a journal entry's only update is sealing it, and sealing is refused unless it has at
   least two postings that sum to zero per currency; a sealed entry takes no posting.
   PostgreSQL also checks every entry's sum at commit (a deferred constraint trigger);
4. an entitlement to a version that requires a licence cannot be inserted without a
   signature of the same workspace and version, and its signature cannot be changed;
5. a published version's price, tier, licence and kit bytes never change.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

GENESIS = "0" * 64
APPEND_ONLY = ("licence_signatures", "licence_affirmations", "postings")

UNBALANCED = (
    "(SELECT COUNT(*) FROM postings WHERE entry_id = NEW.id) < 2 OR EXISTS ("
    "SELECT 1 FROM postings WHERE entry_id = NEW.id GROUP BY currency "
    "HAVING SUM(amount_cents) <> 0)"
)
NO_SIGNATURE = (
    "NOT EXISTS (SELECT 1 FROM licence_signatures s WHERE s.id = NEW.signature_id "
    "AND s.workspace_id = NEW.workspace_id AND s.version_id = NEW.version_id)"
)
VERSION_FROZEN = (
    "price_cents",
    "maintenance_cents",
    "tier",
    "licence_required",
    "licence_sha256",
    "kit_sha256",
    "package_id",
    "version",
)


def _sqlite_trigger(name: str, when: str, table: str, condition: str, message: str) -> str:
    where = f" WHEN {condition}" if condition else ""
    return (
        f"CREATE TRIGGER {name} {when} ON {table}{where} "
        f"BEGIN SELECT RAISE(ABORT, '{message}'); END"
    )


def _sqlite() -> list[str]:
    stmts = []
    for table in APPEND_ONLY:
        for op_name in ("UPDATE", "DELETE"):
            stmts.append(
                _sqlite_trigger(
                    f"{table}_no_{op_name.lower()}",
                    f"BEFORE {op_name}",
                    table,
                    "",
                    f"append-only: {table} rows cannot be {op_name.lower()}d",
                )
            )
    chain = (
        f"NOT (NEW.prev_hash IS (CASE WHEN NEW.seq = 1 THEN '{GENESIS}' ELSE "
        "(SELECT row_hash FROM licence_signatures WHERE seq = NEW.seq - 1) END))"
    )
    seal_only = (
        "NOT (OLD.sealed = 0 AND NEW.sealed = 1 AND NEW.id = OLD.id AND NEW.order_id IS "
        "OLD.order_id AND NEW.memo = OLD.memo AND NEW.created_at = OLD.created_at)"
    )
    frozen = " OR ".join(f"NEW.{c} IS NOT OLD.{c}" for c in VERSION_FROZEN)
    keep_signature = (
        "NEW.signature_id IS NOT OLD.signature_id OR NEW.version_id IS NOT OLD.version_id "
        "OR NEW.workspace_id IS NOT OLD.workspace_id"
    )
    sealed = "(SELECT sealed FROM journal_entries WHERE id = NEW.entry_id) = 1"
    required = "(SELECT licence_required FROM package_versions WHERE id = NEW.version_id) = 1"
    return [
        *stmts,
        _sqlite_trigger(
            "licence_signatures_chain",
            "BEFORE INSERT",
            "licence_signatures",
            chain,
            "broken chain: prev_hash is not the row_hash of the previous signature",
        ),
        _sqlite_trigger(
            "journal_entries_no_delete",
            "BEFORE DELETE",
            "journal_entries",
            "",
            "append-only: journal_entries rows cannot be deleted",
        ),
        _sqlite_trigger(
            "journal_entries_seal_only",
            "BEFORE UPDATE",
            "journal_entries",
            seal_only,
            "append-only: the only update of a journal entry is sealing it",
        ),
        _sqlite_trigger(
            "journal_entries_balanced",
            "BEFORE UPDATE OF sealed",
            "journal_entries",
            f"NEW.sealed = 1 AND ({UNBALANCED})",
            "unbalanced journal entry: postings must sum to zero per currency",
        ),
        _sqlite_trigger(
            "postings_open_entry",
            "BEFORE INSERT",
            "postings",
            sealed,
            "the journal entry is sealed: it takes no more postings",
        ),
        _sqlite_trigger(
            "entitlements_need_signature",
            "BEFORE INSERT",
            "entitlements",
            f"{required} AND {NO_SIGNATURE}",
            "an entitlement to a licensed version needs a signature of its workspace and version",
        ),
        _sqlite_trigger(
            "entitlements_keep_signature",
            "BEFORE UPDATE",
            "entitlements",
            keep_signature,
            "an entitlement keeps its workspace, version and signature",
        ),
        _sqlite_trigger(
            "package_versions_frozen",
            "BEFORE UPDATE",
            "package_versions",
            frozen,
            "a published version keeps its price, tier, licence and kit",
        ),
    ]


def _pg_function(name: str, body: str) -> str:
    return (
        f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN {body} "
        "RETURN NEW; END $$"
    )


def _pg_raise(message: str) -> str:
    return f"RAISE EXCEPTION '{message}' USING ERRCODE = 'integrity_constraint_violation';"


def _postgresql() -> list[str]:
    frozen = " OR ".join(f"NEW.{c} IS DISTINCT FROM OLD.{c}" for c in VERSION_FROZEN)
    stmts = [
        _pg_function(
            "servekit_append_only",
            "RAISE EXCEPTION 'append-only: % rows cannot be changed (%)', TG_TABLE_NAME, TG_OP "
            "USING ERRCODE = 'integrity_constraint_violation';",
        ),
        _pg_function(
            "servekit_signature_chain",
            f"IF NEW.prev_hash IS DISTINCT FROM (CASE WHEN NEW.seq = 1 THEN '{GENESIS}' ELSE "
            "(SELECT row_hash FROM licence_signatures WHERE seq = NEW.seq - 1) END) THEN "
            + _pg_raise("broken chain: prev_hash is not the row_hash of the previous signature")
            + " END IF;",
        ),
        _pg_function(
            "servekit_journal_seal",
            "IF NOT (OLD.sealed = false AND NEW.sealed = true AND NEW.id = OLD.id AND "
            "NEW.order_id IS NOT DISTINCT FROM OLD.order_id AND NEW.memo = OLD.memo AND "
            "NEW.created_at = OLD.created_at) THEN "
            + _pg_raise("append-only: the only update of a journal entry is sealing it")
            + f" END IF; IF {UNBALANCED} THEN "
            + _pg_raise("unbalanced journal entry: postings must sum to zero per currency")
            + " END IF;",
        ),
        _pg_function(
            "servekit_posting_open_entry",
            "IF (SELECT sealed FROM journal_entries WHERE id = NEW.entry_id) THEN "
            + _pg_raise("the journal entry is sealed: it takes no more postings")
            + " END IF;",
        ),
        _pg_function(
            "servekit_entry_balanced",
            "IF EXISTS (SELECT 1 FROM postings WHERE entry_id = NEW.entry_id GROUP BY currency "
            "HAVING SUM(amount_cents) <> 0) THEN "
            + _pg_raise("unbalanced journal entry: postings must sum to zero per currency")
            + " END IF;",
        ),
        _pg_function(
            "servekit_entitlement_signature",
            "IF (TG_OP = 'UPDATE' AND (NEW.signature_id IS DISTINCT FROM OLD.signature_id OR "
            "NEW.version_id IS DISTINCT FROM OLD.version_id OR NEW.workspace_id IS DISTINCT "
            "FROM OLD.workspace_id)) THEN "
            + _pg_raise("an entitlement keeps its workspace, version and signature")
            + " END IF; IF TG_OP = 'INSERT' AND (SELECT licence_required FROM package_versions "
            f"WHERE id = NEW.version_id) AND {NO_SIGNATURE} THEN "
            + _pg_raise(
                "an entitlement to a licensed version needs a signature of its workspace and version"
            )
            + " END IF;",
        ),
        _pg_function(
            "servekit_version_frozen",
            f"IF {frozen} THEN "
            + _pg_raise("a published version keeps its price, tier, licence and kit")
            + " END IF;",
        ),
    ]
    for table in APPEND_ONLY:
        stmts.append(
            f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION servekit_append_only()"
        )
        stmts.append(
            f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
            "FOR EACH STATEMENT EXECUTE FUNCTION servekit_append_only()"
        )
    return [
        *stmts,
        "CREATE TRIGGER journal_entries_no_delete BEFORE DELETE ON journal_entries "
        "FOR EACH ROW EXECUTE FUNCTION servekit_append_only()",
        "CREATE TRIGGER journal_entries_no_truncate BEFORE TRUNCATE ON journal_entries "
        "FOR EACH STATEMENT EXECUTE FUNCTION servekit_append_only()",
        "CREATE TRIGGER licence_signatures_chain BEFORE INSERT ON licence_signatures "
        "FOR EACH ROW EXECUTE FUNCTION servekit_signature_chain()",
        "CREATE TRIGGER journal_entries_seal BEFORE UPDATE ON journal_entries "
        "FOR EACH ROW EXECUTE FUNCTION servekit_journal_seal()",
        "CREATE TRIGGER postings_open_entry BEFORE INSERT ON postings "
        "FOR EACH ROW EXECUTE FUNCTION servekit_posting_open_entry()",
        "CREATE CONSTRAINT TRIGGER postings_balanced AFTER INSERT ON postings "
        "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION servekit_entry_balanced()",
        "CREATE TRIGGER entitlements_signature BEFORE INSERT OR UPDATE ON entitlements "
        "FOR EACH ROW EXECUTE FUNCTION servekit_entitlement_signature()",
        "CREATE TRIGGER package_versions_frozen BEFORE UPDATE ON package_versions "
        "FOR EACH ROW EXECUTE FUNCTION servekit_version_frozen()",
    ]


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    statements = _postgresql() if dialect == "postgresql" else _sqlite()
    for statement in statements:
        op.execute(statement)


def downgrade() -> None:
    raise NotImplementedError("the store's invariants are never dropped")
