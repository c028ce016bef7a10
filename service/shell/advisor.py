"""The four questions the CLI asks, answered in this process against the configured database
or by a running server (``--url``): the same JSON documents as the API's, either way.

In process, the read model reuses the calibrations an earlier run fitted at the same
watermarks (:mod:`service.shell.calibration_cache`), and the database is migrated and seeded
only when it has no schema yet: a second call does no fitting and no writing.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

    from service.settings import Settings


class AdvisorError(Exception):
    """A refusal to show the user: the detail, the fields at fault, and the candidates of an
    ambiguous name."""

    def __init__(
        self, detail: str, fields: Sequence[str] = (), candidates: Sequence[Mapping[str, Any]] = ()
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.fields = tuple(fields)
        self.candidates = tuple(candidates)


class RemoteAdvisor:
    """The API of a running server (``gpu-advisor serve``), over HTTP."""

    def __init__(self, url: str, *, api_key: str | None = None, lang: str = "en") -> None:
        import httpx

        headers = {"Accept-Language": lang}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self.http = httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=120)

    def _answer(self, r: httpx.Response) -> dict[str, Any]:
        if r.status_code < 300:
            return dict(r.json())
        try:
            body = r.json()
        except ValueError:
            raise AdvisorError(f"{r.status_code} from the server: {r.text[:200]}") from None
        fields = [
            f"{'.'.join(str(p) for p in e.get('loc', []))}: {e.get('msg', '')}"
            for e in body.get("errors", [])
        ]
        raise AdvisorError(str(body.get("detail") or body.get("title")), fields, body.get("candidates") or ())

    def estimate(self, body: Mapping[str, Any]) -> dict[str, Any]:
        return self._answer(self.http.post("/v1/estimate", json=dict(body)))

    def recommend(self, body: Mapping[str, Any]) -> dict[str, Any]:
        return self._answer(self.http.post("/v1/recommend", json=dict(body)))

    def compare(self, names: Sequence[str], *, currency: str, workload: str | None) -> dict[str, Any]:
        params: dict[str, Any] = {"gpus": ",".join(names), "currency": currency}
        if workload:
            params["workload"] = workload
        return self._answer(self.http.get("/v1/compare", params=params))

    def gpus(self, query: Mapping[str, Any]) -> dict[str, Any]:
        return self._answer(
            self.http.get("/v1/gpus", params={k: v for k, v in query.items() if v is not None})
        )

    def artifact(self, answer: Mapping[str, Any], *, target: str, rank: int) -> dict[str, Any]:
        """The server's artifact of the stored answer (``GET /v1/recommendations/{id}/artifacts``)."""
        rec_id = answer.get("recommendation_id")
        if not rec_id:
            raise AdvisorError(
                "the server did not store this answer, so it has no artifacts (no recommendation_id)"
            )
        params: dict[str, str | int] = {"target": target, "option": rank}
        return self._answer(self.http.get(f"/v1/recommendations/{rec_id}/artifacts", params=params))


