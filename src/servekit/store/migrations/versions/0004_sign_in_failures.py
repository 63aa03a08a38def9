"""Failed sign-ins, counted by the web app's sign-in rate limit.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "sign_in_failures",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("client", sa.String(length=64), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_sign_in_failures_email", "sign_in_failures", ["email"])
    op.create_index("ix_sign_in_failures_client", "sign_in_failures", ["client"])


def downgrade() -> None:
    op.drop_index("ix_sign_in_failures_client", table_name="sign_in_failures")
    op.drop_index("ix_sign_in_failures_email", table_name="sign_in_failures")
    op.drop_table("sign_in_failures")
