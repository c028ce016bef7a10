"""API key rules: nested scopes, the stored hash, the secret's lookup prefix."""

from __future__ import annotations

from service.core.access.keys import SCOPES, hash_secret, scope_allows, secret_matches, secret_prefix


def test_scopes_nest() -> None:
    assert SCOPES == ("read", "submit", "admin")
    assert scope_allows("admin", "submit") and scope_allows("submit", "read") and scope_allows("read", "read")
    assert not scope_allows("read", "submit") and not scope_allows("submit", "admin")


def test_hash_and_prefix() -> None:
    secret = "gpa_0a1b2c3d_" + "x" * 43
    h = hash_secret(secret)
    assert len(h) == 64 and secret_matches(h, secret) and not secret_matches(h, secret + "y")
    assert secret_prefix(secret) == "0a1b2c3d"
    assert secret_prefix("gpa_only") is None and secret_prefix("abc_0a1b2c3d_x") is None
