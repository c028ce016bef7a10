"""Stored recommendations: one insert per answer (deduplicated by id), a read by id (or
many), the newest ids since a time, a prune by age. Returns :class:`~service.core.recommend.search.StoredRecommendation`; writes flush."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, cast

from sqlalchemy import Table, delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from service.core.recommend.search import StoredRecommendation
from service.db.engine import JsonText
from service.db.models import Recommendation
from service.db.repositories.benchmarks import utc

_INSERTS: dict[str, Any] = {}


def _insert_once(dialect: str) -> Any:
    """INSERT ... ON CONFLICT (id) DO NOTHING on the table, built once per dialect and executed
    with the row as parameters: a statement carrying the values would be rebuilt and keyed for
    the compiled cache on every answer (ORM bulk path), about a millisecond a request."""
    stmt = _INSERTS.get(dialect)
    if stmt is None:
        table = cast(Table, Recommendation.__table__)
        ins = pg_insert(table) if dialect == "postgresql" else sqlite_insert(table)
        stmt = _INSERTS[dialect] = ins.on_conflict_do_nothing(index_elements=["id"])
    return stmt


class RecommendationRepository:
    def __init__(self, session: Session) -> None:
        self._s = session

    def add(
        self,
        rec_id: str,
        *,
        api_key_id: int | None,
        data_version: str,
        request: dict[str, Any],
        response: dict[str, Any] | str,
        created_at: dt.datetime,
    ) -> bool:
        """Store unless the id is already stored (one statement: INSERT ... ON CONFLICT DO
        NOTHING). True when this call stored it. ``response`` may be given already serialised
        (JSON text of the document), as the route sends it."""
        values = {
            "id": rec_id,
            "api_key_id": api_key_id,
            "data_version": data_version,
            "request": request,
            "response": JsonText(response) if isinstance(response, str) else response,
            "created_at": created_at,
        }
        conn = self._s.connection()
        result = conn.execute(_insert_once(conn.dialect.name), values)
        return bool(getattr(result, "rowcount", 0))

    def get(self, rec_id: str) -> StoredRecommendation | None:
        row = self._s.execute(select(Recommendation).where(Recommendation.id == rec_id)).scalar_one_or_none()
        return None if row is None else self._stored(row)

    def recent_ids(self, since: dt.datetime, limit: int) -> list[str]:
        """Ids of the ``limit`` newest answers stored at or after ``since``, newest first (the
        measurement plan's questions; ids only, so a plan whose questions are all memoised reads
        no answer document)."""
        q = (
            select(Recommendation.id)
            .where(Recommendation.created_at >= since)
            .order_by(Recommendation.created_at.desc(), Recommendation.id)
            .limit(limit)
        )
        return list(self._s.execute(q).scalars())

    def get_many(self, ids: Sequence[str]) -> list[StoredRecommendation]:
        """The stored answers of ``ids`` that still exist (any order)."""
        if not ids:
            return []
        q = select(Recommendation).where(Recommendation.id.in_(list(ids)))
        return [
            replace(self._stored(row), created_at=utc(row.created_at)) for row in self._s.execute(q).scalars()
        ]

    @staticmethod
    def _stored(row: Recommendation) -> StoredRecommendation:
        return StoredRecommendation(
            id=row.id,
            api_key_id=row.api_key_id,
            data_version=row.data_version,
            request=row.request,
            response=row.response,
            created_at=row.created_at,
        )

    def prune(self, older_than: dt.datetime) -> int:
        """Delete answers stored before ``older_than``; the number deleted."""
        result = self._s.execute(delete(Recommendation).where(Recommendation.created_at < older_than))
        return int(getattr(result, "rowcount", 0) or 0)
