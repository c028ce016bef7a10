"""``/v1/recommend`` answers on the wire: the core recommendation as a
:class:`~service.schemas.recommend.RecommendResponse` document, and its sentences in English or
Chinese by ``Accept-Language``.

Answers are stored in English; a sentence is always rebuilt from its ``code`` and ``params``
(:func:`localise`), so a stored answer reads in the language each reader asks for. Machine
codes and numbers never change with the language.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from service.core.estimation.estimate import ServingAnswer, TimeAnswer, configuration_of
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


def language(accept_language: str | None) -> Lang:
    """``zh`` when Chinese is preferred over English in ``Accept-Language`` (q-values
    honoured), else ``en``."""
    if not accept_language:
        return "en"
    best: tuple[float, Lang] = (-1.0, "en")
    for i, part in enumerate(accept_language.split(",")):
        bits = part.strip().split(";")
        tag = bits[0].strip().lower()
        q = 1.0
        for b in bits[1:]:
            b = b.strip()
            if b.startswith("q="):
                try:
                    q = float(b[2:])
                except ValueError:
                    q = 0.0
        lang = "zh" if tag.startswith("zh") else "en" if tag.startswith("en") or tag == "*" else None
        if lang is not None and (q, -i) > (best[0], -(10**6)) and q > best[0]:
            best = (q, lang)
    return best[1]


# ---- sentences -------------------------------------------------------------------------------


def _n(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:,.1f}" if abs(x) < 1000 else f"{x:,.0f}"
    return str(x)


def _p(params: Mapping[str, Any], key: str, default: str = "?") -> str:
    v = params.get(key)
    return default if v is None else _n(v)


def _gb2(params: Mapping[str, Any], key: str) -> str:
    """Usable memory in GB to the driver's precision (150.75 GB, not 150.8)."""
    v = params.get(key)
    return "?" if v is None else f"{float(v):,.2f}"


def _money(params: Mapping[str, Any], key: str) -> str:
    v = params.get(key)
    return "?" if v is None else f"{float(v):,.2f}"


Template = Callable[[Mapping[str, Any]], str]

_EN_BUDGET: dict[str, str] = {
    "per_hour": "per hour",
    "per_run": "for the run (band upper end)",
    "purchase": "to buy",
}
_ZH_BUDGET: dict[str, str] = {"per_hour": "每小时", "per_run": "整次训练（误差带上限）", "purchase": "采购"}

