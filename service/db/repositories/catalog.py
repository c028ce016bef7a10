"""GPUs, aliases, prices and FX rates."""

from __future__ import annotations

from sqlalchemy.orm import Session


class CatalogRepository:
    def __init__(self, session: Session) -> None:
        self._s = session
