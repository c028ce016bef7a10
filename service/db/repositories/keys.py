"""API keys (stored hashed)."""

from __future__ import annotations

from sqlalchemy.orm import Session


class KeyRepository:
    def __init__(self, session: Session) -> None:
        self._s = session
