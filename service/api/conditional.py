"""Conditional GETs: ``If-None-Match`` against a response's ETag (RFC 9110 13.1.2), one rule
for every route that answers 304."""

from __future__ import annotations


def _opaque(tag: str) -> str:
    """The quoted opaque tag without a weak prefix: If-None-Match compares weakly."""
    tag = tag.strip()
    return tag[2:] if tag[:2] in ("W/", "w/") else tag


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    """Whether the header names this ETag: ``*``, or one of its comma-separated tags equal to it
    under weak comparison."""
    if not if_none_match:
        return False
    if if_none_match.strip() == "*":
        return True
    mine = _opaque(etag)
    return any(_opaque(t) == mine for t in if_none_match.split(","))