EN: dict[str, Template] = {
    "EXCLUDED_BY_USER": lambda p: f"the {_p(p, 'gpu')} is in excluded_gpus",
    "NOT_ALLOWED": lambda p: f"the {_p(p, 'gpu')} is not in allowed_gpus",
    "NOT_IN_INVENTORY": lambda p: f"the {_p(p, 'gpu')} is not in the inventory (no free GPU of it)",
    "VENDOR_NOT_ALLOWED": lambda p: f"the {_p(p, 'gpu')} is made by {_p(p, 'vendor')}, not an allowed vendor",
    "FORM_FACTOR": lambda p: (
        f"the {_p(p, 'gpu')} is a {_p(p, 'form_factor', 'unknown').upper()} part; allowed: "
        f"{', '.join(x.upper() for x in p.get('allowed') or [])}"
    ),
    "NO_NVLINK": lambda p: f"the {_p(p, 'gpu')} has no NVLink and NVLink is required",
    "OVER_POWER_CAP": lambda p: (
        f"the {_p(p, 'gpu')} draws {_p(p, 'tdp_w')} W, over the {_p(p, 'cap_w')} W cap per GPU"
        if p.get("per") == "gpu"
        else f"one {_p(p, 'gpu')} draws {_p(p, 'tdp_w')} W: not even one fits the "
        f"{_p(p, 'cap_w')} W total cap"
    ),
    "POWER_UNKNOWN": lambda p: (
        f"the {_p(p, 'gpu')} has no sourced TDP, so the {_p(p, 'cap_w')} W cap cannot be checked"
    ),
    "NO_MEMORY_FIGURE": lambda p: f"the {_p(p, 'gpu')} has no sourced memory size; no fit can be computed",
    "PRECISION_UNSUPPORTED": lambda p: f"the {_p(p, 'gpu')} does not support {_p(p, 'precision')}",
    "MEMORY_INSUFFICIENT": lambda p: _en_memory(p),
    "NO_PLACEMENT": lambda p: (
        f"the {_p(p, 'gpu')} needs tensor parallelism over {_p(p, 'tensor_parallel')} GPUs in one "
        f"node, but the inventory has {_p(p, 'free_per_node')} free per node"
    ),
    "OVER_GPU_LIMIT": lambda p: (
        f"the {_p(p, 'gpu')} needs more than {_p(p, 'max_gpus')} GPUs "
        f"(TP{_p(p, 'tensor_parallel', '1')}) to serve the load within the targets"
    ),
    "NO_TIME_ESTIMATE": lambda p: (
        f"the {_p(p, 'gpu')} fits ({_p(p, 'needed_gib')} of {_p(p, 'usable_gib')} GiB usable "
        f"on {_p(p, 'gpu_count')} GPU(s)), but no time can be estimated: the catalog has no "
        f"sourced {_p(p, 'missing')} for it"
        if p.get("needed_gib") is not None
        else f"no time can be estimated for the {_p(p, 'gpu')}: no sourced {_p(p, 'missing')}"
    ),
    "MISSES_DEADLINE": lambda p: (
        f"{_p(p, 'gpu_count')}x {_p(p, 'gpu')} take up to {_p(p, 'hours_high')} h (about "
        f"{_p(p, 'hours')} h), over the {_p(p, 'deadline_hours')} h deadline, and "
        + (
            f"no more GPUs are allowed ({_p(p, 'max_gpus')})"
            if p.get("largest_tried") is None or p["largest_tried"] >= (p.get("max_gpus") or 0)
            else f"no count tried is faster (up to {_p(p, 'largest_tried')} GPUs, whole nodes "
            f"within max_gpus {_p(p, 'max_gpus')})"
        )
    ),
    "MISSES_TTFT": lambda p: (
        f"even a lone request waits {_p(p, 'ttft_ms')} ms for its first token on the "
        f"{_p(p, 'gpu')} (TP{_p(p, 'tensor_parallel')}); the target is {_p(p, 'target_ms')} ms"
    ),
    "MISSES_TPOT": lambda p: (
        f"even a lone request takes {_p(p, 'tpot_ms')} ms per output token on the {_p(p, 'gpu')} "
        f"(TP{_p(p, 'tensor_parallel')}); the target is {_p(p, 'target_ms')} ms"
    ),
    "PROVENANCE_BELOW_MIN": lambda p: (
        f"the {_p(p, 'gpu')} figures are {_p(p, 'provenance')}, below the required {_p(p, 'minimum')}"
    ),
    "BAND_TOO_WIDE": lambda p: (
        f"the {_p(p, 'gpu')} band is {_p(p, 'band_pct')}% wide, over the {_p(p, 'max_band_pct')}% allowed"
    ),
    "NO_PRICE": lambda p: (
        f"no rentable price for {_p(p, 'gpu_count')}x {_p(p, 'gpu')} in {_p(p, 'currency', 'USD')}"
        + (f" from {', '.join(p['providers'])}" if p.get("providers") else "")
        + (f" ({', '.join(p['pricing_models'])})" if p.get("pricing_models") else "")
    ),
    "NO_MATCHING_INSTANCE": lambda p: (
        f"no priced instance type holds {_p(p, 'nodes')} x {_p(p, 'gpus_per_node')} {_p(p, 'gpu')}"
        + (" linked by NVLink" if p.get("needs_nvlink") else "")
        + (" (serving replicas)" if p.get("replicas") else "")
        + f": {_p(p, 'detail')}"
    ),
    "NO_PURCHASE_PRICE": lambda p: f"no purchase price for the {_p(p, 'gpu')}, so no TCO",
    "NO_POWER_FIGURE": lambda p: f"the {_p(p, 'gpu')} has no power figure, so no energy cost and no TCO",
    "OVER_BUDGET": lambda p: (
        f"{_p(p, 'gpu_count')}x {_p(p, 'gpu')} cost {_money(p, 'cost')} {_p(p, 'currency')} "
        f"{_EN_BUDGET.get(str(p.get('what')), '')}, over "
        f"the budget of {_money(p, 'budget')}"
    ),
    "FITS": lambda p: (
        f"fits: needs {_p(p, 'needed_gib')} GiB per GPU at the band's upper end"
        + (
            f" ({_p(p, 'weights_gib')} GiB weights + {_p(p, 'kv_cache_gib')} GiB KV cache)"
            if p.get("weights_gib") is not None
            else ""
        )
        + f"; the {_p(p, 'gpu')} has {_p(p, 'usable_gib')} GiB usable ({_p(p, 'headroom_gib')} GiB "
        "headroom)"
    ),
    "SHARDED_TO_FIT": lambda p: (
        f"sharded with {_p(p, 'sharding')}: a DDP replica needs {_p(p, 'ddp_needed_gib')} GiB "
        f"per GPU, over the {_p(p, 'usable_gib')} GiB usable"
    ),
    "TENSOR_PARALLEL_TO_FIT": lambda p: (
        f"tensor parallelism over {_p(p, 'tensor_parallel')} GPUs of one node "
        f"(x{_p(p, 'data_parallel')} data-parallel): without it the lightest plan on "
        f"{_p(p, 'gpu_count')} GPUs needs {_p(p, 'without_needed_gib')} GiB per GPU, "
        f"{_p(p, 'usable_gib')} GiB usable"
    ),
    "CHECKPOINTING_TO_FIT": lambda p: (
        f"gradient checkpointing on: without it {_p(p, 'needed_without_gib')} GiB per GPU "
        f"would be needed ({_p(p, 'usable_gib')} GiB usable)"
    ),
    "SINGLE_GPU_TOO_SMALL": lambda p: (
        f"one {_p(p, 'gpu')} is not enough: the job needs {_p(p, 'needed_gib')} GiB on a "
        f"single GPU"
        + (
            f" ({_p(p, 'weights_gb')} GB of weights + {_p(p, 'kv_cache_gb')} "
            f"GB of KV cache + working set = {_p(p, 'needed_gb')} GB)"
            if p.get("weights_gb") is not None
            else ""
        )
        + f"; it has {_p(p, 'usable_gib')} GiB usable"
        + (f" ({_gb2(p, 'usable_gb')} GB)" if p.get("usable_gb") is not None else "")
    ),
    "MEETS_DEADLINE": lambda p: (
        f"finishes within the {_p(p, 'deadline_hours')} h deadline even at the band's upper "
        f"end ({_p(p, 'hours_high')} h)"
    ),
    "MEETS_TARGETS": lambda p: (
        f"{_p(p, 'replicas')} replica(s) x TP{_p(p, 'tensor_parallel')} serve "
        + (
            f"{_p(p, 'rate')} req/s"
            if p.get("rate") is not None
            else f"{_p(p, 'concurrency')} requests in flight per replica"
        )
        + f" at p50 TTFT {_p(p, 'ttft_ms')} ms and TPOT {_p(p, 'tpot_ms')} ms "
        f"(targets: {_p(p, 'ttft_target_ms', '-')} ms, {_p(p, 'tpot_target_ms', '-')} ms)"
    ),
    "BANDWIDTH_BOUND": lambda p: (
        "memory-bandwidth bound: the bandwidth decides the speed"
        + (f" ({_p(p, 'bandwidth_gb_per_s')} GB/s)" if p.get("bandwidth_gb_per_s") else "")
    ),
    "COMPUTE_BOUND": lambda p: (
        "compute bound: the tensor-core peak decides the speed"
        + (f" (MFU {float(p['mfu']):.0%})" if p.get("mfu") else "")
    ),
    "BEST_FOR_OBJECTIVE": lambda p: f"best for the objective ({_p(p, 'objective')})",
    "WITHIN_ERROR_OF_BEST": lambda p: (
        f"within the estimate's error of the best: {_p(p, 'ratio')}x its value, and the "
        f"cross-GPU ratio is uncertain by about {_p(p, 'uncertainty_pct')}%"
    ),
    "MEASURED_HERE": lambda p: f"this exact configuration was measured on the {_p(p, 'gpu')}",
    "MULTI_NODE": lambda p: f"spans {_p(p, 'nodes')} nodes of {_p(p, 'gpus_per_node')} GPUs",
    "QUANTISED_WEIGHTS": lambda p: f"{_p(p, 'quant_method')} weights",
    "GLOBAL_BATCH_HELD": lambda p: (
        f"the global batch ({_p(p, 'global_batch')} sequences) is held fixed across GPU "
        "counts (gradient accumulation)"
    ),
    "NO_OPTION": lambda p: (
        f"no option meets the constraints; {_p(p, 'excluded')} GPUs were excluded (see excluded)"
    ),
    "NO_PLAN_MEETS_DEADLINE": lambda p: (
        f"no plan meets the {_p(p, 'deadline_hours')} h deadline at the band's upper end; the "
        f"fastest plan found is shown: {_p(p, 'gpu_count')}x {_p(p, 'gpu')}, {_p(p, 'hours')} h "
        f"(up to {_p(p, 'hours_high')} h)"
    ),
    "ASSUMED_OPTIMIZER_STATES": lambda p: (
        f"optimizer states: {_p(p, 'precision')} AdamW, {_p(p, 'bytes_per_param')} B per parameter "
        f"for weights, gradients and both moments; the other common recipe ({_p(p, 'other_precision')}, "
        f"{_p(p, 'other_bytes_per_param')} B per parameter)"
        + (
            f" needs {_p(p, 'other_needed_gib')} GiB per GPU at {_p(p, 'gpu_count')} GPU(s) "
            f"({_p(p, 'usable_gib')} GiB usable: " + ("fits)" if p.get("other_fits") else "does not fit)")
            if p.get("other_needed_gib") is not None
            else ""
        )
    ),
    "ASSUMED_LOOP": lambda p: (
        f"training loop: {_p(p, 'loop')}"
        + (
            ""
            if p.get("stated")
            else " (not stated: the band's upper end covers a loop that keeps the outputs)"
        )
    ),
    "ASSUMED_STACK": lambda p: f"training stack: {_p(p, 'stack')}",
    "ASSUMED_NETWORK": lambda p: f"layout and network: {_p(p, 'network')}",
    "ASSUMED_ENGINE": lambda p: (
        f"serving engine: {_p(p, 'engine')}" + ("" if p.get("stated") else " (assumed: none was given)")
    ),
    "ASSUMED_PRICES": lambda p: (
        f"prices: {_p(p, 'provider')} {_p(p, 'instance_type')} {_p(p, 'pricing_model')}, "
        f"{_money(p, 'per_hour')} {_p(p, 'currency')}/h, "
        + (
            f"{_p(p, 'age_days_at_least')} day(s) old (dated)"
            if p.get("age_is_lower_bound") is False
            else f"at least {_p(p, 'age_days_at_least')} day(s) old (its real date is unknown: "
            "the age counts from when the catalog copy was read)"
        )
        + (", stale" if p.get("stale") else "")
    ),
    "ASSUMED_BAND": lambda p: f"bands are the {_p(p, 'level')} interval of the held-out error",
    "ENGINE_ASSUMED": lambda p: (
        f"no engine was given for a request load: continuous batching with {_p(p, 'engine')} is assumed"
    ),
    "LONG_RUN": lambda p: (
        f"the first plan takes {_p(p, 'hours')} h ({_p(p, 'years')} years)"
        + (
            f"; the fastest plan within +{_p(p, 'cost_slack_pct')} % of its cost is "
            f"{_p(p, 'faster_gpu_count')}x {_p(p, 'faster_gpu')}, {_p(p, 'faster_hours')} h"
            + (f" ({_p(p, 'faster_cost_ratio')}x the cost)" if p.get("faster_cost_ratio") is not None else "")
            if p.get("faster_gpu")
            else f"; no faster plan within +{_p(p, 'cost_slack_pct')} % of its cost was found"
        )
    ),
    "WITH_GRADIENT_CHECKPOINTING": lambda p: _en_whatif("with gradient checkpointing", p),
    "WITH_QLORA": lambda p: _en_whatif("with QLoRA (4-bit base) instead of LoRA", p),
    "WITH_FUSED_OPTIMIZER": lambda p: _en_whatif("with the fused AdamW step (optimizer_impl fused)", p),
    "WITH_FP8_WEIGHTS": lambda p: (
        f"with FP8 weights one replica fits on TP{_p(p, 'tensor_parallel')} of the "
        f"{_p(p, 'gpu')} instead of TP{_p(p, 'instead_of')} ({_p(p, 'needed_gib')} of "
        f"{_p(p, 'usable_gib')} GiB)"
    ),
}


