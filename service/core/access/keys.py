"""API keys as the core sees them: scopes, the stored hash, the stored record.

Scopes nest: ``admin`` may do everything, ``submit`` may submit and read, ``read`` reads.
Secrets look like ``gpa_<prefix>_<random>``; only a SHA-256 of the whole secret is stored
(secrets carry 256 random bits, so a slow hash adds nothing) and ``prefix`` finds the row.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
from dataclasses import dataclass

SCOPES: tuple[str, ...] = ("read", "submit", "admin")
_RANK = {s: i for i, s in enumerate(SCOPES)}
SECRET_MARK = "gpa"


def scope_allows(have: str, need: str) -> bool:
    """Whether a key of scope ``have`` may do what needs scope ``need``."""
    return _RANK[have] >= _RANK[need]


def hash_secret(secret: str) -> str:
    """Hex SHA-256 of the secret, as stored."""
    return hashlib.sha256(secret.encode()).hexdigest()


def secret_matches(stored_hash: str, secret: str) -> bool:
    """Constant-time comparison of a stored hash with the hash of ``secret``."""
    return hmac.compare_digest(stored_hash, hash_secret(secret))


def secret_prefix(secret: str) -> str | None:
    """The lookup prefix of a well-formed secret (``gpa_<prefix>_...``), else ``None``."""
    parts = secret.split("_")
    if len(parts) < 3 or parts[0] != SECRET_MARK:
        return None
    return parts[1]


@dataclass(frozen=True, slots=True)
class ApiKeyRecord:
    """A stored API key (never the secret)."""

    id: int
    name: str
    prefix: str
    secret_hash: str
    scope: str
    trusted: bool
    created_at: dt.datetime
    revoked_at: dt.datetime | None = None
