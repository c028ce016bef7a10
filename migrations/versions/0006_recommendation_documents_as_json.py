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
    _retype(sa.JSON(), postgresql.JSONB(astext_type=sa.Text()), 'json')


def downgrade() -> None:
    _retype(postgresql.JSONB(astext_type=sa.Text()), sa.JSON(), 'jsonb')


def _retype(new: sa.types.TypeEngine, old: sa.types.TypeEngine, cast: str) -> None:
    """Both document columns from ``old`` to ``new`` on PostgreSQL (text kept as it is)."""
    if op.get_bind().dialect.name != 'postgresql':
        return
    for name in COLUMNS:
        op.alter_column(
            'recommendations',
            name,
            type_=new,
            existing_type=old,
            existing_nullable=False,
            postgresql_using=f'{name}::{cast}',
        )
