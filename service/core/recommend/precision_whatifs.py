"""What-ifs that ask the search again with one thing changed, where the answer needs them.

The 16-bit what-if: a job in bf16 (the default) leaves out Volta and Turing GPUs (V100, T4,
Quadro RTX), which have FP16 tensor cores but no bf16; the same job in fp16 (with loss scaling
for training) runs on them. Where the answer has no option, or the caller named such GPUs, the
search is asked again in fp16 on those GPUs alone and each plan it finds is a what-if."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from service.core.catalog.precision import FP16_FOR
from service.core.estimation.estimate import Job
from service.core.estimation.memory import InferenceConfig
from service.core.recommend.candidates import _gib
from service.core.recommend.models import (
    Exclusion,
    Option,
    Recommendation,
    RecommendData,
    RecommendQuestion,
    WhatIf,
)

__all__ = ["fp16_what_ifs", "quantization_what_ifs"]


def fp16_what_ifs(
    job: Job,
    q: RecommendQuestion,
    data: RecommendData,
    excluded: Sequence[Exclusion],
    options: Sequence[Option],
    search: Callable[[Job, RecommendQuestion, RecommendData], Recommendation],
) -> list[WhatIf]:
    """``WITH_FP16`` for each GPU the default bf16 ruled out that runs the job in fp16 (the
    precision not stated: a stated one is the caller's choice)."""
    alt = FP16_FOR.get(job.precision)
    if alt is None or "precision" in job.stated or (options and q.constraints.allowed_gpus is None):
        return []
    slugs = tuple(
        e.gpu.slug
        for e in excluded
        if e.reason.code == "PRECISION_UNSUPPORTED" and e.gpu.support_for(alt) == "yes"
    )
    if not slugs:
        return []
    in_fp16 = replace(job, config=replace(job.config, precision=alt), stated=job.stated | {"precision"})
    cons = replace(q.constraints, allowed_gpus=slugs)
    found = search(in_fp16, replace(q, constraints=cons, limit=len(slugs)), data)
    return [
        WhatIf(
            "WITH_FP16",
            o.gpu,
            o.gpu_count,
            {"workload.precision": alt},
            {
                "gpu": o.gpu.name or o.gpu.slug,
                "gpu_count": o.gpu_count,
                "precision": alt,
                "mode": "serving" if isinstance(job.config, InferenceConfig) else "training",
                "needed_gib": _gib(o.memory_high_bytes),
                "usable_gib": _gib(o.usable_bytes),
            },
        )
        for o in found.options
    ]


def quantization_what_ifs(
    job: Job,
    q: RecommendQuestion,
    data: RecommendData,
    options: Sequence[Option],
    search: Callable[[Job, RecommendQuestion, RecommendData], Recommendation],
) -> list[WhatIf]:
    """``WITH_QUANTIZATION`` where a serving question has no option and quantisation was not
    allowed: the plans the search finds with it (Llama-3.1-405B in bf16 on A100 or L40S at up to
    16 GPUs holds nowhere; in INT8 or FP8 it does) -- the what-if the answer needs most."""
    cfg = job.config
    if options or q.constraints.allow_quantization or not isinstance(cfg, InferenceConfig):
        return []
    if "quant_method" in job.stated:
        return []
    found = search(
        job, replace(q, constraints=replace(q.constraints, allow_quantization=True), limit=3), data
    )
    out = []
    for o in found.options:
        served = o.serve
        assert served is not None
        out.append(
            WhatIf(
                "WITH_QUANTIZATION",
                o.gpu,
                o.gpu_count,
                {"constraints.allow_quantization": True},
                {
                    "gpu": o.gpu.name or o.gpu.slug,
                    "gpu_count": o.gpu_count,
                    "quant_method": served.quant_method,
                    "tensor_parallel": served.tensor_parallel,
                    "needed_gib": _gib(o.memory_high_bytes),
                    "usable_gib": _gib(o.usable_bytes),
                },
            )
        )
    return out
