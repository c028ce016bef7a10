"""``/v1/recommend`` answers on the wire: the core recommendation as a
:class:`~service.schemas.recommend.RecommendResponse` document, and its sentences in English or
Chinese by ``Accept-Language``.

Answers are stored in English; a sentence is always rebuilt from its ``code`` and ``params``
(:func:`localise`), so a stored answer reads in the language each reader asks for. Machine
codes and numbers never change with the language.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

from service.api.answers import dumps
from service.api.presenters.notice_words import notice_text
from service.api.presenters.recommend_words import sentence
from service.core.catalog.models import CnnSpec
from service.core.estimation.estimate import ServingAnswer, TimeAnswer, configuration_of
from service.core.pricing.token_cost import serving_token_costs
from service.core.recommend.search import Exclusion, Option, Reason, WhatIf
from service.schemas.estimate import AccuracyOut, BandOut
from service.schemas.gpus import SuspectReasonOut
from service.schemas.recommend import (
    ConsideredOut,
    CostOut,
    ExclusionOut,
    FigureOut,
    FrontierPoint,
    GpuRef,
    KubernetesHint,
    MemoryPerGpuOut,
    NetworkOut,
    OptionOut,
    PoolsOut,
    ReasonOut,
    RecommendResponse,
    SchedulingOut,
    ServingPerfOut,
    StrategyOut,
    TrainingPerfOut,
    WatermarksOut,
    WhatIfOut,
)
from service.usecases.recommend import RecommendOutcome

Lang = str  # "en" | "zh"


# ---- sentences (the template tables are in recommend_words) ---------------------------------


def _said(code: str, params: Mapping[str, Any], lang: Lang = "en") -> str:
    """A freshly built reason's sentence (its parameters were checked when it was built)."""
    text = sentence(code, params, lang)
    assert text is not None, code
    return text


def _reason(r: Reason, lang: Lang = "en") -> ReasonOut:
    params = dict(r.params)
    return ReasonOut(code=r.code, params=params, message=_said(r.code, params, lang))


def localise(doc: dict[str, Any], lang: Lang) -> dict[str, Any]:
    """The stored (English) document with every sentence rebuilt in ``lang``."""
    if lang == "en":
        return doc

    def fix(item: dict[str, Any]) -> dict[str, Any]:
        said = sentence(item["code"], item.get("params") or {}, lang)
        return item if said is None else {**item, "message": said}

    def notice(item: dict[str, Any]) -> dict[str, Any]:
        said = notice_text(item["code"], item["message"], item.get("params") or {}, lang)
        return {**item, "message": said}

    out = dict(doc)
    out["options"] = [
        {
            **o,
            "reasons": [fix(r) for r in o.get("reasons", [])],
            "warnings": [notice(w) for w in o.get("warnings", [])],
        }
        for o in doc.get("options", [])
    ]
    out["excluded"] = [
        {**fix(e), "also": [fix(r) for r in e.get("also", [])]} for e in doc.get("excluded", [])
    ]
    out["what_if"] = [fix(w) for w in doc.get("what_if", [])]
    out["warnings"] = [fix(w) for w in doc.get("warnings", [])]
    out["assumptions"] = [fix(w) for w in doc.get("assumptions", [])]
    return out


# ---- the document ------------------------------------------------------------------------------


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def _gpu(o: Option | Exclusion | WhatIf) -> GpuRef:
    g = o.gpu
    return GpuRef(
        slug=g.slug,
        name=g.name or g.slug,
        architecture=g.architecture,
        form_factor=g.form_factor,
        tdp_w=g.tdp_w,
    )


def _figure(value: float, band: Any, unit: str, provenance: str, acc: Any, k: float = 1.0) -> FigureOut:
    b = BandOut.of(band, k) if band is not None and math.isfinite(band.high) else None
    return FigureOut(value=value * k, band=b, unit=unit, provenance=provenance, accuracy=AccuracyOut.of(acc))


def _training(t: TimeAnswer, o: Option) -> TrainingPerfOut:
    ttt = None
    if t.time_to_train_s is not None and t.time_to_train_band is not None:
        ttt = _figure(t.time_to_train_s, t.time_to_train_band, "h", t.provenance, t.accuracy, 1 / 3600.0)
    return TrainingPerfOut(
        step_time=_figure(t.step_time_s, t.step_time_band, "s", t.provenance, t.accuracy),
        tokens_per_s=t.tokens_per_s,
        samples_per_s=t.samples_per_s,
        throughput_unit=_unit(o),
        time_to_train=ttt,
        mfu=t.mfu,
        bound=t.bound,
        source_gpus=list(t.source_gpus),
        sources=list(t.sources),
    )


