"""An index on package_versions.retracted_at, for the pages' per-request publication check.

Every catalog and package page asks the store for its publication state (versions, newest
id, retracted versions: ``servekit.store.publishing.publication_state``). Without this index
counting the retracted versions reads every row, licence text included: 5 ms a request at
1 000 versions on SQLite (docs/performance.md); with it, an index lookup.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_package_versions_retracted_at", "package_versions", ["retracted_at"])


def downgrade() -> None:
    op.drop_index("ix_package_versions_retracted_at", table_name="package_versions")
