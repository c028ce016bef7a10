"""price rows say how their date is known (date_basis: effective | retrieved)

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-04 04:30:00

A SkyPilot catalog copy read on a day is only known to be at least that old: such rows are
``retrieved`` and answers give their age as a lower bound (issue 24). Existing rows are
``effective`` (the seed re-states the shipped SkyPilot rows as ``retrieved`` on its next run).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0005'
down_revision: str | None = '0004'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('prices', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('date_basis', sa.String(length=16), nullable=False, server_default='effective')
        )


def downgrade() -> None:
    with op.batch_alter_table('prices', schema=None) as batch_op:
        batch_op.drop_column('date_basis')
