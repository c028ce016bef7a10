"""Start-up work shared by the CLI and tests: migrate, then upsert the shipped catalog and
load committed measurements, all under one PostgreSQL advisory lock."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Engine

from service.catalog.loader import load_shipped
from service.db.engine import make_session_factory
from service.db.migrate import migrate_and_seed
from service.db.uow import UnitOfWork
from service.measurement_files import seed_measurements
from service.settings import Settings
from service.usecases.catalog import SeedReport, upsert_catalog

SeedHook = Callable[[Engine, Settings], None]
# Later stages (measurements) register loaders here so bootstrap stays one call.
EXTRA_SEEDERS: list[SeedHook] = [seed_measurements]


def seed_catalog(engine: Engine) -> SeedReport:
    shipped = load_shipped()
    with UnitOfWork(make_session_factory(engine)) as uow:
        return upsert_catalog(
            uow, shipped.gpus, catalog_version=shipped.version, prices=shipped.prices, fx_rates=shipped.fx_rates
        )


def bootstrap(engine: Engine, settings: Settings, *, log: Callable[[str], None] = lambda _m: None) -> None:
    def seed() -> None:
        if settings.seed_catalog:
            r = seed_catalog(engine)
            log(
                f"catalog: {r.created} created, {r.updated} updated, {r.unchanged} unchanged, "
                f"{r.kept_override} with admin overrides kept, {r.prices_upserted} prices, {r.fx_upserted} FX rates"
            )
        for hook in EXTRA_SEEDERS:
            hook(engine, settings)

    migrate_and_seed(engine, seed)
