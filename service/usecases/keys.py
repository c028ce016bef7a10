"""API keys: created with a scope, shown once, stored as SHA-256, revocable.

Scopes nest: ``admin`` may do everything, ``submit`` may submit and read, ``read`` reads
(:mod:`service.core.keys`).
"""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass

from service.core.keys import SCOPES, ApiKeyRecord, hash_secret, scope_allows, secret_matches, secret_prefix
from service.db.uow import UnitOfWork
from service.usecases.errors import FieldError, Forbidden, Invalid, NotFound, Unauthorized
from service.usecases.transaction import commits


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


@commits
def create_key(uow: UnitOfWork, *, name: str, scope: str, trusted: bool = False) -> CreatedKey:
    """A new key; the secret is in the answer and nowhere else."""
    if scope not in SCOPES:
        raise Invalid(f"scope must be one of {', '.join(SCOPES)}", fields=[FieldError(("scope",), "unknown scope")])
    if not name.strip():
        raise Invalid("name must not be empty", fields=[FieldError(("name",), "empty")])
    prefix = secrets.token_hex(4)
    secret = f"gpa_{prefix}_{secrets.token_urlsafe(32)}"
    key = uow.keys.add(name=name.strip(), prefix=prefix, secret_hash=hash_secret(secret), scope=scope, trusted=trusted)
    return CreatedKey(id=key.id, name=key.name, scope=scope, secret=secret)


@commits
def revoke_key(uow: UnitOfWork, key_id: int) -> None:
    """Revoke a key (again: nothing changes); requests with it get 401 from then on."""
    if uow.keys.get(key_id) is None:
        raise NotFound(f"no API key with id {key_id}")
    uow.keys.revoke(key_id, dt.datetime.now(dt.UTC))


def list_keys(uow: UnitOfWork) -> list[ApiKeyRecord]:
    """Every key, by id (hashes only, never secrets)."""
    return uow.keys.list_all()


def authenticate(uow: UnitOfWork, authorization: str | None, required: str) -> Principal:
    """Bearer token -> principal with at least ``required`` scope (401 / 403 otherwise)."""
    if not authorization or not authorization.lower().startswith("bearer "):
        raise Unauthorized("send 'Authorization: Bearer <api key>'", scheme="Bearer")
    secret = authorization[7:].strip()
    prefix = secret_prefix(secret)
    if prefix is None:
        raise Unauthorized("the API key is not valid", scheme="Bearer")
    match = next((k for k in uow.keys.by_prefix(prefix) if secret_matches(k.secret_hash, secret)), None)
    if match is None or match.revoked_at is not None:
        raise Unauthorized("the API key is not valid or was revoked", scheme="Bearer")
    if not scope_allows(match.scope, required):
        raise Forbidden(f"this key has scope {match.scope!r}; this operation needs {required!r}")
    return Principal(key_id=match.id, name=match.name, scope=match.scope, trusted=match.trusted)
