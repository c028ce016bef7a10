"""Serving memory as answers carry it: per-GPU figures for reasons, and the memory answer a
plan sized without a full estimate shows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from service.core.estimation.memory import MemoryEstimate
from service.core.recommend.candidates import _gib
from service.core.recommend.models import Option, WhatIf


def _serving_memory(mem: MemoryEstimate, usable: int) -> dict[str, Any]:
    """Per-GPU serving memory in GiB and in GB (datasheets and the driver speak GB): the
    figure the fit is decided on (band's upper end), the weights and the KV cache at full
    context for every sequence, against the usable memory."""
    weights = float(mem.persistent.get("weights", mem.components.get("weights", 0)))
    kv = float(mem.persistent.get("kv_cache", mem.components.get("kv_cache", 0)))
    high = mem.device_memory_band.high
    return {
        "needed_gib": _gib(high),
        "usable_gib": _gib(usable),
        "weights_gib": _gib(weights),
        "kv_cache_gib": _gib(kv),
        "needed_gb": round(high / 1e9, 2),
        "usable_gb": round(usable / 1e9, 2),
        "weights_gb": round(weights / 1e9, 1),
        "kv_cache_gb": round(kv / 1e9, 1),
    }


def _memory_answer(mem: MemoryEstimate, usable: int) -> Any:
    from service.core.estimation.estimate import MemoryAnswer

    return MemoryAnswer(
        estimate=mem,
        usable_memory_bytes=usable,
        fits=mem.fits(usable),
        headroom_bytes=mem.headroom_bytes(usable),
        provenance="spec",
    )


def fp8_what_ifs(options: Sequence[Option], memory: Callable[[str, int], MemoryEstimate]) -> list[WhatIf]:
    """For the first options on several GPUs per replica: the smaller tensor-parallel degree
    FP8 weights would fit in where the option's own weight format does not (``memory(format,
    tp)`` sizes a replica) -- a degree chosen for latency, not memory, is no what-if of memory."""
    out: list[WhatIf] = []
    for o in options[:3]:
        cfg = o.est.job.config
        tp = cfg.tensor_parallel  # type: ignore[union-attr]
        fmt = cfg.quant_method  # type: ignore[union-attr]
        if tp <= 1 or fmt == "fp8" or o.gpu.support_for("fp8") != "yes":
            continue
        for smaller in (tp // 4, tp // 2):
            if smaller < 1 or memory(fmt, smaller).fits(o.usable_bytes):
                continue
            mem = memory("fp8", smaller)
            if mem.fits(o.usable_bytes):
                out.append(
                    WhatIf(
                        "WITH_FP8_WEIGHTS",
                        o.gpu,
                        smaller,
                        {"constraints.allow_quantization": True},
                        {
                            "gpu": o.gpu.name or o.gpu.slug,
                            "tensor_parallel": smaller,
                            "instead_of": tp,
                            "needed_gib": _gib(mem.device_memory_band.high),
                            "usable_gib": _gib(o.usable_bytes),
                        },
                    )
                )
                break
    return out[:3]
