"""Benchmark routes: submission (+ dry run), queries, the latest-measured view, the workload
vocabulary, coverage, and the admin queue (alerts, pending GPUs, review, retraction).

HTTP <-> use case only: a request becomes a use-case call (a validated run becomes a core
:class:`~service.core.evidence.submission.RunSubmission`), the answer becomes a wire model
(:mod:`service.api.presenters.benchmarks`). Query filters with dynamic names
(``param.<name>``, ``fp.<field>``) are collected from the query string and handed over as
plain mappings; the result filters are declared once, for the public and the admin listing."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, Path, Query, Request, Response

from service.api.answers import DATA_VERSION_HEADER, answer
from service.api.bodies import body_schema, json_body
from service.api.conditional import etag_matches
from service.api.deps import AdminAuth, ReadAuth, ReadDep, ReadUowDep, SettingsDep, SubmitAuth, UowDep
from service.api.offload import answer_from
from service.api.presenters import benchmarks as present
from service.api.presenters.measurement_plan import measurement_plan_out
from service.api.routing import QUERY_PREFIXES, UnitOfWorkRoute
from service.core.access.keys import scope_allows
from service.core.recommend.search import RecommendQuestion
from service.schemas.benchmarks import (
    MAX_RESULTS_PER_RUN,
    RUN_ID_PATTERN,
    AlertList,
    AlertOut,
    BenchmarkRunAccepted,
    BenchmarkRunIn,
    CoverageOut,
    MapPendingIn,
    MeasurementsOut,
    PendingGpuList,
    PendingGpuOut,
    ReasonIn,
    ResultList,
    ResultOut,
    RetractOut,
    ReviewOut,
    RunList,
    RunOut,
    WorkloadList,
    WorkloadName,
    WorkloadOut,
)
from service.schemas.common import (
    Cursor,
    Id32,
    Id64,
    NameStr,
    PageLimit,
    PositionCursor,
    Problem,
    SafeStr,
    SaneDatetime,
    safe_text,
)
from service.schemas.gpus import AmbiguousGpu
from service.schemas.measurement_plan import MeasurementPlanOut
from service.schemas.recommend import RecommendRequest
from service.settings import Settings
from service.usecases import benchmark_admin, benchmark_queries, benchmarks
from service.usecases import measurement_plan as uc_plan
from service.usecases.benchmark_queries import ResultFilters
from service.usecases.errors import FieldError, Invalid, PayloadTooLarge

router = APIRouter(prefix="/v1", tags=["benchmarks"], route_class=UnitOfWorkRoute)

PROBLEM = {"model": Problem}
FILTER_HELP = (
    "Dynamic filters: `param.<name>=<value>` (needs `workload`; values are canonicalised like "
    "submissions, so `param.batch_size=8` matches 8 and 8.0) and `fp.<field>=<value>` for any "
    "fingerprint field (e.g. `fp.torch_version=2.5.1`, `fp.tf32_matmul=false`)."
)


def _result_count_guard(request: Request, data: Any) -> None:
    """413 for a run with more results than allowed, before the body is validated (a length
    check on the decoded JSON)."""
    settings: Settings = request.app.state.settings
    results = data.get("results") if isinstance(data, dict) else None
    limit = min(settings.max_results_per_run, MAX_RESULTS_PER_RUN)
    if isinstance(results, list) and len(results) > limit:
        raise PayloadTooLarge(
            f"a run may carry at most {limit} results; this one has {len(results)}: split it",
            max_results_per_run=limit,
        )


RunBody = Annotated[BenchmarkRunIn, Depends(json_body(BenchmarkRunIn, check=_result_count_guard))]
"""A run, decoded and validated off the event loop when large (``service.api.bodies``)."""
IdempotencyKey = Annotated[
    str | None,
    Header(
        pattern=RUN_ID_PATTERN,
        description="optional; when given it must equal the body's run_id (the run id is the idempotency key): "
        "a different value is a 422",
    ),
]
RunIdPath = Annotated[SafeStr, Path(max_length=128, description="the run's run_id")]

DYNAMIC_NAME_MAX = 64
DYNAMIC_FILTERS = {QUERY_PREFIXES: ["param.", "fp."]}
"""Routes that read ``param.<name>`` / ``fp.<field>`` filters say so (any other unknown query
parameter is refused: :func:`service.api.routing.known_query`)."""
DYNAMIC_VALUE_MAX = 200


def _dynamic(request: Request, prefix: str) -> dict[str, str]:
    """The ``param.<name>`` / ``fp.<field>`` filters, bounded like declared ones: a name of at
    most 64 and a value of at most 200 characters, NUL-free valid UTF-8 (else a 422 naming it)."""
    out: dict[str, str] = {}
    for k, v in request.query_params.items():
        if not k.startswith(prefix) or len(k) == len(prefix):
            continue
        problem = None
        try:
            safe_text(k)
            safe_text(v)
        except ValueError as exc:
            problem = str(exc)
        if problem is None and len(k) - len(prefix) > DYNAMIC_NAME_MAX:
            problem = f"a filter name has at most {DYNAMIC_NAME_MAX} characters"
        if problem is None and len(v) > DYNAMIC_VALUE_MAX:
            problem = f"a filter value has at most {DYNAMIC_VALUE_MAX} characters"
        if problem is not None:
            raise Invalid(
                f"query parameter {k!r}: {problem}", fields=[FieldError((k,), problem, location="query")]
            )
        out[k[len(prefix) :]] = v
    return out


def _page_size(limit: int | None, settings: Settings) -> int:
    return min(limit or settings.page_size_default, settings.page_size_max)


def _json(model: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """An answer whose body states its data version."""
    return answer(model, model.data_version, status_code=status, headers=headers)


@dataclass(frozen=True, slots=True)
class ResultListing:
    """A result listing request: its filters, page size and cursor."""

    filters: ResultFilters
    limit: int
    cursor: str | None


def _result_listing(*, include_retracted_default: bool) -> Callable[..., ResultListing]:
    """The result filters, declared once; the public listing hides retracted results unless
    asked, the admin listing shows them unless told not to."""

    def listing(
        request: Request,
        settings: SettingsDep,
        gpu: Annotated[NameStr | None, Query(max_length=200, description="slug, alias or PCI id")] = None,
        pending_gpu_id: Annotated[
            Id32 | None, Query(description="results of a pending (unmapped) GPU")
        ] = None,
        workload: Annotated[WorkloadName | None, Query()] = None,
        status: Annotated[Literal["ok", "oom", "error"] | None, Query()] = None,
        quarantined: Annotated[bool | None, Query()] = None,
        agent: Annotated[Id32 | None, Query(description="API key id of the submitting agent")] = None,
        host: Annotated[SafeStr | None, Query(max_length=200)] = None,
        since: Annotated[SaneDatetime | None, Query(description="measured at or after (ISO 8601)")] = None,
        run_id: Annotated[SafeStr | None, Query(max_length=128)] = None,
        fingerprint_hash: Annotated[SafeStr | None, Query(max_length=16)] = None,
        include_retracted: bool = include_retracted_default,
        limit: Annotated[PageLimit | None, Query(ge=1, le=10_000)] = None,
        cursor: Annotated[Cursor | None, Query()] = None,
    ) -> ResultListing:
        filters = ResultFilters(
            gpu=gpu,
            pending_gpu_id=pending_gpu_id,
            workload=workload,
            status=status,
            quarantined=quarantined,
            agent=agent,
            host=host,
            since=since,
            run_id=run_id,
            fingerprint_hash=fingerprint_hash,
            include_retracted=include_retracted,
            params=_dynamic(request, "param."),
            fingerprint=_dynamic(request, "fp."),
        )
        return ResultListing(filters=filters, limit=_page_size(limit, settings), cursor=cursor)

    return listing


PublicResultListing = Annotated[ResultListing, Depends(_result_listing(include_retracted_default=False))]
AdminResultListing = Annotated[ResultListing, Depends(_result_listing(include_retracted_default=True))]


# ---- submission ----------------------------------------------------------------------------------


@router.post(
    "/benchmark-runs",
    status_code=201,
    response_model=BenchmarkRunAccepted,
    operation_id="submitBenchmarkRun",
    openapi_extra=body_schema("BenchmarkRunIn"),
    summary="Submit one benchmark run (scope submit); idempotent by run_id",
    description=(
        "Stores the run and its results in one transaction, committed before the answer. 201: stored "
        "(state `accepted`, or `pending` for a GPU the catalog does not know). 200: the same run_id with the "
        "same body was stored before -- the stored answer (`Idempotent-Replayed: true`). Results are kept even "
        "when quarantined (above the catalog peak, above usable memory, statistical outlier); only schema and "
        "unit errors are refused (422, every error's `loc`)."
    ),
    responses={
        200: {"model": BenchmarkRunAccepted, "description": "replay of a stored run (same run_id and body)"},
        409: {
            **PROBLEM,
            "description": "the run_id was stored with a different body, or by another API key (run ids are global)",
        },
        413: {**PROBLEM, "description": "body over the size limit, or more results than allowed per run"},
    },
)
def submit_run(
    principal: SubmitAuth,
    body: RunBody,
    uow: UowDep,
    cache: ReadDep,
    settings: SettingsDep,
    idempotency_key: IdempotencyKey = None,
) -> Response:
    out = benchmarks.submit_run(
        uow,
        cache,
        principal,
        body.to_core(),
        policy=settings.outlier_policy(),
        max_results=settings.max_results_per_run,
        idempotency_key=idempotency_key,
    )
    version = uow.data_version()  # committed by now
    headers = {"Location": f"/v1/benchmark-runs/{body.run_id}"}
    if out.replayed:
        headers["Idempotent-Replayed"] = "true"
    return answer(
        present.submission(out.answer, version),
        version,
        status_code=201 if out.stored else 200,
        headers=headers,
    )


@router.post(
    "/benchmark-runs/validate",
    response_model=BenchmarkRunAccepted,
    operation_id="validateBenchmarkRun",
    openapi_extra=body_schema("BenchmarkRunIn"),
    summary="Dry run: the same checks as a submission, nothing written",
    responses={
        409: {
            **PROBLEM,
            "description": "the run_id was stored with a different body, or by another API key (run ids are global)",
        },
        413: PROBLEM,
    },
)
def validate_run(
    principal: SubmitAuth,
    body: RunBody,
    uow: ReadUowDep,
    cache: ReadDep,
    settings: SettingsDep,
    idempotency_key: IdempotencyKey = None,
) -> Response:
    out = benchmarks.validate_run(
        uow,
        cache,
        principal,
        body.to_core(),
        policy=settings.outlier_policy(),
        max_results=settings.max_results_per_run,
        idempotency_key=idempotency_key,
    )
    version = uow.data_version()
    return answer(present.submission(out.answer, version), version)


# ---- queries ---------------------------------------------------------------------------------------


@router.get(
    "/benchmark-runs/{run_id}",
    response_model=RunOut,
    operation_id="getBenchmarkRun",
    summary="A stored run with its current result states",
    responses={404: PROBLEM},
)
def get_run(
    run_id: RunIdPath,
    uow: UowDep,
    _auth: ReadAuth,
    include_results: Annotated[bool, Query(description="false: counts only")] = True,
) -> Response:
    return _json(present.run_out(benchmark_queries.get_run(uow, run_id, include_results=include_results)))


@router.get(
    "/benchmark-results",
    response_model=ResultList,
    operation_id="listBenchmarkResults",
    openapi_extra=DYNAMIC_FILTERS,
    summary="Stored results, newest first, with filters and cursor pagination",
    description=FILTER_HELP,
    responses={300: {"model": AmbiguousGpu}, 404: PROBLEM},
)
def list_results(uow: UowDep, cache: ReadDep, _auth: ReadAuth, listing: PublicResultListing) -> Response:
    out = benchmark_queries.list_results(
        uow, cache, listing.filters, limit=listing.limit, cursor=listing.cursor
    )
    return _json(present.result_list(out))


@router.get(
    "/benchmark-results/{result_id}",
    response_model=ResultOut,
    operation_id="getBenchmarkResult",
    summary="One stored result",
    responses={404: PROBLEM},
)
def get_result(result_id: Annotated[Id64, Path()], uow: UowDep, _auth: ReadAuth) -> Response:
    out = present.result_out(benchmark_queries.get_result(uow, result_id))
    return answer(out, uow.data_version())


@router.get(
    "/gpus/{ident}/measurements",
    response_model=MeasurementsOut,
    operation_id="getGpuMeasurements",
    openapi_extra=DYNAMIC_FILTERS,
    summary="Latest measured figures of a GPU per (workload, canonical parameters) cell",
    description=(
        "Per cell: the newest fingerprint with at least k usable results (else the best-populated one, "
        "flagged `thin`); median and p10-p90 of every metric and of peak memory, count, newest date, host "
        "count, OOM counts, and whether it counts as `measured` (>= 2 hosts or a trusted agent). "
        + FILTER_HELP
    ),
    responses={300: {"model": AmbiguousGpu}, 404: PROBLEM},
)
async def gpu_measurements(
    ident: Annotated[NameStr, Path(max_length=200)],
    request: Request,
    uow: UowDep,
    cache: ReadDep,
    settings: SettingsDep,
    _auth: ReadAuth,
    workload: Annotated[WorkloadName | None, Query()] = None,
    fingerprint_hash: Annotated[SafeStr | None, Query(max_length=16, description="pin one stack")] = None,
    min_points: Annotated[int | None, Query(ge=1, le=1000, description="k; default from settings")] = None,
    limit: Annotated[PageLimit, Query(ge=1, le=1000, description="cells per page")] = 500,
    cursor: Annotated[PositionCursor | None, Query()] = None,
) -> Response:
    params, fingerprint = _dynamic(request, "param."), _dynamic(request, "fp.")
    out = await answer_from(
        uow,
        cache,
        lambda: benchmark_queries.measurements(
            uow,
            cache,
            ident,
            min_points=min_points or settings.measurements_min_points,
            workload=workload,
            params=params,
            fingerprint=fingerprint,
            fingerprint_hash=fingerprint_hash,
            limit=limit,
            cursor=cursor,
        ),
        calibrated=False,
    )
    return answer(present.measurements_json(out), out.data_version)


@router.get(
    "/workloads",
    response_model=WorkloadList,
    operation_id="listWorkloads",
    summary="The benchmark vocabulary",
)
async def list_workloads(_auth: ReadAuth) -> WorkloadList:
    return present.workload_list(benchmark_queries.workloads())


@router.get(
    "/workloads/{name}",
    response_model=WorkloadOut,
    operation_id="getWorkload",
    summary="One workload definition with its hash",
    responses={404: PROBLEM},
)
async def get_workload(name: Annotated[SafeStr, Path(max_length=64)], _auth: ReadAuth) -> WorkloadOut:
    return present.workload_out(benchmark_queries.workload(name))


@router.get(
    "/coverage",
    response_model=CoverageOut,
    operation_id="getCoverage",
    summary="GPU x workload: result counts, newest date, empty cells",
)
def coverage(uow: UowDep, _auth: ReadAuth) -> Response:
    return _json(present.coverage(benchmark_queries.coverage(uow)))


def _question_of(doc: Mapping[str, Any]) -> RecommendQuestion:
    """A stored recommendation's request as the core question (``ValueError`` when it no longer
    parses: pydantic's ValidationError is one)."""
    return RecommendRequest.model_validate(doc).to_core()


