"""package_versions.placeholder_commit: the version's model commit is a placeholder.

A package whose model commit is all zeros (``servekit.package.models.is_placeholder_commit``)
builds a kit whose launch pins a revision that does not exist: it cannot be deployed. The
store records this at publish so that checkout sells such a version only through a test
payment provider, and the pages say so (docs/store.md, "Price rules"). Versions published
before this migration read false: publish them again into a fresh store to set it.

Revision ID: 0006_placeholder
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # a plain ADD COLUMN (no batch copy: the table's triggers name it)
    op.add_column(
        "package_versions",
        sa.Column("placeholder_commit", sa.Boolean(), nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    op.drop_column("package_versions", "placeholder_commit")
