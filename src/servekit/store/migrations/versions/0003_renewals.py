"""Subscription renewal: a subscription can end, and each period end is recorded once.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    with op.batch_alter_table("subscriptions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("end_reason", sa.Text(), nullable=True))
    op.create_table(
        "subscription_renewals",
        sa.Column("id", ID, nullable=False),
        sa.Column("subscription_id", ID, nullable=False),
        sa.Column("period_start", sa.DateTime(timezone=True), nullable=False),
        sa.Column(
            "outcome",
            sa.Enum(
                "renewed",
                "cancelled",
                "failed",
                "superseded",
                name="renewaloutcome",
                native_enum=False,
                length=32,
            ),
            nullable=False,
        ),
        sa.Column("period_end", sa.DateTime(timezone=True), nullable=True),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("amount_cents", sa.BigInteger(), nullable=False),
        sa.Column("provider", sa.String(length=32), nullable=True),
        sa.Column("payment_ref", sa.String(length=200), nullable=True),
        sa.Column("entry_id", ID, nullable=True),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["entry_id"], ["journal_entries.id"]),
        sa.ForeignKeyConstraint(["subscription_id"], ["subscriptions.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("entry_id"),
        sa.UniqueConstraint("subscription_id", "period_start"),
    )


def downgrade() -> None:
    op.drop_table("subscription_renewals")
    with op.batch_alter_table("subscriptions", schema=None) as batch_op:
        batch_op.drop_column("end_reason")
        batch_op.drop_column("ended_at")