@router.get(
    "/measurement-plan",
    response_model=MeasurementPlanOut,
    operation_id="getMeasurementPlan",
    summary="Agents: the (GPU, workload, configuration) cells to measure next, each with why",
    description=(
        "Ranks the cells whose measurement would most narrow the bands of recent stored recommendations (the job "
        "as asked, on each of the first 5 GPUs an answer offered: its band now and once the exact cell is "
        "measured), then cells gone stale (last measured with an older suite, or an older engine version than "
        "one measured since). Cells that narrow come first, most narrowing first; a cell with neither reason is "
        "not listed. Needs the submit scope (agent keys). `gpu` takes a slug, alias or PCI device id (an agent "
        "passes its own), every GPU the name stands for."
    ),
    responses={
        304: {"description": "not modified (If-None-Match matched the ETag)"},
        404: {"model": Problem, "description": "`gpu` names no catalog GPU (close matches given)"},
    },
)
async def measurement_plan(
    uow: UowDep,
    read: ReadDep,
    caller: SubmitAuth,
    gpu: Annotated[NameStr | None, Query(max_length=200, description="slug, alias or PCI device id")] = None,
    workload: Annotated[WorkloadName | None, Query()] = None,
    since_days: Annotated[
        int, Query(ge=1, le=365, description="stored recommendations of this many days are the questions")
    ] = 30,
    limit: Annotated[PageLimit, Query(ge=1, le=500, description="cells per page")] = 50,
    cursor: Annotated[PositionCursor | None, Query()] = None,
    if_none_match: Annotated[str | None, Header()] = None,
) -> Response:
    now = dt.datetime.now(dt.UTC)
    plan = await answer_from(
        uow,
        read,
        lambda: uc_plan.measurement_plan(
            uow,
            read,
            _question_of,
            now=now,
            since_days=since_days,
            gpu=gpu,
            workload=workload,
            limit=limit,
            cursor=cursor,
            reader=caller.key_id,
            admin=scope_allows(caller.scope, "admin"),
        ),
        queries=True,
    )
    body = json.dumps(
        measurement_plan_out(plan, since_days).model_dump(mode="json"),
        ensure_ascii=False,
        allow_nan=False,
        separators=(",", ":"),
    ).encode()
    etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    if etag_matches(if_none_match, etag):
        return Response(status_code=304, headers={"ETag": etag, DATA_VERSION_HEADER: plan.data_version})
    return answer(body, plan.data_version, headers={"ETag": etag})


