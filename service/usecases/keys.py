"""API keys: created with a scope, shown once, stored as SHA-256, revocable.

Scopes nest: ``admin`` may do everything, ``submit`` may submit and read, ``read`` reads
(:mod:`service.core.access.keys`).
"""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass

from service.core.access.keys import (
    SCOPES,
    ApiKeyRecord,
    hash_secret,
    scope_allows,
    secret_matches,
    secret_prefix,
)
from service.db.uow import UnitOfWork
from service.usecases.errors import Conflict, FieldError, Forbidden, Invalid, NotFound, Unauthorized
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
        raise Invalid(
            f"scope must be one of {', '.join(SCOPES)}", fields=[FieldError(("scope",), "unknown scope")]
        )
    if not name.strip():
        raise Invalid("name must not be empty", fields=[FieldError(("name",), "empty")])
    prefix = secrets.token_hex(4)
    secret = f"gpa_{prefix}_{secrets.token_urlsafe(32)}"
    key = uow.keys.add(
        name=name.strip(), prefix=prefix, secret_hash=hash_secret(secret), scope=scope, trusted=trusted
    )
    return CreatedKey(id=key.id, name=key.name, scope=scope, secret=secret)


BUILTIN_PREFIX = "builtin"
"""The prefix of the built-in agent's key (``usecases.benchmarks.builtin_principal``): the
committed measurements are attributed to it, and nobody can authenticate with it."""


def is_builtin(key: ApiKeyRecord) -> bool:
    return key.prefix == BUILTIN_PREFIX


def find_key(uow: UnitOfWork, ident: str) -> ApiKeyRecord:
    """A key by the id ``keys list`` and ``keys create`` print, or by its name (which must
    name exactly one key that is not revoked)."""
    ident = ident.strip()
    if ident.isdigit():
        found = uow.keys.get(int(ident)) if int(ident) < 2**31 else None
        if found is None:
            raise NotFound(f"no API key with id {ident}")
        return found
    named = [k for k in uow.keys.list_all() if k.name == ident and k.revoked_at is None]
    if not named:
        raise NotFound(f"no active API key named {ident!r}")
    if len(named) > 1:
        ids = ", ".join(str(k.id) for k in named)
        raise Conflict(f"{len(named)} active keys are named {ident!r} (ids {ids}): give the id")
    return named[0]


@commits
def revoke_key(uow: UnitOfWork, ident: str | int) -> ApiKeyRecord:
    """Revoke a key, by id or name (again: nothing changes); requests with it get 401 from
    then on. The built-in agent's key is refused: it authenticates nobody, and the committed
    measurements are attributed to it."""
    key = find_key(uow, str(ident))
    if is_builtin(key):
        raise Conflict(
            f"key {key.id} ({key.name}) is the built-in agent the committed measurements are attributed to; "
            "nobody can authenticate with it, so there is nothing to revoke"
        )
    uow.keys.revoke(key.id, dt.datetime.now(dt.UTC))
    return key


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
