"""stored recommendations keep their documents as sent: JSON, not JSONB, on PostgreSQL

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-04 16:15:00

A stored answer is only ever read back whole (``GET /v1/recommendations/{id}``, the
measurement plan); no query looks inside it. JSONB re-parsed every ~34 kB answer into its
binary form on insert (0.90 vs 0.55 ms of backend CPU a row, measured on this project's
answers) and gave it back with its keys re-ordered; JSON keeps the text as sent. SQLite stores
both as text already: nothing changes there.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0006'
down_revision: str | None = '0005'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = ('request', 'response')


def upgrade() -> None:
    if op.get_bind().dialect.name != 'postgresql':
        return
    for name in COLUMNS:
        op.alter_column(
            'recommendations',
            name,
            type_=sa.JSON(),
            existing_type=postgresql.JSONB(astext_type=sa.Text()),
            existing_nullable=False,
            postgresql_using=f'{name}::json',
        )


def downgrade() -> None:
    if op.get_bind().dialect.name != 'postgresql':
        return
    for name in COLUMNS:
        op.alter_column(
            'recommendations',
            name,
            type_=postgresql.JSONB(astext_type=sa.Text()),
            existing_type=sa.JSON(),
            existing_nullable=False,
            postgresql_using=f'{name}::jsonb',
        )