# ---- admin ---------------------------------------------------------------------------------------

ADMIN_TAGS: list[str | Any] = ["admin: benchmarks"]


@router.get(
    "/admin/alerts",
    response_model=AlertList,
    operation_id="listAdminAlerts",
    summary="Admin: alerts (quarantined results, outliers, unknown GPUs), newest first",
    tags=ADMIN_TAGS,
)
def list_alerts(
    uow: UowDep,
    settings: SettingsDep,
    _auth: AdminAuth,
    kind: Annotated[
        Literal[
            "above_catalog_peak", "above_usable_memory", "implausible", "statistical_outlier", "pending_gpu"
        ]
        | None,
        Query(),
    ] = None,
    acknowledged: Annotated[bool | None, Query()] = None,
    limit: Annotated[PageLimit | None, Query(ge=1, le=1000)] = None,
    cursor: Annotated[Cursor | None, Query()] = None,
) -> Response:
    out = benchmark_admin.list_alerts(
        uow, kind=kind, acknowledged=acknowledged, limit=_page_size(limit, settings), cursor=cursor
    )
    return _json(present.alert_list(out))


@router.post(
    "/admin/alerts/{alert_id}/acknowledge",
    response_model=AlertOut,
    operation_id="acknowledgeAdminAlert",
    summary="Admin: acknowledge an alert",
    tags=ADMIN_TAGS,
    responses={404: PROBLEM},
)
def acknowledge_alert(alert_id: Annotated[Id32, Path()], uow: UowDep, principal: AdminAuth) -> Response:
    out = present.alert_out(benchmark_admin.acknowledge_alert(uow, principal, alert_id))
    return answer(out, uow.data_version())


