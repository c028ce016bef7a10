"""watermarks (catalog, measurement) instead of one data_version counter; the measurement
journal; per-stack cell summaries

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-03 10:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0003'
down_revision: str | None = '0002'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')


def upgrade() -> None:
    op.create_table(
        'watermarks',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('catalog', sa.BigInteger(), nullable=False),
        sa.Column('measurement', sa.BigInteger(), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_watermarks')),
    )
    # both watermarks start where the single counter stood: every snapshot keyed by the old
    # counter is older than both
    op.execute("INSERT INTO watermarks (id, catalog, measurement, updated_at) "
               "SELECT id, version, version, updated_at FROM data_version WHERE id = 1")
    op.drop_table('data_version')
    op.create_table(
        'measurement_journal',
        sa.Column('watermark', sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column('cells', JSON, nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('watermark', name=op.f('pk_measurement_journal')),
    )
    op.create_table(
        'benchmark_stacks',
        sa.Column('gpu_id', sa.Integer(), nullable=False),
        sa.Column('params_hash', sa.String(length=16), nullable=False),
        sa.Column('fingerprint_hash', sa.String(length=16), nullable=False),
        sa.Column('workload', sa.String(length=64), nullable=False),
        sa.Column('params', JSON, nullable=False),
        sa.Column('summary', JSON, nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['gpu_id'], ['gpus.id'], name=op.f('fk_benchmark_stacks_gpu_id_gpus')),
        sa.PrimaryKeyConstraint('gpu_id', 'params_hash', 'fingerprint_hash', name=op.f('pk_benchmark_stacks')),
    )


def downgrade() -> None:
    op.drop_table('benchmark_stacks')
    op.drop_table('measurement_journal')
    op.create_table(
        'data_version',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('version', sa.BigInteger(), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_data_version')),
    )
    op.execute("INSERT INTO data_version (id, version, updated_at) "
               "SELECT id, catalog + measurement, updated_at FROM watermarks WHERE id = 1")
    op.drop_table('watermarks')
