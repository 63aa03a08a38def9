"""Every promise at one gate: licensed entitlements and downloads, refunds bounded by the sale.

1. an entitlement to a version that requires a licence needs a signature of its workspace
   and version on UPDATE too (0002 checked inserts), and a revoked entitlement stays
   revoked;
2. a download of a version that requires a licence needs a signature of the downloading
   workspace for that version: a maintenance subscription's delivery, which writes no
   entitlement row, is checked where the kit is served (every download is logged);
3. ``refunds``: one row per reversal of an order (all or part of it), the provider event
   that caused it unique. The database refuses a refunded total above the order's amount
   (PostgreSQL locks the order row first, so concurrent inserts queue), a second refund
   that closes the order, and any change to a refund; an order marked refunded needs the
   refund that closed it, and never goes back to paid; sealing a journal entry of an order
   is refused when the reversals posted to revenue for that order would exceed its amount;
4. existing refunded orders are recorded in ``refunds`` (their reversal entry, the
   revocation's reason), so the audit's "every revocation matched by a refund" holds for
   data written before this revision.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

SIGNED = (
    "EXISTS (SELECT 1 FROM licence_signatures s WHERE s.workspace_id = NEW.workspace_id "
    "AND s.version_id = NEW.version_id)"
)
ENTITLEMENT_SIGNED = (
    "EXISTS (SELECT 1 FROM licence_signatures s WHERE s.id = NEW.signature_id "
    "AND s.workspace_id = NEW.workspace_id AND s.version_id = NEW.version_id)"
)
REQUIRED = "(SELECT licence_required FROM package_versions WHERE id = NEW.version_id)"
REFUNDED = "(SELECT COALESCE(SUM(amount_cents), 0) FROM refunds WHERE order_id = NEW.order_id)"
PAID = "(SELECT amount_cents FROM orders WHERE id = {order})"
REVERSED = (
    "(SELECT COALESCE(SUM(p.amount_cents), 0) FROM postings p JOIN journal_entries e "
    "ON e.id = p.entry_id WHERE e.order_id = NEW.order_id AND p.account = 'revenue:sales' "
    "AND p.amount_cents > 0 AND (e.sealed = {true} OR e.id = NEW.id))"
)
FULL_REFUND = (
    "EXISTS (SELECT 1 FROM refunds r WHERE r.order_id = NEW.id AND r.full_refund = {true})"
)

MSG_ENTITLEMENT = (
    "an entitlement to a licensed version needs a signature of its workspace and version"
)
MSG_REVOKED = "a revoked entitlement stays revoked"
MSG_DOWNLOAD = "a download of a licensed version needs a signature of its workspace and version"
MSG_REFUND = "a refund cannot take an order above the amount it was paid"
MSG_REVERSAL = "reversals of an order cannot exceed the amount it was paid"
MSG_ORDER = "an order is refunded only by a full refund, and stays refunded"

BACKFILL = (
    "INSERT INTO refunds (order_id, amount_cents, full_refund, provider_event_id, entry_id, "
    "reason, created_at) SELECT o.id, o.amount_cents, {true}, NULL, (SELECT MIN(e.id) FROM "
    "journal_entries e WHERE e.order_id = o.id AND e.memo LIKE 'refund order %'), "
    "COALESCE((SELECT n.revoke_reason FROM entitlements n WHERE n.order_id = o.id), "
    "'refunded'), CURRENT_TIMESTAMP FROM orders o WHERE o.status = 'refunded'"
)


def _sqlite_trigger(name: str, when: str, table: str, condition: str, message: str) -> str:
    return (
        f"CREATE TRIGGER {name} {when} ON {table} WHEN {condition} "
        f"BEGIN SELECT RAISE(ABORT, '{message}'); END"
    )


def _sqlite() -> list[str]:
    order_change = (
        "(OLD.status = 'refunded' AND NEW.status <> 'refunded') OR (NEW.status = 'refunded' "
        f"AND OLD.status <> 'refunded' AND NOT {FULL_REFUND.format(true=1)})"
    )
    return [
        _sqlite_trigger(
            "entitlements_signed_on_update",
            "BEFORE UPDATE",
            "entitlements",
            f"{REQUIRED} = 1 AND NOT {ENTITLEMENT_SIGNED}",
            MSG_ENTITLEMENT,
        ),
        _sqlite_trigger(
            "entitlements_stay_revoked",
            "BEFORE UPDATE",
            "entitlements",
            "OLD.revoked_at IS NOT NULL AND NEW.revoked_at IS NULL",
            MSG_REVOKED,
        ),
        _sqlite_trigger(
            "downloads_need_signature",
            "BEFORE INSERT",
            "downloads",
            f"{REQUIRED} = 1 AND NOT {SIGNED}",
            MSG_DOWNLOAD,
        ),
        _sqlite_trigger(
            "refunds_bounded",
            "BEFORE INSERT",
            "refunds",
            f"{REFUNDED} + NEW.amount_cents > {PAID.format(order='NEW.order_id')}",
            MSG_REFUND,
        ),
        _sqlite_trigger(
            "refunds_no_update", "BEFORE UPDATE", "refunds", "1", "append-only: refunds"
        ),
        _sqlite_trigger(
            "refunds_no_delete", "BEFORE DELETE", "refunds", "1", "append-only: refunds"
        ),
        _sqlite_trigger(
            "journal_entries_reversal_bounded",
            "BEFORE UPDATE OF sealed",
            "journal_entries",
            "NEW.sealed = 1 AND NEW.order_id IS NOT NULL AND "
            f"{REVERSED.format(true=1)} > {PAID.format(order='NEW.order_id')}",
            MSG_REVERSAL,
        ),
        _sqlite_trigger(
            "orders_refund_closed", "BEFORE UPDATE OF status", "orders", order_change, MSG_ORDER
        ),
    ]


def _pg_raise(message: str) -> str:
    return f"RAISE EXCEPTION '{message}' USING ERRCODE = 'integrity_constraint_violation';"


def _pg_function(name: str, body: str, *, replace: bool = False) -> str:
    verb = "CREATE OR REPLACE" if replace else "CREATE"
    return (
        f"{verb} FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN {body} "
        "RETURN NEW; END $$"
    )


def _postgresql() -> list[str]:
    entitlement = (
        "IF TG_OP = 'UPDATE' AND (NEW.signature_id IS DISTINCT FROM OLD.signature_id OR "
        "NEW.version_id IS DISTINCT FROM OLD.version_id OR NEW.workspace_id IS DISTINCT "
        "FROM OLD.workspace_id) THEN "
        + _pg_raise("an entitlement keeps its workspace, version and signature")
        + " END IF; IF TG_OP = 'UPDATE' AND OLD.revoked_at IS NOT NULL AND NEW.revoked_at "
        "IS NULL THEN " + _pg_raise(MSG_REVOKED) + f" END IF; IF {REQUIRED} AND NOT "
        f"{ENTITLEMENT_SIGNED} THEN " + _pg_raise(MSG_ENTITLEMENT) + " END IF;"
    )
    order_change = (
        "(OLD.status = 'refunded' AND NEW.status <> 'refunded') OR (NEW.status = 'refunded' "
        f"AND OLD.status <> 'refunded' AND NOT {FULL_REFUND.format(true='true')})"
    )
    return [
        _pg_function("servekit_entitlement_signature", entitlement, replace=True),
        _pg_function(
            "servekit_download_signature",
            f"IF {REQUIRED} AND NOT {SIGNED} THEN " + _pg_raise(MSG_DOWNLOAD) + " END IF;",
        ),
        _pg_function(
            "servekit_refund_bounded",
            "PERFORM 1 FROM orders WHERE id = NEW.order_id FOR UPDATE; "
            f"IF {REFUNDED} + NEW.amount_cents > {PAID.format(order='NEW.order_id')} THEN "
            + _pg_raise(MSG_REFUND)
            + " END IF;",
        ),
        _pg_function(
            "servekit_reversal_bounded",
            f"IF {REVERSED.format(true='true')} > {PAID.format(order='NEW.order_id')} THEN "
            + _pg_raise(MSG_REVERSAL)
            + " END IF;",
        ),
        _pg_function(
            "servekit_order_refunded",
            f"IF {order_change} THEN " + _pg_raise(MSG_ORDER) + " END IF;",
        ),
        "CREATE TRIGGER downloads_signature BEFORE INSERT ON downloads "
        "FOR EACH ROW EXECUTE FUNCTION servekit_download_signature()",
        "CREATE TRIGGER refunds_bounded BEFORE INSERT ON refunds "
        "FOR EACH ROW EXECUTE FUNCTION servekit_refund_bounded()",
        "CREATE TRIGGER refunds_append_only BEFORE UPDATE OR DELETE ON refunds "
        "FOR EACH ROW EXECUTE FUNCTION servekit_append_only()",
        "CREATE TRIGGER refunds_no_truncate BEFORE TRUNCATE ON refunds "
        "FOR EACH STATEMENT EXECUTE FUNCTION servekit_append_only()",
        "CREATE TRIGGER journal_entries_reversal_bounded BEFORE UPDATE OF sealed ON "
        "journal_entries FOR EACH ROW WHEN (NEW.sealed AND NEW.order_id IS NOT NULL) "
        "EXECUTE FUNCTION servekit_reversal_bounded()",
        "CREATE TRIGGER orders_refund_closed BEFORE UPDATE OF status ON orders "
        "FOR EACH ROW EXECUTE FUNCTION servekit_order_refunded()",
    ]


def _refunds_table() -> None:
    op.create_table(
        "refunds",
        sa.Column("id", ID, nullable=False),
        sa.Column("order_id", ID, nullable=False),
        sa.Column("amount_cents", sa.BigInteger(), nullable=False),
        sa.Column("full_refund", sa.Boolean(), nullable=False),
        sa.Column("provider_event_id", sa.String(length=200), nullable=True),
        sa.Column("entry_id", ID, nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("amount_cents >= 0", name="ck_refunds_amount"),
        sa.ForeignKeyConstraint(["entry_id"], ["journal_entries.id"]),
        sa.ForeignKeyConstraint(["order_id"], ["orders.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("entry_id"),
        sa.UniqueConstraint("provider_event_id"),
    )
    op.create_index("ix_refunds_order_id", "refunds", ["order_id"])
    op.create_index(
        "uq_refunds_one_full",
        "refunds",
        ["order_id"],
        unique=True,
        sqlite_where=sa.text("full_refund = 1"),
        postgresql_where=sa.text("full_refund"),
    )


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    _refunds_table()
    op.execute(BACKFILL.format(true="true" if dialect == "postgresql" else "1"))
    for statement in _postgresql() if dialect == "postgresql" else _sqlite():
        op.execute(statement)


def downgrade() -> None:
    raise NotImplementedError("the store's invariants are never dropped")