@router.get(
    "/admin/pending-gpus",
    response_model=PendingGpuList,
    operation_id="listPendingGpus",
    summary="Admin: GPUs the catalog does not know, with their runs waiting",
    tags=ADMIN_TAGS,
)
def list_pending_gpus(
    uow: UowDep,
    cache: ReadDep,
    _auth: AdminAuth,
    status: Annotated[Literal["pending", "mapped"] | None, Query()] = "pending",
) -> Response:
    return _json(present.pending_gpu_list(benchmark_admin.list_pending(uow, cache, status=status)))


@router.post(
    "/admin/pending-gpus/{pending_id}/map",
    response_model=PendingGpuOut,
    operation_id="mapPendingGpu",
    summary="Admin: map a pending GPU to a catalog GPU (create it first with POST /v1/gpus); its runs start counting",
    tags=ADMIN_TAGS,
    responses={404: PROBLEM},
)
def map_pending_gpu(
    pending_id: Annotated[Id32, Path()],
    body: MapPendingIn,
    uow: UowDep,
    cache: ReadDep,
    settings: SettingsDep,
    principal: AdminAuth,
) -> Response:
    entry = benchmark_admin.map_pending(
        uow, cache, principal, pending_id, body.slug, policy=settings.outlier_policy()
    )
    out = present.pending_gpu_out(entry)
    return answer(out, uow.data_version())