def _en_memory(p: Mapping[str, Any]) -> str:
    if p.get("needed_gib") is None:
        return (
            f"the {_p(p, 'gpu')} cannot hold the job on any allowed count ({_p(p, 'usable_gib')} GiB usable)"
        )
    how = ""
    if p.get("tensor_parallel") and int(p["tensor_parallel"]) > 1:
        how = f" at TP{_p(p, 'tensor_parallel')}"
    elif p.get("sharding") not in (None, "none"):
        how = f" as {_p(p, 'sharding')} over {_p(p, 'gpu_count')} GPUs" + (
            " with gradient checkpointing" if p.get("gradient_checkpointing") else ""
        )
    extra = ""
    if p.get("weights_gb") is not None:
        extra = (
            f" ({_p(p, 'weights_gb')} GB of weights + {_p(p, 'kv_cache_gb')} GB of KV cache + working set = "
            f"{_p(p, 'needed_gb')} GB against {_gb2(p, 'usable_gb')} GB usable)"
        )
    single = (
        f"; {_p(p, 'single_gpu_needed_gib')} GiB on one GPU"
        if p.get("single_gpu_needed_gib") is not None
        else ""
    )
    return (
        f"needs {_p(p, 'needed_gib')} GiB per GPU{how}{extra}{single}; the {_p(p, 'gpu')} has "
        f"{_p(p, 'usable_gib')} GiB usable"
    )