class LocalAdvisor:
    """The use cases, called in this process on the configured database."""

    def __init__(self, settings: Settings, engine: Any, *, lang: str = "en") -> None:
        from service.db.engine import make_session_factory
        from service.db.uow import UnitOfWork
        from service.shell.calibration_cache import FileCalibrationStore
        from service.usecases.read_model import ReadModel

        self.settings = settings
        self.lang = lang
        self.sessions = make_session_factory(engine)
        with UnitOfWork(self.sessions) as uow:
            epoch = uow.stacks.moved_at().isoformat()
        store = FileCalibrationStore(
            settings.database_url,
            min_points=settings.measurements_min_points,
            window=settings.measurement_window,
            epoch=epoch,
        )
        self.store = store
        self.read = ReadModel(
            min_points=settings.measurements_min_points,
            window=settings.measurement_window,
            background=False,
            store=store,
        )

    def fit_note(self) -> str | None:
        """A line for stderr when this call fitted the calibrations (the first call since the
        measurements or the catalog changed: seconds), None when it reused the stored fit."""
        if not self.read.stats.full_fits:
            return None
        kept = f"kept in {self.store.path}" if self.store.saves else "not kept: the cache cannot be written"
        return (
            "fitted the calibrations to this database's measurements (the first call since they "
            f"changed; {kept} for later calls)"
        )

    def _refusal(self, exc: Exception) -> AdvisorError:
        from service.usecases.errors import UseCaseError

        if not isinstance(exc, UseCaseError):
            raise exc
        fields = [f"{'.'.join(str(p) for p in e.path)}: {e.msg}" for e in exc.fields]
        cands = [
            {"slug": c.slug, "name": c.name, "default": c.default} if not isinstance(c, Mapping) else dict(c)
            for c in exc.extra.get("candidates", ())
        ]
        return AdvisorError(exc.detail, fields, cands)

    def _valid(self, model: Any, body: Mapping[str, Any]) -> Any:
        from pydantic import ValidationError

        try:
            return model.model_validate(dict(body))
        except ValidationError as exc:
            fields = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
            raise AdvisorError("the request is not valid", fields) from None

    def estimate(self, body: Mapping[str, Any]) -> dict[str, Any]:
        from service.api.presenters.estimate import estimate_out
        from service.db.uow import UnitOfWork
        from service.schemas.estimate import EstimateRequest
        from service.usecases.estimate import estimate as run_estimate

        req = self._valid(EstimateRequest, body)
        try:
            with UnitOfWork(self.sessions) as uow:
                r = run_estimate(uow, self.read, req.to_core(), req.gpu, now=dt.datetime.now(dt.UTC))
        except Exception as exc:
            raise self._refusal(exc) from None
        out = estimate_out(
            r.estimate,
            warnings=r.warnings,
            as_of=r.as_of,
            data_version=r.data_version,
            estimator_version=r.estimator_version,
        )
        return dict(out.model_dump(mode="json"))

    def recommend(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The answer POST /v1/recommend gives, not stored (no share link from the shell)."""
        from service.api.presenters.recommend import document, localise
        from service.db.uow import UnitOfWork
        from service.schemas.recommend import RecommendRequest
        from service.usecases import recommend as uc

        req = self._valid(RecommendRequest, body)
        try:
            with UnitOfWork(self.sessions) as uow:
                outcome = uc.compute(
                    uow,
                    self.read,
                    req.to_core(),
                    req.asked(),
                    now=dt.datetime.now(dt.UTC),
                    price_stale_days=self.settings.price_stale_days,
                    owner=None,
                )
                doc = {**document(outcome), "asked": req.asked()}
        except Exception as exc:
            raise self._refusal(exc) from None
        return localise(doc, "zh" if self.lang.startswith("zh") else "en")

    def compare(self, names: Sequence[str], *, currency: str, workload: str | None) -> dict[str, Any]:
        from service.api.presenters.compare import compare_out
        from service.db.uow import UnitOfWork
        from service.usecases.compare import compare

        now = dt.datetime.now(dt.UTC)
        try:
            with UnitOfWork(self.sessions) as uow:
                result = compare(
                    uow,
                    self.read,
                    list(names),
                    today=now.date(),
                    stale_days=self.settings.price_stale_days,
                    currency=currency,
                    workload=workload,
                )
                return dict(
                    compare_out(result, as_of=now, data_version=uow.data_version()).model_dump(mode="json")
                )
        except Exception as exc:
            raise self._refusal(exc) from None

    def gpus(self, query: Mapping[str, Any]) -> dict[str, Any]:
        from service.api.presenters.gpus import gpu_out
        from service.core.catalog.records import GpuFilters
        from service.db.uow import UnitOfWork
        from service.usecases import catalog

        min_gib = query.get("min_usable_memory_gib")
        filters = GpuFilters(
            vendor=query.get("vendor"),
            architecture=query.get("architecture"),
            min_usable_memory_bytes=int(min_gib * 2**30) if min_gib else None,
            supports=tuple(query.get("supports") or ()),
            form_factor=query.get("form_factor"),
            nvlink_topology=None,
        )
        try:
            with UnitOfWork(self.sessions) as uow:
                page = catalog.list_gpus(
                    uow, self.read, filters, sort=query.get("sort") or "slug", limit=500, cursor=None
                )
                items = [gpu_out(r).model_dump(mode="json") for r in page.items]
                return {"items": items, "count": len(items), "data_version": uow.data_version()}
        except Exception as exc:
            raise self._refusal(exc) from None

    def artifact(self, answer: Mapping[str, Any], *, target: str, rank: int) -> dict[str, Any]:
        """The artifact of an answer given in this process (not stored): the same pure renderer
        the API's artifacts route uses, with the scheduler names of the current catalog."""
        from service.core.deploy import TARGETS, NotRenderable, UnknownOption, plan_of, render
        from service.db.uow import UnitOfWork
        from service.usecases.deploy import checkpoint_of, hub_id_of, scheduler_names

        if target not in TARGETS:
            raise AdvisorError(f"--emit must be one of: {', '.join(TARGETS)}", [f"emit: {target!r}"])
        with UnitOfWork(self.sessions) as uow:
            records = self.read.snapshot(uow, calibrated=False).catalog.records
        slugs = {str(o["gpu"]["slug"]) for o in answer.get("options") or ()}
        names = {s: scheduler_names(records[s]) for s in slugs if s in records}
        asked = ((answer.get("asked") or {}).get("workload") or {}).get("model")
        try:
            a = render(plan_of(answer, names, hub_id_of(asked), checkpoint_of(asked)), target, rank)
        except (UnknownOption, NotRenderable) as exc:
            raise AdvisorError(
                str(exc), [f"rank: {rank}" if isinstance(exc, UnknownOption) else f"emit: {target}"]
            ) from None
        return {
            "target": a.target,
            "option": a.rank,
            "media_type": a.media_type,
            "filename": a.filename,
            "content": a.content,
            "fill_in": list(a.fill_in),
        }
