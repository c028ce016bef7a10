"""Benchmark runs, results, fingerprints, pending GPUs, admin alerts and idempotency records."""

from __future__ import annotations

from sqlalchemy.orm import Session


class BenchmarkRepository:
    def __init__(self, session: Session) -> None:
        self._s = session