def _en_whatif(what: str, p: Mapping[str, Any]) -> str:
    instead = f" instead of {_p(p, 'instead_of')}" if p.get("instead_of") is not None else ""
    return (
        f"{what} it fits on {_p(p, 'gpu_count')}x {_p(p, 'gpu')}{instead} ({_p(p, 'needed_gib')} of "
        f"{_p(p, 'usable_gib')} GiB per GPU)"
    )


ZH: dict[str, Template] = {
    "EXCLUDED_BY_USER": lambda p: f"{_p(p, 'gpu')} 在 excluded_gpus 中",
    "NOT_ALLOWED": lambda p: f"{_p(p, 'gpu')} 不在 allowed_gpus 中",
    "NOT_IN_INVENTORY": lambda p: f"库存中没有空闲的 {_p(p, 'gpu')}",
    "VENDOR_NOT_ALLOWED": lambda p: f"{_p(p, 'gpu')} 的厂商为 {_p(p, 'vendor')}，不在允许的厂商之列",
    "FORM_FACTOR": lambda p: (
        f"{_p(p, 'gpu')} 是 {_p(p, 'form_factor', '未知').upper()} 规格；允许的规格："
        f"{'、'.join(x.upper() for x in p.get('allowed') or [])}"
    ),
    "NO_NVLINK": lambda p: f"{_p(p, 'gpu')} 没有 NVLink，而约束要求 NVLink",
    "OVER_POWER_CAP": lambda p: (
        f"{_p(p, 'gpu')} 功耗 {_p(p, 'tdp_w')} W，超过每卡 {_p(p, 'cap_w')} W 的上限"
        if p.get("per") == "gpu"
        else f"一块 {_p(p, 'gpu')} 功耗 {_p(p, 'tdp_w')} W，总功耗上限 {_p(p, 'cap_w')} W 连一块都放不下"
    ),
    "POWER_UNKNOWN": lambda p: f"{_p(p, 'gpu')} 没有可靠来源的 TDP，无法检查 {_p(p, 'cap_w')} W 的功耗上限",
    "NO_MEMORY_FIGURE": lambda p: f"{_p(p, 'gpu')} 没有可靠来源的显存容量，无法判断能否放下",
    "PRECISION_UNSUPPORTED": lambda p: f"{_p(p, 'gpu')} 不支持 {_p(p, 'precision')}",
    "MEMORY_INSUFFICIENT": lambda p: _zh_memory(p),
    "NO_PLACEMENT": lambda p: (
        f"{_p(p, 'gpu')} 需要在同一节点内做 {_p(p, 'tensor_parallel')} 路张量并行，"
        f"但库存每个节点只有 {_p(p, 'free_per_node')} 块空闲 GPU"
    ),
    "OVER_GPU_LIMIT": lambda p: (
        f"{_p(p, 'gpu')}（TP{_p(p, 'tensor_parallel', '1')}）需要超过 {_p(p, 'max_gpus')} 块 GPU "
        "才能在目标延迟内承载该负载"
    ),
    "NO_TIME_ESTIMATE": lambda p: (
        f"{_p(p, 'gpu')} 显存够用（{_p(p, 'gpu_count')} 块 GPU，每块需要 {_p(p, 'needed_gib')} GiB，"
        f"可用 {_p(p, 'usable_gib')} GiB），但目录里没有它可靠来源的{_p(p, 'missing')}，无法估计时间"
        if p.get("needed_gib") is not None
        else f"{_p(p, 'gpu')} 缺少可靠来源的{_p(p, 'missing')}，无法估计时间"
    ),
    "MISSES_DEADLINE": lambda p: (
        f"{_p(p, 'gpu_count')} 块 {_p(p, 'gpu')} 最长需要 {_p(p, 'hours_high')} 小时（约 "
        f"{_p(p, 'hours')} 小时），超过 {_p(p, 'deadline_hours')} 小时的截止时间，"
        + (
            f"且不能再增加 GPU（上限 {_p(p, 'max_gpus')}）"
            if p.get("largest_tried") is None or p["largest_tried"] >= (p.get("max_gpus") or 0)
            else f"试过的数量中没有更快的（最多 {_p(p, 'largest_tried')} 块，"
            f"在 max_gpus {_p(p, 'max_gpus')} 内按整节点）"
        )
    ),
    "MISSES_TTFT": lambda p: (
        f"在 {_p(p, 'gpu')}（TP{_p(p, 'tensor_parallel')}）上即使只有一个请求，首 token 也要 "
        f"{_p(p, 'ttft_ms')} ms，目标是 {_p(p, 'target_ms')} ms"
    ),
    "MISSES_TPOT": lambda p: (
        f"在 {_p(p, 'gpu')}（TP{_p(p, 'tensor_parallel')}）上即使只有一个请求，每个输出 token 也要 "
        f"{_p(p, 'tpot_ms')} ms，目标是 {_p(p, 'target_ms')} ms"
    ),
    "PROVENANCE_BELOW_MIN": lambda p: (
        f"{_p(p, 'gpu')} 的数据来源为 {_p(p, 'provenance')}，低于要求的 {_p(p, 'minimum')}"
    ),
    "BAND_TOO_WIDE": lambda p: (
        f"{_p(p, 'gpu')} 的误差带宽 {_p(p, 'band_pct')}%，超过允许的 {_p(p, 'max_band_pct')}%"
    ),
    "NO_PRICE": lambda p: (
        f"没有 {_p(p, 'gpu_count')} 块 {_p(p, 'gpu')} 的可租用价格（{_p(p, 'currency', 'USD')}）"
    ),
    "NO_MATCHING_INSTANCE": lambda p: (
        f"没有可租用的实例类型能容纳 {_p(p, 'nodes')} 个节点 × 每节点 {_p(p, 'gpus_per_node')} 块 {_p(p, 'gpu')}"
        + ("（需 NVLink 互联）" if p.get("needs_nvlink") else "")
        + f"：{_p(p, 'detail')}"
    ),
    "NO_PURCHASE_PRICE": lambda p: f"{_p(p, 'gpu')} 没有采购价格，无法计算 TCO",
    "NO_POWER_FIGURE": lambda p: f"{_p(p, 'gpu')} 没有功耗数据，无法计算电费和 TCO",
    "OVER_BUDGET": lambda p: (
        f"{_p(p, 'gpu_count')} 块 {_p(p, 'gpu')} "
        f"{_ZH_BUDGET.get(str(p.get('what')), '')}花费 "
        f"{_money(p, 'cost')} {_p(p, 'currency')}，超出预算 {_money(p, 'budget')}"
    ),
    "FITS": lambda p: (
        f"放得下：按误差带上限每块 GPU 需要 {_p(p, 'needed_gib')} GiB"
        + (
            f"（权重 {_p(p, 'weights_gib')} GiB + KV 缓存 {_p(p, 'kv_cache_gib')} GiB）"
            if p.get("weights_gib") is not None
            else ""
        )
        + f"；{_p(p, 'gpu')} 可用 {_p(p, 'usable_gib')} GiB（余量 {_p(p, 'headroom_gib')} GiB）"
    ),
    "SHARDED_TO_FIT": lambda p: (
        f"采用 {_p(p, 'sharding')} 分片：DDP 每块 GPU 需要 {_p(p, 'ddp_needed_gib')} GiB，"
        f"超过可用的 {_p(p, 'usable_gib')} GiB"
    ),
    "TENSOR_PARALLEL_TO_FIT": lambda p: (
        f"在同一节点内 {_p(p, 'tensor_parallel')} 路张量并行（x{_p(p, 'data_parallel')} 数据并行）："
        f"不用张量并行时 {_p(p, 'gpu_count')} 块 GPU 上最省的方案每块需要 "
        f"{_p(p, 'without_needed_gib')} GiB，可用 {_p(p, 'usable_gib')} GiB"
    ),
    "CHECKPOINTING_TO_FIT": lambda p: (
        f"开启梯度检查点：不开则每块 GPU 需要 {_p(p, 'needed_without_gib')} GiB"
        f"（可用 {_p(p, 'usable_gib')} GiB）"
    ),
    "SINGLE_GPU_TOO_SMALL": lambda p: (
        f"单块 {_p(p, 'gpu')} 不够：单卡需要 {_p(p, 'needed_gib')} GiB"
        + (
            f"（权重 {_p(p, 'weights_gb')} GB + KV 缓存 {_p(p, 'kv_cache_gb')} GB + 工作区）"
            if p.get("weights_gb") is not None
            else ""
        )
        + f"，而它只有 {_p(p, 'usable_gib')} GiB 可用"
    ),
    "MEETS_DEADLINE": lambda p: (
        f"即使按误差带上限（{_p(p, 'hours_high')} 小时）也能在 {_p(p, 'deadline_hours')} 小时的截止时间内完成"
    ),
    "MEETS_TARGETS": lambda p: (
        f"{_p(p, 'replicas')} 个副本 x TP{_p(p, 'tensor_parallel')} "
        + (
            f"以 {_p(p, 'rate')} 请求/秒运行，"
            if p.get("rate") is not None
            else f"每副本 {_p(p, 'concurrency')} 个并发请求，"
        )
        + f"p50 首 token {_p(p, 'ttft_ms')} ms、每 token {_p(p, 'tpot_ms')} ms"
        f"（目标 {_p(p, 'ttft_target_ms', '-')} ms、{_p(p, 'tpot_target_ms', '-')} ms）"
    ),
    "BANDWIDTH_BOUND": lambda p: (
        "受显存带宽限制：速度由带宽决定"
        + (f"（{_p(p, 'bandwidth_gb_per_s')} GB/s）" if p.get("bandwidth_gb_per_s") else "")
    ),
    "COMPUTE_BOUND": lambda p: (
        "受算力限制：速度由张量核心峰值决定" + (f"（MFU {float(p['mfu']):.0%}）" if p.get("mfu") else "")
    ),
    "BEST_FOR_OBJECTIVE": lambda p: f"按目标（{_p(p, 'objective')}）最优",
    "WITHIN_ERROR_OF_BEST": lambda p: (
        f"与最优方案的差距在估计误差之内：数值为最优的 {_p(p, 'ratio')} 倍，"
        f"跨 GPU 比值的不确定度约 {_p(p, 'uncertainty_pct')}%"
    ),
    "MEASURED_HERE": lambda p: f"该配置在 {_p(p, 'gpu')} 上有实测数据",
    "MULTI_NODE": lambda p: f"跨 {_p(p, 'nodes')} 个节点，每节点 {_p(p, 'gpus_per_node')} 块 GPU",
    "QUANTISED_WEIGHTS": lambda p: f"{_p(p, 'quant_method')} 量化权重",
    "GLOBAL_BATCH_HELD": lambda p: (
        f"不同 GPU 数量下全局批大小（{_p(p, 'global_batch')} 条序列）保持不变（梯度累积）"
    ),
    "NO_OPTION": lambda p: f"没有满足约束的方案；{_p(p, 'excluded')} 种 GPU 被排除（见 excluded）",
    "NO_PLAN_MEETS_DEADLINE": lambda p: (
        f"没有方案能在 {_p(p, 'deadline_hours')} 小时期限内完成（按区间上限）；列出找到的最快方案："
        f"{_p(p, 'gpu_count')} 块 {_p(p, 'gpu')}，{_p(p, 'hours')} 小时（最多 {_p(p, 'hours_high')} 小时）"
    ),
    "ASSUMED_OPTIMIZER_STATES": lambda p: (
        f"优化器状态：{_p(p, 'precision')} AdamW，权重、梯度与两个动量每参数 {_p(p, 'bytes_per_param')} 字节；"
        f"另一种常见做法（{_p(p, 'other_precision')}，每参数 {_p(p, 'other_bytes_per_param')} 字节）"
        + (
            f"在 {_p(p, 'gpu_count')} 块 GPU 上每块需 {_p(p, 'other_needed_gib')} GiB（可用 {_p(p, 'usable_gib')} GiB："
            + ("放得下）" if p.get("other_fits") else "放不下）")
            if p.get("other_needed_gib") is not None
            else ""
        )
    ),
    "ASSUMED_LOOP": lambda p: (
        f"训练循环：{_p(p, 'loop')}" + ("" if p.get("stated") else "（未指定：区间上限覆盖保留输出的循环）")
    ),
    "ASSUMED_STACK": lambda p: f"训练软件栈：{_p(p, 'stack')}",
    "ASSUMED_NETWORK": lambda p: f"节点布局与网络：{_p(p, 'network')}",
    "ASSUMED_ENGINE": lambda p: (
        f"推理引擎：{_p(p, 'engine')}" + ("" if p.get("stated") else "（假定：请求未指定）")
    ),
    "ASSUMED_PRICES": lambda p: (
        f"价格：{_p(p, 'provider')} {_p(p, 'instance_type')} {_p(p, 'pricing_model')}，"
        f"{_money(p, 'per_hour')} {_p(p, 'currency')}/小时，"
        + (
            f"{_p(p, 'age_days_at_least')} 天前的价格（有日期）"
            if p.get("age_is_lower_bound") is False
            else f"至少 {_p(p, 'age_days_at_least')} 天前的价格（实际日期未知：从读取目录副本之日算起）"
        )
        + ("，已过期" if p.get("stale") else "")
    ),
    "ASSUMED_BAND": lambda p: f"区间为留出误差的 {_p(p, 'level')} 区间",
    "ENGINE_ASSUMED": lambda p: f"请求给出了负载但未指定推理引擎：按 {_p(p, 'engine')} 连续批处理估计",
    "LONG_RUN": lambda p: (
        f"首选方案需要 {_p(p, 'hours')} 小时（{_p(p, 'years')} 年）"
        + (
            f"；成本不超过其 +{_p(p, 'cost_slack_pct')}% 的最快方案是 {_p(p, 'faster_gpu_count')} 块 "
            f"{_p(p, 'faster_gpu')}，{_p(p, 'faster_hours')} 小时"
            + (
                f"（成本为其 {_p(p, 'faster_cost_ratio')} 倍）"
                if p.get("faster_cost_ratio") is not None
                else ""
            )
            if p.get("faster_gpu")
            else f"；未找到成本在 +{_p(p, 'cost_slack_pct')}% 以内的更快方案"
        )
    ),
    "WITH_GRADIENT_CHECKPOINTING": lambda p: _zh_whatif("开启梯度检查点", p),
    "WITH_QLORA": lambda p: _zh_whatif("改用 QLoRA（4 比特基座）", p),
    "WITH_FUSED_OPTIMIZER": lambda p: _zh_whatif("使用融合 AdamW（optimizer_impl fused）", p),
    "WITH_FP8_WEIGHTS": lambda p: (
        f"改用 FP8 权重后，一个副本在 {_p(p, 'gpu')} 上只需 TP{_p(p, 'tensor_parallel')}"
        f"（原为 TP{_p(p, 'instead_of')}；每块 {_p(p, 'needed_gib')} / {_p(p, 'usable_gib')} GiB）"
    ),
}


