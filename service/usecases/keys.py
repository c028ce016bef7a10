"""API keys: created with a scope, shown once, stored as SHA-256, revocable.

Scopes nest: ``admin`` may do everything, ``submit`` may submit and read, ``read`` reads.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from dataclasses import dataclass

from sqlalchemy import select

from service.db.models import ApiKey
from service.db.uow import UnitOfWork
from service.usecases.errors import FieldError, Forbidden, Invalid, NotFound, Unauthorized

SCOPES: tuple[str, ...] = ("read", "submit", "admin")
_RANK = {s: i for i, s in enumerate(SCOPES)}


@dataclass(frozen=True)
class Principal:
    key_id: int
    name: str
    scope: str
    trusted: bool


@dataclass(frozen=True)
class CreatedKey:
    id: int
    name: str
    scope: str
    secret: str


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def create_key(uow: UnitOfWork, *, name: str, scope: str, trusted: bool = False) -> CreatedKey:
    if scope not in SCOPES:
        raise Invalid(f"scope must be one of {', '.join(SCOPES)}", fields=[FieldError(("scope",), "unknown scope")])
    if not name.strip():
        raise Invalid("name must not be empty", fields=[FieldError(("name",), "empty")])
    prefix = secrets.token_hex(4)
    secret = f"gpa_{prefix}_{secrets.token_urlsafe(32)}"
    row = ApiKey(name=name.strip(), prefix=prefix, secret_hash=_hash(secret), scope=scope, trusted=trusted)
    uow.session.add(row)
    uow.session.flush()
    uow.mark_write()
    uow.commit()
    return CreatedKey(id=row.id, name=row.name, scope=scope, secret=secret)


def revoke_key(uow: UnitOfWork, key_id: int) -> None:
    row = uow.session.get(ApiKey, key_id)
    if row is None:
        raise NotFound(f"no API key with id {key_id}")
    if row.revoked_at is None:
        row.revoked_at = dt.datetime.now(dt.UTC)
        uow.mark_write()
    uow.commit()


def list_keys(uow: UnitOfWork) -> list[ApiKey]:
    return list(uow.session.scalars(select(ApiKey).order_by(ApiKey.id)))


def authenticate(uow: UnitOfWork, authorization: str | None, required: str) -> Principal:
    """Bearer token -> principal with at least ``required`` scope (401 / 403 otherwise)."""
    if not authorization or not authorization.lower().startswith("bearer "):
        raise Unauthorized("send 'Authorization: Bearer <api key>'", scheme="Bearer")
    secret = authorization[7:].strip()
    parts = secret.split("_")
    if len(parts) < 3 or parts[0] != "gpa":
        raise Unauthorized("the API key is not valid", scheme="Bearer")
    row = uow.session.scalars(select(ApiKey).where(ApiKey.prefix == parts[1])).all()
    match = next((r for r in row if secrets.compare_digest(r.secret_hash, _hash(secret))), None)
    if match is None or match.revoked_at is not None:
        raise Unauthorized("the API key is not valid or was revoked", scheme="Bearer")
    if _RANK[match.scope] < _RANK[required]:
        raise Forbidden(f"this key has scope {match.scope!r}; this operation needs {required!r}")
    return Principal(key_id=match.id, name=match.name, scope=match.scope, trusted=match.trusted)
