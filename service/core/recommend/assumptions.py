"""What an answer assumed that moves it, said as codes with their numbers: the optimizer-state
recipe (and what the other common recipe needs), the loop, the training stack, the network
between nodes, the serving engine, the prices used, the band's level and a usable memory taken
as the physical one."""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from service.core.errors import InvalidConfiguration
from service.core.estimation.memory import TrainConfig, estimate_training
from service.core.estimation.network import replica_layout
from service.core.recommend.candidates import _gib, _node_size
from service.core.recommend.models import Option, RecommendQuestion
from service.core.recommend.reasons import Reason

OTHER_RECIPE: Final[dict[str, str]] = {
    "bf16": "amp_bf16",
    "amp_bf16": "bf16",
    "fp16": "amp_fp16",
    "amp_fp16": "fp16",
}
"""The other common full fine-tuning recipe of each precision: a model loaded in 16 bits (weights,
gradients and AdamW states in 16 bits) against fp32 master weights and states under autocast."""

ADAMW_BYTES_PER_PARAM: Final[dict[str, int]] = {"bf16": 8, "fp16": 8, "amp_bf16": 16, "amp_fp16": 16}
"""Weights + gradients + AdamW's two moments per parameter: 2 + 2 + 2 x 2 in 16 bits; 4 + 4 +
2 x 4 with fp32 master weights (Rajbhandari et al. 2020, ZeRO, section 3, counts 16 B with fp16
copies: the reference loop keeps no separate 16-bit weight copy under autocast)."""

BAND_LEVEL: Final = "p10-p90"
"""Every band is the 80 % interval of the held-out error (``service.core.estimation.accuracy``)."""


def assumptions(q: RecommendQuestion, first: Option | None, engine_assumed: str | None) -> tuple[Reason, ...]:
    """The assumptions behind ``first`` (the answer's #1; the question's alone when there is none)."""
    out: list[Reason] = []
    base = first.est.job.config if first is not None else None
    cfg = base if isinstance(base, TrainConfig) else None
    if cfg is not None:
        out.extend(_training(q, cfg, first))
    serve = first.serve if first is not None else None
    if serve is not None:
        out.append(Reason("ASSUMED_ENGINE", {"engine": serve.engine, "stated": engine_assumed is None}))
        layout = replica_layout(serve.nodes, first.gpu, serve.tensor_parallel) if first is not None else None
        if layout is not None and layout.nodes > 1:  # one replica over nodes: what its all-reduces cross
            out.append(Reason("ASSUMED_NETWORK", {"network": layout.describe()}))
    if first is not None and first.quote is not None:
        qt = first.quote
        out.append(
            Reason(
                "ASSUMED_PRICES",
                {
                    "provider": qt.provider,
                    "instance_type": qt.instance_type,
                    "pricing_model": qt.pricing_model,
                    "per_hour": round(qt.per_hour, 2),
                    "currency": qt.currency,
                    "age_days_at_least": qt.age_days,
                    "age_is_lower_bound": qt.age_is_lower_bound,
                    "stale": qt.stale,
                },
            )
        )
    out.append(Reason("ASSUMED_BAND", {"level": BAND_LEVEL}))
    if first is not None and not first.gpu.usable_memory_bytes and first.gpu.memory_bytes:
        name = first.gpu.name or first.gpu.slug
        out.append(
            Reason("ASSUMED_USABLE_MEMORY", {"gpu": name, "physical_gib": _gib(first.gpu.memory_bytes)})
        )
    return tuple(out)


def _training(q: RecommendQuestion, cfg: TrainConfig, first: Option | None) -> list[Reason]:
    out: list[Reason] = []
    if cfg.optimizer == "adamw" and cfg.finetune == "full" and cfg.precision in OTHER_RECIPE:
        other = OTHER_RECIPE[cfg.precision]
        zero = cfg.sharding in ("zero1", "zero2", "zero3")  # DeepSpeed keeps fp32 masters and moments
        params: dict[str, object] = {
            "precision": f"{cfg.precision} (ZeRO: fp32 master weights)" if zero else cfg.precision,
            "bytes_per_param": 16 if zero else ADAMW_BYTES_PER_PARAM[cfg.precision],
            "other_precision": other,
            "other_bytes_per_param": ADAMW_BYTES_PER_PARAM[other],
        }
        if first is not None:
            try:
                # DeepSpeed keeps fp32 masters and moments whatever the precision: the 8-byte
                # recipe is FSDP's over the same GPUs (ZeRO in bf16 needs what amp_bf16 does)
                shard = "fsdp" if zero and ADAMW_BYTES_PER_PARAM[other] < 16 else cfg.sharding
                mem = estimate_training(
                    replace(cfg, precision=other, mixed_precision="autocast", sharding=shard)
                )
            except InvalidConfiguration:
                mem = None
            if mem is not None:
                params.update(
                    other_needed_gib=_gib(mem.device_memory_band.high),
                    usable_gib=_gib(first.usable_bytes),
                    other_fits=mem.fits(first.usable_bytes),
                    gpu_count=cfg.gpu_count,
                )
        out.append(Reason("ASSUMED_OPTIMIZER_STATES", params))
    out.extend(_whole_nodes(q, first))
    out.append(Reason("ASSUMED_LOOP", {"loop": cfg.loop or "loss_only", "stated": cfg.loop is not None}))
    out.append(Reason("ASSUMED_STACK", {"stack": cfg.stack}))
    t = first.est.time if first is not None else None
    if t is not None and t.network is not None:
        out.append(Reason("ASSUMED_NETWORK", {"network": t.network}))
    return out


def _whole_nodes(q: RecommendQuestion, first: Option | None) -> list[Reason]:
    """A ``max_gpus`` between whole nodes of the first option's GPU: training spans nodes only
    whole (a partial node is paid for, and its collectives wait on the slowest link), so the
    GPUs past the last whole node were not tried -- said, not left silent."""
    if first is None or q.constraints.pools is not None:
        return []
    node = _node_size(first.gpu)
    cap = q.constraints.max_gpus
    if cap <= node or cap % node == 0:
        return []
    return [
        Reason("ASSUMED_WHOLE_NODES", {"max_gpus": cap, "gpus_per_node": node, "largest": cap // node * node})
    ]