def _zh_memory(p: Mapping[str, Any]) -> str:
    if p.get("needed_gib") is None:
        return f"{_p(p, 'gpu')} 在允许的数量下都放不下该任务（可用 {_p(p, 'usable_gib')} GiB）"
    how = ""
    if p.get("tensor_parallel") and int(p["tensor_parallel"]) > 1:
        how = f"（TP{_p(p, 'tensor_parallel')}）"
    elif p.get("sharding") not in (None, "none"):
        how = f"（{_p(p, 'gpu_count')} 块 GPU 上 {_p(p, 'sharding')} 分片" + (
            "并开启梯度检查点）" if p.get("gradient_checkpointing") else "）"
        )
    single = (
        f"；单卡需要 {_p(p, 'single_gpu_needed_gib')} GiB"
        if p.get("single_gpu_needed_gib") is not None
        else ""
    )
    return f"每块 GPU 需要 {_p(p, 'needed_gib')} GiB{how}{single}；{_p(p, 'gpu')} 只有 {_p(p, 'usable_gib')} GiB 可用"


def _zh_whatif(what: str, p: Mapping[str, Any]) -> str:
    instead = f"（原需 {_p(p, 'instead_of')} 块）" if p.get("instead_of") is not None else ""
    return (
        f"{what}后，{_p(p, 'gpu_count')} 块 {_p(p, 'gpu')} 即可放下{instead}"
        f"（每块 {_p(p, 'needed_gib')} / {_p(p, 'usable_gib')} GiB）"
    )


