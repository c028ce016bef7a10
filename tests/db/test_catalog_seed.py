"""Catalog upsert semantics on the real database: idempotent, corrected figures propagate,
admin overrides and deletes survive upserts, replicas seeding together do not race."""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, func, select

from service.api.presenters.gpus import gpu_out
from service.api.validation import gpu_document as validate_gpu_document
from service.bootstrap import bootstrap, upsert_shipped
from service.catalog.loader import load_shipped, shipped_prices
from service.catalog.skypilot_snapshot import build_snapshot
from service.db.engine import make_engine, make_session_factory
from service.db.models import Gpu, GpuAlias, Price
from service.db.uow import UnitOfWork
from service.settings import Settings
from service.usecases import catalog
from tests.conftest import fresh_database_url


@pytest.fixture()
def fresh(tmp_path: Path) -> Iterator[Engine]:
    for url in fresh_database_url(tmp_path, "seed"):
        eng = make_engine(url)
        bootstrap(eng, Settings(database_url=url, seed_measurements_dir=None))
        yield eng
        eng.dispose()


def _uow(engine: Engine) -> UnitOfWork:
    return UnitOfWork(make_session_factory(engine))


def _docs() -> list[dict[str, Any]]:
    return copy.deepcopy(load_shipped().gpus)


def test_reseed_is_idempotent_and_does_not_bump_data_version(fresh: Engine) -> None:
    with _uow(fresh) as uow:
        v0 = uow.data_version()
        n_alias = uow.session.scalar(select(func.count()).select_from(GpuAlias))
    shipped = load_shipped()
    with _uow(fresh) as uow:
        r = upsert_shipped(
            uow,
            shipped.gpus,
            catalog_version=shipped.version,
            prices=shipped.prices,
            fx_rates=shipped.fx_rates,
        )
    assert (r.created, r.updated, r.prices_upserted, r.fx_upserted) == (0, 0, 0, 0)
    assert r.unchanged == len(shipped.gpus)
    with _uow(fresh) as uow:
        assert uow.data_version() == v0
        assert uow.session.scalar(select(func.count()).select_from(GpuAlias)) == n_alias


def test_seed_upserts_every_shipped_price_row_and_a_restart_changes_nothing(fresh: Engine) -> None:
    shipped = load_shipped()
    cloud = build_snapshot(shipped.gpus).prices
    expected = {
        (p["gpu_slug"], p["provider"], p["region"], p["instance_type"], p["pricing_model"]) for p in cloud
    }
    assert len(cloud) > 600  # the SkyPilot snapshot, not just prices.json's handful
    with _uow(fresh) as uow:
        v0 = uow.data_version()
        stored = uow.catalog.prices()
        n0 = uow.session.scalar(select(func.count()).select_from(Price))
    keys = {(p.gpu_slug, p.provider, p.region, p.instance_type, p.pricing_model) for p in stored}
    assert expected <= keys
    assert n0 == len(shipped_prices(shipped))  # prices.json + purchase + SkyPilot, no duplicates
    by_model = {p.pricing_model for p in stored if p.gpu_slug == "nvidia-rtx-4090"}
    assert "purchase" in by_model and "on_demand" in by_model
    l40 = [p for p in stored if p.gpu_slug == "nvidia-l40" and p.pricing_model == "on_demand"]
    assert {p.provider for p in l40} == {"hyperstack", "runpod"}
    assert not [p for p in stored if p.gpu_slug == "nvidia-l20"]  # China-market: no cloud lists it
    # a restart: bootstrap again, nothing changes, the catalog watermark stays put
    bootstrap(
        fresh,
        Settings(
            database_url=str(fresh.url.render_as_string(hide_password=False)), seed_measurements_dir=None
        ),
    )
    with _uow(fresh) as uow:
        assert uow.data_version() == v0
        assert uow.session.scalar(select(func.count()).select_from(Price)) == n0