@router.get(
    "/admin/benchmark-results",
    response_model=ResultList,
    operation_id="adminListBenchmarkResults",
    openapi_extra=DYNAMIC_FILTERS,
    summary="Admin: results with the same filters, retracted ones included by default (e.g. ?quarantined=true)",
    description=FILTER_HELP,
    tags=ADMIN_TAGS,
    responses={300: {"model": AmbiguousGpu}, 404: PROBLEM},
)
def admin_list_results(
    uow: UowDep, cache: ReadDep, _auth: AdminAuth, listing: AdminResultListing
) -> Response:
    out = benchmark_queries.list_results(
        uow, cache, listing.filters, limit=listing.limit, cursor=listing.cursor
    )
    return _json(present.result_list(out))


@router.post(
    "/admin/benchmark-results/{result_id}/release",
    response_model=ReviewOut,
    operation_id="releaseBenchmarkResult",
    summary="Admin: release a result back into aggregates (sticky; with a reason)",
    tags=ADMIN_TAGS,
    responses={404: PROBLEM},
)
def release_result(
    result_id: Annotated[Id64, Path()],
    body: ReasonIn,
    uow: UowDep,
    settings: SettingsDep,
    principal: AdminAuth,
) -> Response:
    out = benchmark_admin.review_result(
        uow, principal, result_id, action="release", reason=body.reason, policy=settings.outlier_policy()
    )
    return _json(present.review_out(out, uow.data_version()))