TEMPLATES: dict[Lang, dict[str, Template]] = {"en": EN, "zh": ZH}


def sentence(code: str, params: Mapping[str, Any], lang: Lang = "en") -> str:
    t = TEMPLATES.get(lang, EN).get(code) or EN.get(code)
    return t(params) if t is not None else code


def _reason(r: Reason, lang: Lang = "en") -> ReasonOut:
    params = dict(r.params)
    return ReasonOut(code=r.code, params=params, message=sentence(r.code, params, lang))


def localise(doc: dict[str, Any], lang: Lang) -> dict[str, Any]:
    """The stored (English) document with every sentence rebuilt in ``lang``."""
    if lang == "en":
        return doc

    def fix(item: dict[str, Any]) -> dict[str, Any]:
        return {**item, "message": sentence(item["code"], item.get("params") or {}, lang)}

    out = dict(doc)
    out["options"] = [
        {
            **o,
            "reasons": [fix(r) for r in o.get("reasons", [])],
            "warnings": [fix(r) for r in o.get("warnings", [])],
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


def _cost(o: Option) -> CostOut | None:
    qt = o.quote
    if qt is None:
        tco_doc = _tco(o)
        if tco_doc is None or not tco_doc.get("available"):
            return None
        return CostOut(currency=tco_doc["currency"], tco=tco_doc, network=_network(o))
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


def _objective_unit(o: Option, objective: str) -> str:
    if objective == "fastest":
        if o.train is not None:
            return "h" if o.hours is not None else "s per million tokens"
        return "s per output token (p50 TPOT)"
    if objective == "perf_per_watt":
        return "W per token/s"
    if objective == "cost_per_million_tokens":
        return "currency per million tokens"
    return (
        "currency (run)"
        if o.run_cost is not None
        else "currency per hour"
        if o.serve
        else "currency per million tokens"
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
        warnings=[ReasonOut(code=w.code, params={}, message=w.message) for w in e.warnings],
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
    time_unit = "s TPOT" if o.serve is not None else "h" if o.hours is not None else "s/1M tokens"
    cur = o.quote.currency if o.quote is not None else "USD"
    if o.run_cost is not None:
        return time_unit, f"{cur}/run"
    return time_unit, f"{cur}/1M tokens" if o.cost_per_million_tokens is not None else f"{cur}/h"


def _frontier(rec: Any) -> list[FrontierPoint]:
    """The time-vs-cost frontier with explicit units, the faster and the cheaper neighbour of
    option #1 marked and every point's ratios to #1."""
    ranks = {(o.gpu.slug, o.gpu_count): o.rank for o in rec.options}
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
                rank=ranks.get((o.gpu.slug, o.gpu_count)),
            )
        )
    return out


def document(outcome: RecommendOutcome) -> dict[str, Any]:
    """The English answer as stored and sent (JSON-ready)."""
    rec = outcome.recommendation
    {(o.gpu.slug, o.gpu_count): o.rank for o in rec.options}
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
        excluded=[
            ExclusionOut(
                gpu=_gpu(x),
                code=x.reason.code,
                params=dict(x.reason.params),
                message=sentence(x.reason.code, x.reason.params),
                also=[_reason(r) for r in x.also],
            )
            for x in rec.excluded
        ],
        what_if=[
            WhatIfOut(
                code=w.code,
                params=dict(w.params),
                message=sentence(w.code, w.params),
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
    return resp.model_dump(mode="json")