def test_seed_never_clobbers_an_admin_price_row(fresh: Engine) -> None:
    shipped = load_shipped()
    row = next(
        p for p in shipped_prices(shipped) if p["gpu_slug"] == "nvidia-l40" and p["provider"] == "runpod"
    )
    from service.schemas.gpus import PriceIn

    entry = PriceIn.model_validate(
        {**{k: v for k, v in row.items() if k != "gpu_slug"}, "amount": "0.01"}
    ).to_core()
    with _uow(fresh) as uow:
        catalog.add_price(uow, "nvidia-l40", entry)  # the admin's row has the shipped row's key
    with _uow(fresh) as uow:
        r = upsert_shipped(uow, shipped.gpus, catalog_version=shipped.version, prices=shipped_prices(shipped))
        assert r.prices_upserted == 0
    with _uow(fresh) as uow:
        mine = [
            p
            for p in uow.catalog.prices("nvidia-l40")
            if p.provider == "runpod"
            and p.source == row["source"]
            and p.pricing_model == row["pricing_model"]
            and p.region == row["region"]
        ]
        assert [str(p.amount.normalize()) for p in mine] == ["0.01"]


def test_corrected_figure_reaches_db_but_admin_override_survives(fresh: Engine) -> None:
    cache = catalog.ReadModel()
    with _uow(fresh) as uow:
        view = catalog.resolve_gpu(uow, cache, "nvidia-l4")
        catalog.patch_gpu(
            uow, "nvidia-l4", {"power": {"tdp_w": 70.5}}, view.etag, validate=validate_gpu_document
        )
    docs = _docs()
    l4 = next(d for d in docs if d["slug"] == "nvidia-l4")
    l4["power"]["tdp_w"] = 99.0  # upstream "correction" of the overridden field
    l4["memory"]["bandwidth_gb_per_s"] = 301.0  # and of a field nobody overrode
    with _uow(fresh) as uow:
        r = upsert_shipped(uow, docs, catalog_version="v-next")
        assert r.kept_override == 1 and r.updated == 1
    with _uow(fresh) as uow:
        out = gpu_out(catalog.resolve_gpu(uow, cache, "nvidia-l4").record)
        assert out.power.tdp_w == 70.5
        assert out.memory.bandwidth_gb_per_s == 301.0
        assert out.overridden_fields == ["power.tdp_w"]
        assert out.catalog_version == "v-next"


def test_admin_delete_survives_upsert(fresh: Engine) -> None:
    cache = catalog.ReadModel()
    with _uow(fresh) as uow:
        view = catalog.resolve_gpu(uow, cache, "nvidia-t4")
        catalog.delete_gpu(uow, "nvidia-t4", view.etag)
    shipped = load_shipped()
    with _uow(fresh) as uow:
        upsert_shipped(uow, shipped.gpus, catalog_version="again")
    with _uow(fresh) as uow:
        row = uow.session.scalars(select(Gpu).where(Gpu.slug == "nvidia-t4")).one()
        assert row.deleted
        with pytest.raises(catalog.NotFound):
            catalog.resolve_gpu(uow, cache, "T4")


def _boot(e: Engine, url: str, errors: list[BaseException]) -> None:
    try:
        bootstrap(e, Settings(database_url=url, seed_measurements_dir=None))
    except BaseException as exc:  # collected and asserted by the caller
        errors.append(exc)


def test_concurrent_bootstrap_does_not_race(tmp_path: Path) -> None:
    for url in fresh_database_url(tmp_path, "race"):
        errors: list[BaseException] = []
        engines = [make_engine(url) for _ in range(3)]
        threads = [threading.Thread(target=_boot, args=(e, url, errors)) for e in engines]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not errors, errors
        with _uow(engines[0]) as uow:
            n = uow.session.scalar(select(func.count()).select_from(Gpu))
            assert n == len(load_shipped().gpus)
        for e in engines:
            e.dispose()