def _serving(sv: ServingAnswer, o: Option) -> ServingPerfOut:
    r = sv.rate
    ttft = (
        _figure(sv.ttft_s, sv.ttft_band, "ms", sv.provenance, sv.accuracy, 1e3)
        if math.isfinite(sv.ttft_s)
        else None
    )
    tpot = (
        _figure(sv.tpot_s, sv.tpot_band, "ms", sv.provenance, sv.accuracy, 1e3)
        if math.isfinite(sv.tpot_s)
        else None
    )
    return ServingPerfOut(
        ttft=ttft,
        tpot=tpot,
        output_tokens_per_s=sv.output_tokens_per_s,
        capacity_requests_per_s=r.capacity_requests_per_s if r is not None else None,
        headroom=_finite(r.headroom) if r is not None else None,
        utilisation=_finite(r.utilisation) if r is not None else None,
        concurrency_per_replica=sv.concurrency_per_replica,
        max_concurrency_per_replica=sv.max_concurrency_per_replica,
        time_to_generate=_figure(
            sv.time_to_generate.mid, sv.time_to_generate, "h", sv.provenance, sv.accuracy, 1 / 3600.0
        )
        if sv.time_to_generate is not None
        else None,
        source_gpus=list(sv.source_gpus),
        sources=list(sv.sources),
    )


def _strategy(o: Option) -> StrategyOut:
    t, s = o.train, o.serve
    if t is not None:
        return StrategyOut(
            gpu_count=o.gpu_count,
            nodes=o.nodes,
            gpus_per_node=o.gpus_per_node,
            sharding=t.sharding,
            mixed_precision=t.mixed_precision if t.precision.startswith("amp_") else None,
            gradient_checkpointing=t.gradient_checkpointing,
            finetune=t.finetune,
            precision=t.precision,
            micro_batch=t.batch_size,
            global_batch=t.effective_global_batch,
            accumulation_steps=t.accumulation_steps,
            tensor_parallel=t.tensor_parallel,
        )
    assert s is not None
    return StrategyOut(
        gpu_count=o.gpu_count,
        nodes=o.nodes,
        gpus_per_node=o.gpus_per_node,
        precision=s.precision,
        tensor_parallel=s.tensor_parallel,
        replicas=s.replicas,
        engine=s.engine,
        quant_method=s.quant_method,
        kv_cache_dtype="fp8" if s.kv_bytes == 1.0 else "auto",
        expert_parallel=s.expert_parallel or None,
        disaggregated=_pools(s.disaggregated),
    )


def _tco(o: Option) -> dict[str, Any] | None:
    t = o.tco
    if t is None:
        return {"available": False, "reason": o.tco_missing} if o.tco_missing else None
    out: dict[str, Any] = {
        "available": True,
        "currency": t.currency,
        "per_hour": t.per_hour,
        "per_gpu_hour": t.per_gpu_hour,
        "capex": t.capex,
        "capex_per_hour": t.capex_per_hour,
        "energy_per_hour": t.energy_per_hour,
        "units": t.units,
        "per_node": t.per_node,
        "gpus_paid": t.gpus_paid,
        "power_w_per_gpu": t.power_w,
        "power_source": t.power_source,
        "energy_kw": t.energy_kw,
        "price_row_ids": list(t.price_row_ids),
        "price_age_days": t.age_days,
        "stale": t.stale,
        "notes": list(t.notes),
        "assumptions": {
            "utilisation": t.assumptions.utilisation,
            "pue": t.assumptions.pue,
            "electricity_usd_per_kwh": t.assumptions.electricity_usd_per_kwh,
            "amortisation_years": t.assumptions.amortisation_years,
            "node_overhead_fraction": t.assumptions.node_overhead_fraction,
            "host_power_fraction": t.assumptions.host_power_fraction,
        },
    }
    if t.run is not None:
        out["run"] = {"low": t.run.low, "mid": t.run.amount, "high": t.run.high}
    return out


