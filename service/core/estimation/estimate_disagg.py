"""The serving answer of a disaggregated prefill/decode deployment
(:mod:`service.core.estimation.serving_disagg` holds the model)."""

from __future__ import annotations

import math

from service.core.catalog.specs import GpuSpec
from service.core.errors import InvalidConfiguration
from service.core.estimation.band import Band
from service.core.estimation.estimate_answers import DisaggAnswer, RateAnswer, ServingAnswer
from service.core.estimation.estimate_inputs import ServingQuestion
from service.core.estimation.memory import InferenceConfig
from service.core.estimation.serving import (
    CONTINUOUS_BAND,
    CONTINUOUS_EFFICIENCIES,
    ENGINE_CLASSES,
    TRANSFERRED_ENGINE_BAND_FACTOR,
    Deployment,
    EngineEfficiencies,
    Workload,
    decode_bound,
    deployment,
)
from service.core.estimation.serving_disagg import (
    DisaggPoint,
    disagg_at_rate,
    disagg_capacity,
    disagg_concurrency,
    disagg_layout,
)
from service.core.estimation.serving_disagg_layout import Disaggregation

DISAGG_NOTE = (
    "disaggregated prefill/decode: prompts on the prefill pool (batched to the token budget, M/D/1 wait), "
    "the prompt's KV cache sent rank to rank to a decode replica, TPOT the decode step alone "
    "(service.core.estimation.serving_disagg); no published disaggregated table calibrates it"
)


def _band(x: float, key: str, k: float) -> Band:
    lo, hi = (v * k for v in CONTINUOUS_BAND[key])
    return Band(x * (1 - lo), x, x * (1 + hi)) if math.isfinite(x) else Band(x, x, x)


def disaggregated_answer(c: InferenceConfig, gpu: GpuSpec, q: ServingQuestion | None) -> ServingAnswer:
    """TTFT, TPOT and throughput of ``c.disaggregated`` pools at a rate or a concurrency per
    decode replica; the KV transfer is part of TTFT (never below it)."""
    dis = c.disaggregated
    assert dis is not None
    eng = ENGINE_CLASSES[c.engine]
    e = CONTINUOUS_EFFICIENCIES
    d = deployment(c, gpu)
    w = q.workload if q is not None else Workload(float(c.input_len), float(max(c.output_len, 1)))
    rp, rd = dis.prefill_gpus // c.tensor_parallel, dis.decode_gpus // c.tensor_parallel
    rate: RateAnswer | None = None
    if q is not None and q.requests_per_s is not None:
        p = disagg_at_rate(d, e, dis, q.requests_per_s, w.input_len, w.output_len)
        rate = _rate(d, e, dis, q, p, w)
    else:
        n = float(q.concurrency if q is not None and q.concurrency else c.batch_size)
        p = disagg_concurrency(d, e, dis, n, w.input_len, w.output_len)
    if p.decode_cap < 1:
        raise InvalidConfiguration(
            "tensor_parallel",
            f"{c.model.id} leaves no KV cache for one request on {gpu.slug} at tensor_parallel {c.tensor_parallel}",
            code="MEMORY_INSUFFICIENT",
        )
    # uncalibrated for disaggregation: the band widened once, and again for a transferred engine
    k = TRANSFERRED_ENGINE_BAND_FACTOR * (
        TRANSFERRED_ENGINE_BAND_FACTOR if eng.provenance == "transferred" else 1.0
    )
    out_tps = p.requests_per_s * w.output_len if p.stable else 0.0
    layout = disagg_layout(dis, gpu).describe()
    return ServingAnswer(  # TTFT, its band and TPOT by position
        p.ttft_s,
        _band(p.ttft_s, "ttft", k),
        p.tpot_s,
        tpot_band=_band(p.tpot_s, "tpot", k),
        output_tokens_per_s=out_tps,
        prefill_bound="compute",
        decode_bound=decode_bound(d, e, p.in_flight_per_decode_replica),
        provenance="transferred",
        engine=c.engine,
        tensor_parallel=c.tensor_parallel,
        replicas=rp + rd,
        concurrency_per_replica=round(p.in_flight_per_decode_replica),
        max_concurrency_per_replica=p.decode_cap,
        rate=rate,
        notes=(f"{eng.name}: {eng.source}", *d.notes, DISAGG_NOTE, layout),
        prefill_time_share=dis.prefill_gpus / (dis.prefill_gpus + dis.decode_gpus),
        disaggregated=DisaggAnswer(
            prefill_gpus=dis.prefill_gpus,
            decode_gpus=dis.decode_gpus,
            prefill_replicas=rp,
            decode_replicas=rd,
            kv_transfer_s=p.kv_transfer_s,
            kv_link=p.link,
            prefill_s=p.prefill_s,
            prefill_wait_s=p.prefill_wait_s,
            prefill_utilisation=p.prefill_utilisation,
            layout=layout,
        ),
        input_tokens_per_s=p.requests_per_s * w.input_len if p.stable else 0.0,
    )


def _rate(
    d: Deployment, e: EngineEfficiencies, dis: Disaggregation, q: ServingQuestion, p: DisaggPoint, w: Workload
) -> RateAnswer:
    """The rate answer: the pools' capacity within the targets, the prefill pool's utilisation."""
    assert q.requests_per_s
    cap = disagg_capacity(d, e, dis, w.input_len, w.output_len, q.ttft_target_s, q.tpot_target_s)
    return RateAnswer(
        requests_per_s=q.requests_per_s,
        stable=p.stable,
        ttft_p50_s=p.ttft_s,
        tpot_p50_s=p.tpot_s,
        ttft_mean_s=p.ttft_s,
        in_flight_per_replica=p.in_flight_per_decode_replica,
        utilisation=p.prefill_utilisation,
        queue_wait_s=p.prefill_wait_s,
        capacity_requests_per_s=cap,
        headroom=cap / q.requests_per_s - 1.0,
        meets_ttft=None if q.ttft_target_s is None else bool(p.stable and p.ttft_s <= q.ttft_target_s),
        meets_tpot=None if q.tpot_target_s is None else bool(p.stable and p.tpot_s <= q.tpot_target_s),
        validated=False,
        note=DISAGG_NOTE
        if p.stable
        else "the prefill or the decode pool cannot keep up with this rate (overload)",
    )
