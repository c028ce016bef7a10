"""stored recommendations (POST /v1/recommend answers, GET /v1/recommendations/{id})

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03 14:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0004'
down_revision: str | None = '0003'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')


def upgrade() -> None:
    op.create_table(
        'recommendations',
        sa.Column('id', sa.String(length=32), nullable=False),
        sa.Column('api_key_id', sa.Integer(), nullable=True),
        sa.Column('data_version', sa.String(length=64), nullable=False),
        sa.Column('request', JSON, nullable=False),
        sa.Column('response', JSON, nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['api_key_id'], ['api_keys.id'], name=op.f('fk_recommendations_api_key_id_api_keys'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_recommendations')),
    )
    with op.batch_alter_table('recommendations', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_recommendations_created_at'), ['created_at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('recommendations', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_recommendations_created_at'))
    op.drop_table('recommendations')