def _network(o: Option) -> NetworkOut | None:
    n = o.network
    if n is None:
        return None
    return NetworkOut(
        intra_node=n.intra_node,
        gpu_link_gpus=n.gpu_link_gpus,
        inter_node_gbps=n.inter_node_gbps,
        rdma=n.rdma,
        intra_basis=n.intra_basis,
        inter_basis=n.inter_basis,
        source=n.source,
    )


def _token_prices(o: Option, per_hour: float | None) -> dict[str, float]:
    """Serving: the hour priced per million input and output tokens (issue 28), split by the
    share of GPU time prompts take at the answer's load; empty where the answer has no share."""
    sv = o.est.serving
    if sv is None or per_hour is None:
        return {}
    tc = serving_token_costs(
        per_hour, 1, sv.input_tokens_per_s, sv.output_tokens_per_s, sv.prefill_time_share
    )
    if tc is None:
        return {}
    return {
        "per_million_input": tc.per_million_input,
        "per_million_output": tc.per_million_output,
        "per_million_blended": tc.per_million_blended,
    }


def _cost(o: Option) -> CostOut | None:
    qt = o.quote
    if qt is None:
        tco_doc = _tco(o)
        if tco_doc is None or not tco_doc.get("available"):
            return None
        run = tco_doc.get("run")
        return CostOut(
            currency=tco_doc["currency"],
            tco=tco_doc,
            network=_network(o),
            run=BandOut(low=run["low"], mid=run["mid"], high=run["high"]) if run else None,
            per_million_tokens=o.cost_per_million_tokens,  # owned GPUs: the TCO hour, as ranked
            **_token_prices(o, tco_doc.get("per_hour")),
        )
    return CostOut(
        currency=qt.currency,
        provider=qt.provider,
        region=qt.region,
        instance_type=qt.instance_type,
        instances=qt.instances,
        gpus_paid=qt.gpus_paid,
        pricing_model=qt.pricing_model,
        per_hour=qt.per_hour,
        run=BandOut(low=o.run_cost[0], mid=o.run_cost[1], high=o.run_cost[2]) if o.run_cost else None,
        per_million_tokens=o.cost_per_million_tokens,
        **_token_prices(o, qt.per_hour),
        tco=_tco(o),
        price_row_ids=list(qt.price_row_ids),
        price_age_days=qt.age_days,
        price_age_is_lower_bound=qt.age_is_lower_bound,
        stale=qt.stale,
        suspect=bool(qt.suspect),
        suspect_reasons=SuspectReasonOut.of(qt.suspect),
        notes=list(qt.notes),
        network=_network(o),
    )


def _schedule(o: Option) -> SchedulingOut | None:
    s = o.schedule
    if s is None:
        return None
    return SchedulingOut(
        kubernetes=KubernetesHint(
            node_selector=dict(s.k8s_node_selector),
            resources={"limits": {s.k8s_resource: s.k8s_per_pod}},
            pods=s.k8s_pods,
        ),
        slurm=list(s.slurm),
        skypilot=dict(s.skypilot) if s.skypilot is not None else None,
        torchrun=list(s.torchrun) if s.torchrun is not None else None,
    )


def _unit(o: Option) -> Literal["tokens", "images"]:
    """What a training option's throughput counts: images for a CNN, tokens otherwise."""
    return "images" if isinstance(o.est.job.config.model, CnnSpec) else "tokens"


def _currency(o: Option) -> str:
    """The currency an option's costs are in (:attr:`Option.currency`)."""
    return o.currency or "currency"


def _objective_unit(o: Option, objective: str) -> str:
    unit = _unit(o)
    cur = _currency(o)
    if objective == "fastest":
        if o.hours is not None:
            return "h"
        if o.train is not None:
            return f"s per million {unit}"
        return "s per output token (p50 TPOT)"
    if objective == "perf_per_watt":
        return f"W per {unit[:-1]}/s"
    if objective == "cost_per_million_tokens":  # serving: the tokens generated
        return f"{cur} per million output tokens" if o.serve else f"{cur} per million {unit}"
    return (
        f"{cur} (run)"
        if o.run_cost is not None
        else f"{cur} per hour"
        if o.serve
        else f"{cur} per million {unit}"
    )


