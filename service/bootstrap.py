"""Start-up work shared by the CLI and tests: migrate, then upsert the shipped catalog and
load committed measurements, all under one PostgreSQL advisory lock."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sqlalchemy import Engine

from service.api import validation
from service.catalog.loader import load_shipped, shipped_prices
from service.db.engine import make_session_factory
from service.db.migrate import migrate_and_seed
from service.db.uow import UnitOfWork
from service.measurement_files import seed_measurements
from service.schemas.gpus import FxRateIn, PriceIn
from service.settings import Settings
from service.usecases.catalog import SeedReport, upsert_catalog
from service.usecases.errors import Invalid
from service.usecases.read_model import rebuild_stacks

SeedHook = Callable[[Engine, Settings], None]
# Later stages (measurements) register loaders here so bootstrap stays one call.
EXTRA_SEEDERS: list[SeedHook] = [seed_measurements]


def _shipped_document(raw: Mapping[str, Any]) -> dict[str, Any]:
    try:
        return validation.gpu_document(raw)
    except Invalid as exc:
        raise exc.at("catalog", str(raw.get("slug"))) from None


def upsert_shipped(
    uow: UnitOfWork,
    gpus: Iterable[Mapping[str, Any]],
    *,
    catalog_version: str,
    prices: Iterable[Mapping[str, Any]] = (),
    fx_rates: Iterable[Mapping[str, Any]] = (),
) -> SeedReport:
    """Check shipped GPU documents, price rows (each with its ``gpu_slug``) and FX rates
    against their schemas, then upsert them (``usecases.catalog.upsert_catalog``, which gets
    the document validator for the effective documents it computes)."""
    return upsert_catalog(
        uow,
        [_shipped_document(d) for d in gpus],
        catalog_version=catalog_version,
        validate=validation.gpu_document,
        prices=[
            (
                str(p["gpu_slug"]),
                PriceIn.model_validate({k: v for k, v in p.items() if k != "gpu_slug"}).to_core(),
            )
            for p in prices
        ],
        fx_rates=[FxRateIn.model_validate(f).to_core() for f in fx_rates],
    )


def seed_catalog(engine: Engine) -> SeedReport:
    shipped = load_shipped()
    with UnitOfWork(make_session_factory(engine)) as uow:
        return upsert_shipped(
            uow,
            shipped.gpus,
            catalog_version=shipped.version,
            prices=shipped_prices(shipped),
            fx_rates=shipped.fx_rates,
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
        with UnitOfWork(make_session_factory(engine), stack_window=settings.measurement_window) as uow:
            n = rebuild_stacks(uow)
        if n:
            log(f"measurements: {n} stack summaries rebuilt from stored results")

    migrate_and_seed(engine, seed)
