"""Unit of work: one per request (or CLI command). It owns the session and the repositories
over it (``uow.catalog``, ``uow.benchmarks``, ``uow.keys``). Repositories flush; only
:meth:`UnitOfWork.commit` commits -- and only ``service.usecases.transaction.commits`` calls
it, once, at the end of a write use case. A committing write bumps ``data_version`` inside the
same transaction."""

from __future__ import annotations

import datetime as dt
from types import TracebackType

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from service.db.models import DataVersion
from service.db.repositories.benchmark_admin import BenchmarkAdminRepository
from service.db.repositories.benchmark_queries import BenchmarkQueryRepository
from service.db.repositories.benchmarks import BenchmarkRepository
from service.db.repositories.catalog import CatalogRepository
from service.db.repositories.keys import KeyRepository
from service.db.repositories.measurements import MeasurementRepository


class UnitOfWork:
    def __init__(self, factory: sessionmaker[Session]) -> None:
        self._factory = factory
        self.session: Session = factory()
        self._dirty = False
        self.catalog = CatalogRepository(self.session)
        self.benchmarks = BenchmarkRepository(self.session)
        self.benchmark_queries = BenchmarkQueryRepository(self.session)
        self.benchmark_admin = BenchmarkAdminRepository(self.session)
        self.keys = KeyRepository(self.session)
        self.measurements = MeasurementRepository(self.session)

    def __enter__(self) -> UnitOfWork:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def mark_write(self) -> None:
        self._dirty = True

    def bump_data_version(self) -> int:
        """Increment the global counter (row lock on PostgreSQL serialises bumps)."""
        self.session.execute(
            update(DataVersion).where(DataVersion.id == 1).values(
                version=DataVersion.version + 1, updated_at=dt.datetime.now(dt.UTC)
            )
        )
        v = self.session.execute(select(DataVersion.version).where(DataVersion.id == 1)).scalar_one()
        return int(v)

    def commit(self) -> int | None:
        """Commit; if anything was written, bump ``data_version`` first. Returns the new version."""
        version = None
        if self._dirty:
            version = self.bump_data_version()
        self.session.commit()
        self._dirty = False
        return version

    def rollback(self) -> None:
        self.session.rollback()
        self._dirty = False

    def close(self) -> None:
        self.session.close()

    def data_version(self) -> int:
        return int(self.session.execute(select(DataVersion.version).where(DataVersion.id == 1)).scalar_one())