def _option(o: Option, objective: str) -> OptionOut:
    e = o.est
    mem = e.memory.estimate
    t, sv = e.time, e.serving
    return OptionOut(
        rank=o.rank,
        gpu=_gpu(o),
        strategy=_strategy(o),
        memory=MemoryPerGpuOut(
            needed_bytes=o.memory_high_bytes,
            needed_mid_bytes=mem.device_memory_needed_bytes,
            usable_bytes=o.usable_bytes,
            headroom_bytes=o.usable_bytes - o.memory_high_bytes,
            peak_phase=mem.peak_phase,
            provenance=e.memory.provenance,
        ),
        training=_training(t, o) if t is not None else None,
        serving=_serving(sv, o) if sv is not None else None,
        cost=_cost(o),
        power_w=o.power_w,
        perf_per_watt=o.perf_per_watt,
        provenance=o.provenance,
        objective_value=_finite(o.objective_value),
        objective_unit=_objective_unit(o, objective),
        ratio_to_best=_finite(o.ratio_to_best),
        ratio_uncertainty=o.ratio_uncertainty,
        within_error_of_best=o.within_error_of_best,
        reasons=[_reason(r) for r in o.reasons],
        warnings=[ReasonOut(code=w.code, params=dict(w.params), message=w.message) for w in e.warnings],
        scheduling=_schedule(o),
    )


def _question(outcome: RecommendOutcome) -> dict[str, Any]:
    job = outcome.recommendation.job
    m = job.model
    return {
        "model": {"id": m.id, "kind": m.kind, "total_params": m.total_params, "description": m.describe()},
        "mode": job.mode,
        "precision": job.precision,
        "tokens": job.tokens,
        "configuration": configuration_of(job),
    }


def _units(o: Option) -> tuple[str, str]:
    """The frontier's axes for ``o``, as :attr:`Option.time_value` and :attr:`Option.cost_value` take them."""
    time_unit = "h" if o.hours is not None else "s TPOT" if o.serve is not None else "s/1M tokens"
    cur = o.currency or "USD"
    if o.run_cost is not None:
        return time_unit, f"{cur}/run"
    return time_unit, f"{cur}/1M tokens" if o.cost_per_million_tokens is not None else f"{cur}/h"


def _plan_key(o: Option) -> tuple[object, ...]:
    """What makes a frontier point the same plan as an option: GPU, count, layout, format and
    the instance it is priced on (one GPU count is often several plans: TP4 x 4 and TP8 x 2)."""
    return (
        o.gpu.slug,
        o.gpu_count,
        getattr(o.est.job.config, "pipeline_parallel", None),
        *_plan_of(o).values(),
    )


def _frontier(rec: Any) -> list[FrontierPoint]:
    """The time-vs-cost frontier with explicit units, the faster and the cheaper neighbour of
    option #1 marked and every point's ratios to #1."""
    ranks = {_plan_key(o): o.rank for o in rec.options}
    first = rec.options[0] if rec.options else None
    t0 = first.time_value if first is not None else None
    c0 = first.cost_value if first is not None else None
    pts = list(rec.frontier)
    faster = [o for o in pts if t0 is not None and o.time_value < t0 * (1 - 1e-9)]
    cheaper = [
        o for o in pts if c0 is not None and o.cost_value is not None and o.cost_value < c0 * (1 - 1e-9)
    ]
    near_fast = max(faster, key=lambda o: o.time_value, default=None)
    near_cheap = max(cheaper, key=lambda o: o.cost_value or 0.0, default=None)
    out = []
    for o in pts:
        tu, cu = _units(o)
        out.append(
            FrontierPoint(
                gpu=o.gpu.slug,
                gpu_count=o.gpu_count,
                hours=o.hours,
                cost=o.cost_value,
                time_value=o.time_value,
                time_unit=tu,
                cost_value=o.cost_value or 0.0,
                cost_unit=cu,
                neighbour="faster" if o is near_fast else "cheaper" if o is near_cheap else None,
                time_vs_first=round(o.time_value / t0, 4) if t0 else None,
                cost_vs_first=round(o.cost_value / c0, 4) if c0 and o.cost_value is not None else None,
                rank=ranks.get(_plan_key(o)),
                **_plan_of(o),
            )
        )
    return out