@router.post(
    "/admin/benchmark-results/{result_id}/quarantine",
    response_model=ReviewOut,
    operation_id="quarantineBenchmarkResult",
    summary="Admin: quarantine a result (sticky; with a reason)",
    tags=ADMIN_TAGS,
    responses={404: PROBLEM},
)
def quarantine_result(
    result_id: Annotated[Id64, Path()],
    body: ReasonIn,
    uow: UowDep,
    settings: SettingsDep,
    principal: AdminAuth,
) -> Response:
    out = benchmark_admin.review_result(
        uow, principal, result_id, action="quarantine", reason=body.reason, policy=settings.outlier_policy()
    )
    return _json(present.review_out(out, uow.data_version()))


@router.post(
    "/admin/benchmark-runs/{run_id}/retract",
    response_model=RetractOut,
    operation_id="retractBenchmarkRun",
    summary="Admin: retract a run with a reason; its results leave every aggregate (idempotent)",
    tags=ADMIN_TAGS,
    responses={404: PROBLEM},
)
def retract_run(
    body: ReasonIn,
    uow: UowDep,
    settings: SettingsDep,
    principal: AdminAuth,
    run_id: RunIdPath,
) -> Response:
    out = benchmark_admin.set_retracted(
        uow, principal, run_id, retract=True, reason=body.reason, policy=settings.outlier_policy()
    )
    return _json(present.retract_out(out, uow.data_version()))


@router.post(
    "/admin/benchmark-runs/{run_id}/restore",
    response_model=RetractOut,
    operation_id="restoreBenchmarkRun",
    summary="Admin: undo a retraction",
    tags=ADMIN_TAGS,
    responses={404: PROBLEM},
)
def restore_run(uow: UowDep, settings: SettingsDep, principal: AdminAuth, run_id: RunIdPath) -> Response:
    out = benchmark_admin.set_retracted(
        uow, principal, run_id, retract=False, reason=None, policy=settings.outlier_policy()
    )
    return _json(present.retract_out(out, uow.data_version()))


@router.get(
    "/admin/benchmark-runs",
    response_model=RunList,
    operation_id="adminListBenchmarkRuns",
    summary="Admin: runs newest first; agent=<API key id> lists everything that key submitted",
    tags=ADMIN_TAGS,
)
def admin_list_runs(
    uow: UowDep,
    settings: SettingsDep,
    _auth: AdminAuth,
    agent: Annotated[Id32 | None, Query(description="API key id")] = None,
    state: Annotated[Literal["accepted", "pending", "retracted"] | None, Query()] = None,
    gpu: Annotated[SafeStr | None, Query(max_length=100, description="catalog slug")] = None,
    limit: Annotated[PageLimit | None, Query(ge=1, le=1000)] = None,
    cursor: Annotated[Cursor | None, Query()] = None,
) -> Response:
    out = benchmark_queries.list_runs(
        uow, agent=agent, state=state, gpu_slug=gpu, limit=_page_size(limit, settings), cursor=cursor
    )
    return _json(present.run_list(out))
