"""API keys (stored hashed). Returns :class:`~service.core.access.keys.ApiKeyRecord`; writes flush."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.core.access.keys import ApiKeyRecord
from service.db.models import ApiKey


def _record(row: ApiKey) -> ApiKeyRecord:
    return ApiKeyRecord(
        id=row.id,
        name=row.name,
        prefix=row.prefix,
        secret_hash=row.secret_hash,
        scope=row.scope,
        trusted=row.trusted,
        created_at=row.created_at,
        revoked_at=row.revoked_at,
    )


class KeyRepository:
    def __init__(self, session: Session) -> None:
        self._s = session

    def add(self, *, name: str, prefix: str, secret_hash: str, scope: str, trusted: bool) -> ApiKeyRecord:
        row = ApiKey(name=name, prefix=prefix, secret_hash=secret_hash, scope=scope, trusted=trusted)
        self._s.add(row)
        self._s.flush()
        return _record(row)

    def get(self, key_id: int) -> ApiKeyRecord | None:
        row = self._s.get(ApiKey, key_id)
        return None if row is None else _record(row)

    def by_prefix(self, prefix: str) -> list[ApiKeyRecord]:
        """Keys whose secret starts ``gpa_<prefix>_`` (normally one)."""
        return [_record(r) for r in self._s.scalars(select(ApiKey).where(ApiKey.prefix == prefix))]

    def list_all(self) -> list[ApiKeyRecord]:
        """Every key, by id."""
        return [_record(r) for r in self._s.scalars(select(ApiKey).order_by(ApiKey.id))]

    def revoke(self, key_id: int, at: dt.datetime) -> bool:
        """Mark the key revoked at ``at`` unless it already is. Returns whether it changed;
        ``LookupError`` for an unknown id."""
        row = self._s.get(ApiKey, key_id)
        if row is None:
            raise LookupError(f"no API key with id {key_id}")
        if row.revoked_at is not None:
            return False
        row.revoked_at = at
        self._s.flush()
        return True