def _plan_of(o: Option) -> dict[str, Any]:
    """A frontier point's plan and the shape it is priced on: two points of one GPU count differ
    here (Llama-3-8B on 4 H100: TP4 on one 4-GPU instance against TP2 x 2 on two 2-GPU ones)."""
    c, q = o.est.job.config, o.quote  # a serving config has no sharding, a training one no replicas
    return {
        "tensor_parallel": getattr(c, "tensor_parallel", None),
        "replicas": getattr(c, "replicas", None),
        "quant_method": getattr(c, "quant_method", None),
        "sharding": getattr(c, "sharding", None),
        "provider": q.provider if q is not None else None,
        "instance_type": q.instance_type if q is not None else None,
        "gpus_paid": q.gpus_paid if q is not None else None,
        "expert_parallel": getattr(c, "expert_parallel", None) or None,
        "disaggregated": _pools(getattr(c, "disaggregated", None)),
    }


def _pools(d: Any) -> PoolsOut | None:
    """A disaggregated plan's pools (None: aggregated, or training)."""
    return PoolsOut(prefill_gpus=d.prefill_gpus, decode_gpus=d.decode_gpus) if d is not None else None


def _exclusion(x: Exclusion) -> ExclusionOut:
    return ExclusionOut(
        gpu=_gpu(x),
        code=x.reason.code,
        params=dict(x.reason.params),
        message=_said(x.reason.code, x.reason.params),
        also=[_reason(r) for r in x.also],
    )


_EXCLUDED: dict[tuple[Any, ...], tuple[Any, ExclusionOut]] = {}
"""Exclusion entries by (GPU, reasons with their parameters' values and types): most of an
answer's ~40 exclusions (not allowed, not in the inventory, over the power cap) recur from one
answer to the next, and a built entry is only read (its document is dumped, never changed)."""


def _key(r: Reason) -> tuple[Any, ...]:
    return (r.code, tuple(r.params.items()), tuple(map(type, r.params.values())))


def _excluded(x: Exclusion) -> ExclusionOut:
    """:func:`_exclusion`, remembered (a GPU object of a later catalog snapshot is a new key)."""
    try:
        key = (id(x.gpu), _key(x.reason), tuple(_key(r) for r in x.also))
        hit = _EXCLUDED.get(key)
    except TypeError:  # a list among the parameters: built every time
        return _exclusion(x)
    if hit is not None and hit[0] is x.gpu:
        return hit[1]
    out = _exclusion(x)
    if len(_EXCLUDED) >= 4096:
        _EXCLUDED.clear()
    _EXCLUDED[key] = (x.gpu, out)
    return out


def document(outcome: RecommendOutcome) -> dict[str, Any]:
    """The English answer as stored and sent (JSON-ready)."""
    return response(outcome).model_dump(mode="json")


def document_json(outcome: RecommendOutcome, asked: Mapping[str, Any]) -> str:
    """:func:`document` with the request as asked (``asked``), as the JSON text stored and
    sent in English: serialised by pydantic's compiled serializer straight from the wire model
    (the same document as ``{**document(outcome), "asked": asked}``, in about a fifth of the
    time of building the dict and ``json.dumps`` of it)."""
    head = response(outcome).model_dump_json()
    return f'{head[:-1]},"asked":{dumps(asked)}}}'


def response(outcome: RecommendOutcome) -> RecommendResponse:
    """The English answer as a wire model."""
    rec = outcome.recommendation
    frontier = _frontier(rec)
    resp = RecommendResponse(
        recommendation_id=outcome.recommendation_id,
        as_of=outcome.as_of,
        data_version=outcome.data_version,
        watermarks=WatermarksOut(
            catalog=outcome.watermarks.catalog, measurement=outcome.watermarks.measurement
        ),
        estimator_version=outcome.estimator_version,
        calibration_watermark=outcome.calibration_watermark,
        objective=rec.objective,
        question=_question(outcome),
        options=[_option(o, rec.objective) for o in rec.options],
        frontier=frontier,
        excluded=[_excluded(x) for x in rec.excluded],
        what_if=[
            WhatIfOut(
                code=w.code,
                params=dict(w.params),
                message=_said(w.code, w.params),
                change=dict(w.change),
                gpu=w.gpu.slug,
                gpu_count=w.gpu_count,
            )
            for w in rec.what_if
        ],
        warnings=[_reason(r) for r in rec.warnings],
        assumptions=[_reason(r) for r in rec.assumptions],
        considered=ConsideredOut(
            gpus=rec.gpus,
            candidates=rec.candidates,
            memory_estimates=rec.memory_estimates,
            timed=rec.timed,
            not_ranked=[g.slug for g, _b in rec.not_ranked],
            feasible=rec.feasible,
        ),
    )
    return resp
