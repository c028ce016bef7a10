"""The recommender's reasons in words: one template table per language (en, zh), keyed by
reason code and form (:data:`service.core.recommend.reasons.FORMS`).

Templates are ``str.format`` strings whose placeholders are exactly the form's parameters
(tests/api/test_recommend_sentences.py checks it). Format specs: none (numbers to one decimal,
lists joined), ``upper`` (upper-cased text or list), ``?yes|no`` (a flag's words), or any
Python spec (``,.2f``, ``.0%``).
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any, Final

from service.core.recommend.reasons import ReasonCode as C
from service.core.recommend.reasons import form_name

Table = Mapping[C, Mapping[str, str]]

_SERVING_FITS_EN = (
    "fits: needs {needed_gib} GiB ({needed_gb} GB) per GPU at the band's upper end ({weights_gib} GiB "
    "weights + {kv_cache_gib} GiB KV cache; {weights_gb} GB + {kv_cache_gb} GB) on {gpu_count} GPU(s) at "
    "TP{tensor_parallel}; the {gpu} has {usable_gib} GiB usable ({usable_gb:,.2f} GB; {headroom_gib} GiB headroom)"
)
_TARGETS_EN = {
    "both": "(targets: {ttft_target_ms} ms, {tpot_target_ms} ms)",
    "ttft": "(target TTFT: {ttft_target_ms} ms)",
    "tpot": "(target TPOT: {tpot_target_ms} ms)",
}
_LOADS_EN = {"rate": "{rate} req/s", "concurrency": "{concurrency} requests in flight per replica"}
_WHATIF_EN = " it fits on {gpu_count}x {gpu} ({needed_gib} of {usable_gib} GiB per GPU)"
_WHATIF_INSTEAD_EN = " it fits on {gpu_count}x {gpu} instead of the {instead_of} it needs as asked ({needed_gib} of {usable_gib} GiB per GPU)"
_RECIPE_EN = (
    "optimizer states: {precision} AdamW, {bytes_per_param} B per parameter for weights, gradients and "
    "both moments; the other common recipe ({other_precision}, {other_bytes_per_param} B per parameter)"
)
_RECIPE_GPU_EN = " needs {other_needed_gib} GiB per GPU at {gpu_count} GPU(s) ({usable_gib} GiB usable: "
_LONG_RUN_EN = "the first plan takes {hours} h ({years} years)"
_FASTER_EN = "; the fastest plan within +{cost_slack_pct} % of its cost is {faster_gpu_count}x {faster_gpu}, {faster_hours} h"
_MEM_SERVING_EN = (
    "needs {needed_gib} GiB per GPU at TP{tensor_parallel} on {gpu_count} GPU(s) ({weights_gb} GB of weights + "
    "{kv_cache_gb} GB of KV cache + working set = {needed_gb} GB against {usable_gb:,.2f} GB usable; "
    "{weights_gib} GiB + {kv_cache_gib} GiB); the {gpu} has {usable_gib} GiB usable"
)
_MEM_TRAIN_EN = (
    "needs {needed_gib} GiB per GPU on {gpu_count} GPU(s) (sharding {sharding}, gradient checkpointing "
    "{gradient_checkpointing:?on|off})"
)
_MEM_TRAIN_TP_EN = (
    "needs {needed_gib} GiB per GPU on {gpu_count} GPU(s) (TP{tensor_parallel}, sharding {sharding}, "
    "gradient checkpointing {gradient_checkpointing:?on|off})"
)
_TP_FIT_EN = (
    "tensor parallelism over {tensor_parallel} GPUs of one node (x{data_parallel} data-parallel, gradient "
    "checkpointing {gradient_checkpointing:?on|off}) on {gpu_count} GPUs"
)
_PRICE_EN = "prices: {provider} {instance_type} {pricing_model}, {per_hour:,.2f} {currency}/h, "
_BUDGET_EN = {"per_hour": "per hour", "per_run": "for the run (band upper end)", "purchase": "to buy"}

EN: Final[Table] = {
    C.EXCLUDED_BY_USER: {"": "the {gpu} is in excluded_gpus"},
    C.NOT_ALLOWED: {"": "the {gpu} is not in allowed_gpus"},
    C.NOT_IN_INVENTORY: {
        "": "the {gpu} is not in the inventory",
        "none_free": "the inventory has {free} free {gpu}",
    },
    C.VENDOR_NOT_ALLOWED: {"": "the {gpu} is made by {vendor}, not an allowed vendor ({allowed})"},
    C.FORM_FACTOR: {
        "": "the {gpu} is a {form_factor:upper} part; allowed: {allowed:upper}",
        "unknown": "the {gpu} has no stated form factor; allowed: {allowed:upper}",
    },
    C.NO_NVLINK: {"": "the {gpu} has no NVLink and NVLink is required"},
    C.OVER_POWER_CAP: {
        "per_gpu": "the {gpu} draws {tdp_w} W, over the {cap_w} W cap per GPU",
        "total": "one {gpu} draws {tdp_w} W: not even one fits the {cap_w} W total cap",
    },
    C.POWER_UNKNOWN: {"": "the {gpu} has no sourced TDP, so the {cap_w} W cap cannot be checked"},
    C.NO_MEMORY_FIGURE: {"": "the {gpu} has no sourced memory size; no fit can be computed"},
    C.PRECISION_UNSUPPORTED: {"": "the {gpu} does not support {precision}"},
    C.ENGINE_UNSUPPORTED: {"": "{engine} does not run on the {gpu} ({vendor}): use vllm or sglang"},
    C.MEMORY_INSUFFICIENT: {
        "replica": "the {gpu} cannot hold one replica at TP{tensor_parallel}",
        "serving": _MEM_SERVING_EN,
        "serving_span_engine": _MEM_SERVING_EN
        + "; one replica over {span_nodes} nodes (TP{span_tensor_parallel}) "
        "would hold it, which is searched for vllm and sglang, not this engine",
        "serving_span_free_nodes": _MEM_SERVING_EN + "; one replica over {span_nodes} nodes "
        "(TP{span_tensor_parallel}) would hold it, but the inventory has fewer nodes with that many GPUs free",
        "serving_span_max_gpus": _MEM_SERVING_EN + "; one replica over {span_nodes} nodes "
        "(TP{span_tensor_parallel}) would hold it: max_gpus allows fewer GPUs",
        "training_none": "the {gpu} cannot hold the job on up to {gpu_count} GPU(s) ({usable_gib} GiB usable)",
        "training_none_single": (
            "the {gpu} cannot hold the job on up to {gpu_count} GPU(s) ({usable_gib} GiB usable); "
            "{single_gpu_needed_gib} GiB on one GPU"
        ),
        "training": _MEM_TRAIN_EN + "; the {gpu} has {usable_gib} GiB usable",
        "training_single": (
            _MEM_TRAIN_EN + "; {single_gpu_needed_gib} GiB on one GPU; the {gpu} has {usable_gib} GiB usable"
        ),
        "training_tp": _MEM_TRAIN_TP_EN + "; the {gpu} has {usable_gib} GiB usable",
        "training_tp_single": (
            _MEM_TRAIN_TP_EN
            + "; {single_gpu_needed_gib} GiB on one GPU; the {gpu} has {usable_gib} GiB usable"
        ),
    },
    C.NO_PLACEMENT: {
        "": "the {gpu} needs tensor parallelism over {tensor_parallel} GPUs in one node, but the "
        "inventory has {free_per_node} free per node"
    },
    C.OVER_GPU_LIMIT: {
        "": "the {gpu} needs more than {max_gpus} GPUs",
        "replicas": "the {gpu} needs more than {replicas_needed_more_than} replicas of TP{tensor_parallel}, "
        "over {max_gpus} GPUs, to serve the load within the targets",
        "replicas_guess": "the {gpu} needs at least {replicas_at_least} replicas of TP{tensor_parallel} to "
        "serve the load within the targets, and {max_gpus} GPUs hold at most {replicas_needed_more_than}",
    },
    C.NO_TIME_ESTIMATE: {
        "": "no time can be estimated for the {gpu}: no sourced {missing}",
        "fits": "the {gpu} fits ({needed_gib} of {usable_gib} GiB usable on {gpu_count} GPU(s)), but no time "
        "can be estimated: the catalog has no sourced {missing} for it",
    },
    C.MISSES_DEADLINE: {
        "": "{gpu_count}x {gpu} take up to {hours_high} h (about {hours} h), over the {deadline_hours} h "
        "deadline, and no more GPUs are allowed ({max_gpus})",
        "all_tried": "{gpu_count}x {gpu} take up to {hours_high} h (about {hours} h), over the {deadline_hours} h "
        "deadline, and no more GPUs are allowed ({max_gpus}; up to {largest_tried} tried)",
        "largest_tried": "{gpu_count}x {gpu} take up to {hours_high} h (about {hours} h), over the "
        "{deadline_hours} h deadline, and no count tried is faster (up to {largest_tried} GPUs, whole nodes "
        "within max_gpus {max_gpus})",
    },
    C.MISSES_TTFT: {
        "": "even a lone request waits {ttft_ms} ms for its first token on the {gpu} (TP{tensor_parallel}); "
        "the target is {target_ms} ms",
        "concurrency": "with {concurrency} requests in flight per replica a request waits {ttft_ms} ms for its "
        "first token on the {gpu} (TP{tensor_parallel}, the closest of the degrees tried); the target is "
        "{target_ms} ms",
    },
    C.MISSES_TPOT: {
        "": "even a lone request takes {tpot_ms} ms per output token on the {gpu} (TP{tensor_parallel}); "
        "the target is {target_ms} ms",
        "concurrency": "with {concurrency} requests in flight per replica each takes {tpot_ms} ms per output "
        "token on the {gpu} (TP{tensor_parallel}, the closest of the degrees tried); the target is {target_ms} ms",
    },
    C.PROVENANCE_BELOW_MIN: {"": "the {gpu} figures are {provenance}, below the required {minimum}"},
    C.BAND_TOO_WIDE: {"": "the {gpu} band is {band_pct}% wide, over the {max_band_pct}% allowed"},
    C.NO_PRICE: {
        "": "no rentable price for {gpu_count}x {gpu} in {currency} ({pricing_models})",
        "providers": "no rentable price for {gpu_count}x {gpu} in {currency} from {providers} ({pricing_models})",
    },
    C.NO_MATCHING_INSTANCE: {
        "": "no priced instance type holds {nodes} x {gpus_per_node} {gpu} ({gpu_count} GPUs)"
        "{needs_nvlink:? linked by NVLink|}{replicas:? (serving replicas)|}"
        "{suspect_only:?, except at prices flagged suspect|}: {detail}"
    },
    C.NO_PURCHASE_PRICE: {"": "no purchase price for the {gpu} ({gpu_count} GPUs), so no TCO"},
    C.CAPEX_UNKNOWN: {
        "": "owned {gpu} x{gpu_count}: no purchase price is known, so the cost is electricity only "
        "({energy_per_hour:.2f} {currency}/h) and the capital cost is unknown (the inventory's "
        "purchase_price_per_gpu gives it)"
    },
    C.NO_POWER_FIGURE: {
        "": "the {gpu} has no power figure, so no energy cost and no TCO for {gpu_count} GPUs"
    },
    C.OVER_BUDGET: {
        what: "{gpu_count}x {gpu} cost {cost:,.2f} {currency} " + words + ", over the budget of {budget:,.2f}"
        for what, words in _BUDGET_EN.items()
    },
    C.FITS: {
        "": "fits: needs {needed_gib} GiB per GPU at the band's upper end on {gpu_count} GPU(s); the {gpu} "
        "has {usable_gib} GiB usable ({headroom_gib} GiB headroom)",
        "serving": _SERVING_FITS_EN,
    },
    C.SHARDED_TO_FIT: {
        "": "sharded with {sharding} over {gpu_count} GPUs: a DDP replica needs {ddp_needed_gib} GiB per GPU, "
        "over the {usable_gib} GiB usable"
    },
    C.TENSOR_PARALLEL_TO_FIT: {
        "": _TP_FIT_EN + "; no plan without it fits ({usable_gib} GiB usable)",
        "without": _TP_FIT_EN + ": without it the lightest plan needs {without_needed_gib} GiB per GPU, "
        "{usable_gib} GiB usable",
        "global_batch": _TP_FIT_EN + ": the global batch of {global_batch} does not split over "
        "{gpu_count} data-parallel GPUs, so each sequence is shared ({usable_gib} GiB usable)",
    },
    C.CHECKPOINTING_TO_FIT: {
        "": "gradient checkpointing on: without it {needed_without_gib} GiB per GPU would be needed "
        "({usable_gib} GiB usable)"
    },
    C.SINGLE_GPU_TOO_SMALL: {
        "": "one {gpu} is not enough: the job needs {needed_gib} GiB on a single GPU; it has {usable_gib} GiB usable",
        "serving": "one {gpu} is not enough: the job needs {needed_gib} GiB on a single GPU ({weights_gb} GB of "
        "weights + {kv_cache_gb} GB of KV cache + working set = {needed_gb} GB; {weights_gib} GiB + "
        "{kv_cache_gib} GiB); it has {usable_gib} GiB usable ({usable_gb:,.2f} GB)",
    },
    C.MEETS_DEADLINE: {
        "": "finishes within the {deadline_hours} h deadline even at the band's upper end ({hours_high} h)"
    },
    C.MEETS_TARGETS: {
        f"{layout}{load}_{t}": who + " serve " + lw + " at p50 TTFT {ttft_ms} ms and TPOT {tpot_ms} ms " + tw
        for layout, who in (
            ("", "{replicas} replica(s) x TP{tensor_parallel}"),
            ("pools_", "a {prefill_gpus}-GPU prefill pool and a {decode_gpus}-GPU decode pool"),
        )
        for load, lw in _LOADS_EN.items()
        for t, tw in _TARGETS_EN.items()
    },
    C.BANDWIDTH_BOUND: {
        "": "memory-bandwidth bound: the bandwidth decides the speed",
        "mfu": "memory-bandwidth bound: the bandwidth decides the speed (MFU {mfu:.0%})",
        "bandwidth": "memory-bandwidth bound: the bandwidth decides the speed ({bandwidth_gb_per_s} GB/s)",
    },
    C.COMPUTE_BOUND: {
        "": "compute bound: the tensor-core peak decides the speed",
        "mfu": "compute bound: the tensor-core peak decides the speed (MFU {mfu:.0%})",
    },
    C.HOST_BOUND: {
        "": "host bound: the CPU's kernel launches and per-step work take {share_pct}% of the step "
        "(MFU {mfu:.0%}); a faster GPU buys little here, a larger batch per step does",
    },
    C.COMMUNICATION_BOUND: {
        "": "communication bound: the collectives take {share_pct}% of the step (MFU {mfu:.0%}); "
        "a faster link or network, or fewer GPUs, buys more than a faster GPU",
    },
    C.BEST_FOR_OBJECTIVE: {"": "best for the objective ({objective})"},
    C.WITHIN_ERROR_OF_BEST: {
        "": "within the estimate's error of the best: {ratio}x its value, and the cross-GPU ratio is "
        "uncertain by about {uncertainty_pct}%"
    },
    C.MEASURED_HERE: {"": "this exact configuration was measured on the {gpu}"},
    C.PUBLISHED_RUN: {
        "": "a published run of this exact configuration with {engine} on the {gpu} ({source}) made "
        "{tokens_per_s_per_gpu} output tokens/s per GPU; this plan's throughput is that run's"
    },
    C.PUBLISHED_RECORD: {
        "": "{engine}'s {runs} published runs of this model on the {gpu}, at the configurations they ran "
        "({source}), made x{ratio:.2f} of the model's throughput (x{low:.2f}-x{high:.2f}); this plan's figure "
        "is the model's and its TPOT band covers that",
        "tp": "{engine}'s {runs} published runs of this model on the {gpu} at tensor parallelism "
        "{tensor_parallel}, at the configurations they ran ({source}), made x{ratio:.2f} of the model's "
        "throughput (x{low:.2f}-x{high:.2f}); this plan's figure is the model's and its TPOT band covers that",
    },
    C.MULTI_NODE: {
        "": "spans {nodes} nodes of {gpus_per_node} GPUs",
        "network": "spans {nodes} nodes of {gpus_per_node} GPUs, timed on its network: {network}",
    },
    C.QUANTISED_WEIGHTS: {"": "{quant_method} weights"},
    C.EXPERT_PARALLEL: {
        "": "expert parallelism: the {experts} routed experts spread whole over each replica's "
        "{tensor_parallel} GPUs ({experts_per_gpu} per GPU), attention data-parallel, an all-to-all per MoE layer"
    },
    C.DISAGGREGATED: {
        "": "disaggregated: prompts on {prefill_gpus} GPU(s) ({prefill_busy_pct}% busy), generation on "
        "{decode_gpus} (no prompt chunks in its iterations); each prompt's KV cache moves over {link} in "
        "{kv_transfer_ms} ms"
    },
    C.LITTLE_HEADROOM: {
        "": "little headroom: the targets hold up to {capacity_requests_per_s} req/s, {headroom_pct}% above "
        "the load, so a small rise misses them; the mean TTFT is {ttft_mean_ms} ms (the targets are judged "
        "on the p50; near capacity the admission queue's tail grows)"
    },
    C.FASTER_AT_NEAR_COST: {
        "": "the fastest plan within {slack_pct:g}% of the cheapest run: {gpu_count} GPU(s) would cost "
        "{cost:,.2f} {currency}, {extra_pct:.2g}% less, and take {hours} h"
    },
    C.WITH_GRADIENT_CHECKPOINTING: {
        "": "with gradient checkpointing" + _WHATIF_EN,
        "instead": "with gradient checkpointing" + _WHATIF_INSTEAD_EN,
    },
    C.WITH_QLORA: {
        "": "with QLoRA (4-bit base) instead of LoRA" + _WHATIF_EN,
        "instead": "with QLoRA (4-bit base) instead of LoRA" + _WHATIF_INSTEAD_EN,
    },
    C.WITH_FUSED_OPTIMIZER: {
        "": "with the fused AdamW step (optimizer_impl fused)" + _WHATIF_EN,
        "instead": "with the fused AdamW step (optimizer_impl fused)" + _WHATIF_INSTEAD_EN,
    },
    C.WITH_GRADIENT_ACCUMULATION: {
        "": "with micro-batch 1 and gradient accumulation, {global_batch} sequences per optimizer step "
        "(workload.batch_size 1, global_batch {global_batch})" + _WHATIF_EN,
        "instead": "with micro-batch 1 and gradient accumulation, {global_batch} sequences per optimizer step "
        "(workload.batch_size 1, global_batch {global_batch})" + _WHATIF_INSTEAD_EN,
    },
    C.WITH_MORE_GPUS: {
        "": "with max_gpus {gpu_count} instead of {max_gpus} ({nodes} node(s)) it fits on {gpu_count}x {gpu} "
        "({needed_gib} of {usable_gib} GiB per GPU): the sharded states shrink with every GPU added",
        "deadline": "with max_gpus {gpu_count} instead of {max_gpus} ({nodes} node(s)) it fits on {gpu_count}x "
        "{gpu} ({needed_gib} of {usable_gib} GiB per GPU) and finishes within the {deadline_hours} h deadline "
        "even at the band's upper end ({hours_high} h)",
    },
    C.WITH_FP8_WEIGHTS: {
        "": "with FP8 weights one replica fits on TP{tensor_parallel} of the {gpu} instead of "
        "TP{instead_of} ({needed_gib} of {usable_gib} GiB)"
    },
    C.WITH_FP16: {
        "training": "with precision {precision} (the {gpu} has FP16 tensor cores but no bf16; training in "
        "fp16 scales its loss) it runs on {gpu_count}x {gpu} ({needed_gib} of {usable_gib} GiB per GPU)",
        "serving": "with precision {precision} (the {gpu} has FP16 tensor cores but no bf16; the weights "
        "are served in fp16) it runs on {gpu_count}x {gpu} ({needed_gib} of {usable_gib} GiB per GPU)",
    },
    C.WITH_QUANTIZATION: {
        "": "with {quant_method} weights (constraints.allow_quantization) it is served on {gpu_count}x {gpu}, "
        "replicas of TP{tensor_parallel} ({needed_gib} of {usable_gib} GiB per GPU)"
    },
    C.NO_OPTION: {"": "no option meets the constraints; {excluded} GPUs were excluded (see excluded)"},
    C.NO_PLAN_MEETS_DEADLINE: {
        "": "no plan meets the {deadline_hours} h deadline; the fastest plan found is shown: "
        "{gpu_count}x {gpu}, {hours} h",
        "band": "no plan meets the {deadline_hours} h deadline at the band's upper end; the fastest plan "
        "found is shown: {gpu_count}x {gpu}, {hours} h (up to {hours_high} h)",
        "more": "no plan meets the {deadline_hours} h deadline at the band's upper end; the fastest plan "
        "found is shown: {gpu_count}x {gpu}, {hours} h (up to {hours_high} h). Even at perfect scaling "
        "the deadline needs at least {gpus_at_least} of them: raise max_gpus or the deadline",
    },
    C.LONG_RUN: {
        "": _LONG_RUN_EN + "; no faster plan within +{cost_slack_pct} % of its cost was found",
        "faster": _LONG_RUN_EN + _FASTER_EN,
        "faster_cost": _LONG_RUN_EN + _FASTER_EN + " ({faster_cost_ratio}x the cost)",
    },
    C.ENGINE_ASSUMED: {
        "": "no engine was given for a request load: continuous batching with {engine} is assumed"
    },
    C.GLOBAL_BATCH_HELD: {
        "": "the global batch ({global_batch} sequences) is held fixed across GPU counts (gradient accumulation)"
    },
    C.BEYOND_CONTEXT: {
        "": "{tokens} tokens per sequence exceed {model}'s max_position_embeddings ({limit}): engines refuse "
        "that length without RoPE scaling (vLLM's --max-model-len), and the model was not trained for it; "
        "the figures are what that length would cost"
    },
    C.ASSUMED_OPTIMIZER_STATES: {
        "": _RECIPE_EN,
        "other_fits": _RECIPE_EN + _RECIPE_GPU_EN + "fits)",
        "other_too_big": _RECIPE_EN + _RECIPE_GPU_EN + "does not fit)",
    },
    C.ASSUMED_LOOP: {
        "stated": "training loop: {loop}",
        "default": "training loop: {loop} (not stated: the band's upper end covers a loop that keeps the outputs)",
    },
    C.ASSUMED_STACK: {"": "training stack: {stack}"},
    C.ASSUMED_NETWORK: {"": "layout and network: {network}"},
    C.ASSUMED_ENGINE: {
        "stated": "serving engine: {engine}",
        "default": "serving engine: {engine} (assumed: none was given)",
    },
    C.ASSUMED_PRICES: {
        "": _PRICE_EN + "at least {age_days_at_least} day(s) old",
        "dated": _PRICE_EN + "{age_days_at_least} day(s) old (dated){stale:?, stale|}",
        "undated": _PRICE_EN + "at least {age_days_at_least} day(s) old (its real date is unknown: the age "
        "counts from when the catalog copy was read){stale:?, stale|}",
    },
    C.ASSUMED_BAND: {"": "bands are the {level} interval of the held-out error"},
    C.ASSUMED_USABLE_MEMORY: {
        "": "the {gpu}'s usable memory is not sourced: its physical {physical_gib} GiB decided the fit, which "
        "may be optimistic (the driver and ECC reserve some)"
    },
    C.ASSUMED_WHOLE_NODES: {
        "": "training spans nodes only whole: max_gpus {max_gpus} is between nodes of {gpus_per_node} GPUs, so at "
        "most {largest} GPUs were tried (a partial node is paid for, and its collectives wait on the slowest link)"
    },
}

_SERVING_FITS_ZH = (
    "放得下：按误差带上限每块 GPU 需要 {needed_gib} GiB（{needed_gb} GB；权重 {weights_gib} GiB + KV 缓存 "
    "{kv_cache_gib} GiB，即 {weights_gb} GB + {kv_cache_gb} GB），共 {gpu_count} 块 GPU、TP{tensor_parallel}；"
    "{gpu} 可用 {usable_gib} GiB（{usable_gb:,.2f} GB；余量 {headroom_gib} GiB）"
)
_TARGETS_ZH = {
    "both": "（目标 {ttft_target_ms} ms、{tpot_target_ms} ms）",
    "ttft": "（首 token 目标 {ttft_target_ms} ms）",
    "tpot": "（每 token 目标 {tpot_target_ms} ms）",
}
_LOADS_ZH = {"rate": "以 {rate} 请求/秒运行，", "concurrency": "每副本 {concurrency} 个并发请求，"}
_WHATIF_ZH = "后，{gpu_count} 块 {gpu} 即可放下（每块 {needed_gib} / {usable_gib} GiB）"
_WHATIF_INSTEAD_ZH = "后，{gpu_count} 块 {gpu} 即可放下（按原设置至少需 {instead_of} 块）（每块 {needed_gib} / {usable_gib} GiB）"
_RECIPE_ZH = (
    "优化器状态：{precision} AdamW，权重、梯度与两个动量每参数 {bytes_per_param} 字节；"
    "另一种常见做法（{other_precision}，每参数 {other_bytes_per_param} 字节）"
)
_RECIPE_GPU_ZH = "在 {gpu_count} 块 GPU 上每块需 {other_needed_gib} GiB（可用 {usable_gib} GiB："
_LONG_RUN_ZH = "首选方案需要 {hours} 小时（{years} 年）"
_FASTER_ZH = (
    "；成本不超过其 +{cost_slack_pct}% 的最快方案是 {faster_gpu_count} 块 {faster_gpu}，{faster_hours} 小时"
)
_MEM_SERVING_ZH = (
    "每块 GPU 需要 {needed_gib} GiB（TP{tensor_parallel}，共 {gpu_count} 块；权重 {weights_gb} GB + KV 缓存 "
    "{kv_cache_gb} GB + 工作区 = {needed_gb} GB，可用 {usable_gb:,.2f} GB；即 {weights_gib} GiB + "
    "{kv_cache_gib} GiB）；{gpu} 只有 {usable_gib} GiB 可用"
)
_MEM_TRAIN_ZH = (
    "在 {gpu_count} 块 GPU 上每块需要 {needed_gib} GiB（分片 {sharding}，梯度检查点"
    "{gradient_checkpointing:?开启|关闭}）"
)
_MEM_TRAIN_TP_ZH = (
    "在 {gpu_count} 块 GPU 上每块需要 {needed_gib} GiB（TP{tensor_parallel}，分片 {sharding}，梯度检查点"
    "{gradient_checkpointing:?开启|关闭}）"
)
_TP_FIT_ZH = (
    "在 {gpu_count} 块 GPU 上于同一节点内做 {tensor_parallel} 路张量并行（x{data_parallel} 数据并行，梯度检查点"
    "{gradient_checkpointing:?开启|关闭}）"
)
_PRICE_ZH = "价格：{provider} {instance_type} {pricing_model}，{per_hour:,.2f} {currency}/小时，"
_BUDGET_ZH = {"per_hour": "每小时", "per_run": "整次训练（误差带上限）", "purchase": "采购"}

ZH: Final[Table] = {
    C.EXCLUDED_BY_USER: {"": "{gpu} 在 excluded_gpus 中"},
    C.NOT_ALLOWED: {"": "{gpu} 不在 allowed_gpus 中"},
    C.NOT_IN_INVENTORY: {"": "库存中没有 {gpu}", "none_free": "库存中空闲的 {gpu} 为 {free} 块"},
    C.VENDOR_NOT_ALLOWED: {"": "{gpu} 的厂商为 {vendor}，不在允许的厂商之列（{allowed}）"},
    C.FORM_FACTOR: {
        "": "{gpu} 是 {form_factor:upper} 规格；允许的规格：{allowed:upper}",
        "unknown": "{gpu} 没有注明规格；允许的规格：{allowed:upper}",
    },
    C.NO_NVLINK: {"": "{gpu} 没有 NVLink，而约束要求 NVLink"},
    C.OVER_POWER_CAP: {
        "per_gpu": "{gpu} 功耗 {tdp_w} W，超过每卡 {cap_w} W 的上限",
        "total": "一块 {gpu} 功耗 {tdp_w} W，总功耗上限 {cap_w} W 连一块都放不下",
    },
    C.POWER_UNKNOWN: {"": "{gpu} 没有可靠来源的 TDP，无法检查 {cap_w} W 的功耗上限"},
    C.NO_MEMORY_FIGURE: {"": "{gpu} 没有可靠来源的显存容量，无法判断能否放下"},
    C.PRECISION_UNSUPPORTED: {"": "{gpu} 不支持 {precision}"},
    C.ENGINE_UNSUPPORTED: {"": "{engine} 不能在 {gpu}（{vendor}）上运行：请用 vllm 或 sglang"},
    C.MEMORY_INSUFFICIENT: {
        "replica": "{gpu} 在 TP{tensor_parallel} 下放不下一个副本",
        "serving": _MEM_SERVING_ZH,
        "serving_span_engine": _MEM_SERVING_ZH
        + "；跨 {span_nodes} 个节点的单个副本（TP{span_tensor_parallel}）"
        "可以放下，但跨节点只对 vllm 和 sglang 搜索，不含此引擎",
        "serving_span_free_nodes": _MEM_SERVING_ZH
        + "；跨 {span_nodes} 个节点的单个副本（TP{span_tensor_parallel}）"
        "可以放下，但库存中空闲 GPU 足够的节点不够",
        "serving_span_max_gpus": _MEM_SERVING_ZH
        + "；跨 {span_nodes} 个节点的单个副本（TP{span_tensor_parallel}）"
        "可以放下，但 max_gpus 允许的 GPU 不够",
        "training_none": "{gpu} 在最多 {gpu_count} 块的数量下都放不下该任务（每块可用 {usable_gib} GiB）",
        "training_none_single": (
            "{gpu} 在最多 {gpu_count} 块的数量下都放不下该任务（每块可用 {usable_gib} GiB）；"
            "单卡需要 {single_gpu_needed_gib} GiB"
        ),
        "training": _MEM_TRAIN_ZH + "；{gpu} 只有 {usable_gib} GiB 可用",
        "training_single": _MEM_TRAIN_ZH
        + "；单卡需要 {single_gpu_needed_gib} GiB；{gpu} 只有 {usable_gib} GiB 可用",
        "training_tp": _MEM_TRAIN_TP_ZH + "；{gpu} 只有 {usable_gib} GiB 可用",
        "training_tp_single": _MEM_TRAIN_TP_ZH
        + "；单卡需要 {single_gpu_needed_gib} GiB；{gpu} 只有 {usable_gib} GiB 可用",
    },
    C.NO_PLACEMENT: {
        "": "{gpu} 需要在同一节点内做 {tensor_parallel} 路张量并行，但库存每个节点只有 {free_per_node} 块空闲 GPU"
    },
    C.OVER_GPU_LIMIT: {
        "": "{gpu} 需要超过 {max_gpus} 块 GPU",
        "replicas": "{gpu} 需要超过 {replicas_needed_more_than} 个 TP{tensor_parallel} 副本、超过 {max_gpus} 块 "
        "GPU 才能在目标延迟内承载该负载",
        "replicas_guess": "{gpu} 至少需要 {replicas_at_least} 个 TP{tensor_parallel} 副本才能在目标延迟内承载该负载，"
        "而 {max_gpus} 块 GPU 最多容纳 {replicas_needed_more_than} 个",
    },
    C.NO_TIME_ESTIMATE: {
        "": "{gpu} 缺少可靠来源的 {missing}，无法估计时间",
        "fits": "{gpu} 显存够用（{gpu_count} 块 GPU，每块需要 {needed_gib} GiB，可用 {usable_gib} GiB），"
        "但目录里没有它可靠来源的 {missing}，无法估计时间",
    },
    C.MISSES_DEADLINE: {
        "": "{gpu_count} 块 {gpu} 最长需要 {hours_high} 小时（约 {hours} 小时），超过 {deadline_hours} 小时的"
        "截止时间，且不能再增加 GPU（上限 {max_gpus}）",
        "all_tried": "{gpu_count} 块 {gpu} 最长需要 {hours_high} 小时（约 {hours} 小时），超过 {deadline_hours} 小时的"
        "截止时间，且不能再增加 GPU（上限 {max_gpus}；最多试到 {largest_tried} 块）",
        "largest_tried": "{gpu_count} 块 {gpu} 最长需要 {hours_high} 小时（约 {hours} 小时），超过 "
        "{deadline_hours} 小时的截止时间，试过的数量中没有更快的（最多 {largest_tried} 块，在 max_gpus "
        "{max_gpus} 内按整节点）",
    },
    C.MISSES_TTFT: {
        "": "在 {gpu}（TP{tensor_parallel}）上即使只有一个请求，首 token 也要 {ttft_ms} ms，目标是 {target_ms} ms",
        "concurrency": "在 {gpu}（TP{tensor_parallel}，所试并行度中最接近的）上每个副本同时处理 {concurrency} 个请求时，"
        "首 token 要 {ttft_ms} ms，目标是 {target_ms} ms",
    },
    C.MISSES_TPOT: {
        "": "在 {gpu}（TP{tensor_parallel}）上即使只有一个请求，每个输出 token 也要 {tpot_ms} ms，"
        "目标是 {target_ms} ms",
        "concurrency": "在 {gpu}（TP{tensor_parallel}，所试并行度中最接近的）上每个副本同时处理 {concurrency} 个请求时，"
        "每个输出 token 要 {tpot_ms} ms，目标是 {target_ms} ms",
    },
    C.PROVENANCE_BELOW_MIN: {"": "{gpu} 的数据来源为 {provenance}，低于要求的 {minimum}"},
    C.BAND_TOO_WIDE: {"": "{gpu} 的误差带宽 {band_pct}%，超过允许的 {max_band_pct}%"},
    C.NO_PRICE: {
        "": "没有 {gpu_count} 块 {gpu} 的可租用价格（{currency}，{pricing_models}）",
        "providers": "{providers} 没有 {gpu_count} 块 {gpu} 的可租用价格（{currency}，{pricing_models}）",
    },
    C.NO_MATCHING_INSTANCE: {
        "": "没有可租用的实例类型能容纳 {nodes} 个节点 × 每节点 {gpus_per_node} 块 {gpu}（共 {gpu_count} 块）"
        "{needs_nvlink:?（需 NVLink 互联）|}{replicas:?（推理副本）|}{suspect_only:?，可疑价格除外|}：{detail}"
    },
    C.NO_PURCHASE_PRICE: {"": "{gpu} 没有采购价格，无法计算 {gpu_count} 块的 TCO"},
    C.CAPEX_UNKNOWN: {
        "": "自有 {gpu} x{gpu_count}：没有已知采购价格，成本仅计电费（{energy_per_hour:.2f} {currency}/小时），"
        "资本成本未知（可在库存中给出 purchase_price_per_gpu）"
    },
    C.NO_POWER_FIGURE: {"": "{gpu} 没有功耗数据，无法计算 {gpu_count} 块的电费和 TCO"},
    C.OVER_BUDGET: {
        what: "{gpu_count} 块 {gpu} " + words + "花费 {cost:,.2f} {currency}，超出预算 {budget:,.2f}"
        for what, words in _BUDGET_ZH.items()
    },
    C.FITS: {
        "": "放得下：按误差带上限每块 GPU 需要 {needed_gib} GiB（共 {gpu_count} 块）；{gpu} 可用 {usable_gib} GiB"
        "（余量 {headroom_gib} GiB）",
        "serving": _SERVING_FITS_ZH,
    },
    C.SHARDED_TO_FIT: {
        "": "在 {gpu_count} 块 GPU 上采用 {sharding} 分片：DDP 每块 GPU 需要 {ddp_needed_gib} GiB，"
        "超过可用的 {usable_gib} GiB"
    },
    C.TENSOR_PARALLEL_TO_FIT: {
        "": _TP_FIT_ZH + "；不用张量并行时没有方案放得下（可用 {usable_gib} GiB）",
        "without": _TP_FIT_ZH
        + "：不用张量并行时最省的方案每块需要 {without_needed_gib} GiB，可用 {usable_gib} GiB",
        "global_batch": _TP_FIT_ZH
        + "：全局批量 {global_batch} 无法均分到 {gpu_count} 块数据并行 GPU 上，因此由多块 GPU 共同处理每条序列"
        "（可用 {usable_gib} GiB）",
    },
    C.CHECKPOINTING_TO_FIT: {
        "": "开启梯度检查点：不开则每块 GPU 需要 {needed_without_gib} GiB（可用 {usable_gib} GiB）"
    },
    C.SINGLE_GPU_TOO_SMALL: {
        "": "单块 {gpu} 不够：单卡需要 {needed_gib} GiB，而它只有 {usable_gib} GiB 可用",
        "serving": "单块 {gpu} 不够：单卡需要 {needed_gib} GiB（权重 {weights_gb} GB + KV 缓存 {kv_cache_gb} GB + "
        "工作区 = {needed_gb} GB；即 {weights_gib} GiB + {kv_cache_gib} GiB），而它只有 {usable_gib} GiB 可用"
        "（{usable_gb:,.2f} GB）",
    },
    C.MEETS_DEADLINE: {
        "": "即使按误差带上限（{hours_high} 小时）也能在 {deadline_hours} 小时的截止时间内完成"
    },
    C.MEETS_TARGETS: {
        f"{layout}{load}_{t}": who + lw + "p50 首 token {ttft_ms} ms、每 token {tpot_ms} ms" + tw
        for layout, who in (
            ("", "{replicas} 个副本 x TP{tensor_parallel} "),
            ("pools_", "{prefill_gpus} 卡 prefill 池与 {decode_gpus} 卡 decode 池"),
        )
        for load, lw in _LOADS_ZH.items()
        for t, tw in _TARGETS_ZH.items()
    },
    C.BANDWIDTH_BOUND: {
        "": "受显存带宽限制：速度由带宽决定",
        "mfu": "受显存带宽限制：速度由带宽决定（MFU {mfu:.0%}）",
        "bandwidth": "受显存带宽限制：速度由带宽决定（{bandwidth_gb_per_s} GB/s）",
    },
    C.COMPUTE_BOUND: {
        "": "受算力限制：速度由张量核心峰值决定",
        "mfu": "受算力限制：速度由张量核心峰值决定（MFU {mfu:.0%}）",
    },
    C.HOST_BOUND: {
        "": "受主机限制：CPU 的内核启动和每步开销占一步的 {share_pct}%（MFU {mfu:.0%}）；"
        "换更快的 GPU 收效甚微，增大每步的批量才有用",
    },
    C.COMMUNICATION_BOUND: {
        "": "受通信限制：集合通信占一步的 {share_pct}%（MFU {mfu:.0%}）；"
        "更快的互联或网络、或更少的 GPU，比更快的 GPU 更有用",
    },
    C.BEST_FOR_OBJECTIVE: {"": "按目标（{objective}）最优"},
    C.WITHIN_ERROR_OF_BEST: {
        "": "与最优方案的差距在估计误差之内：数值为最优的 {ratio} 倍，跨 GPU 比值的不确定度约 {uncertainty_pct}%"
    },
    C.MEASURED_HERE: {"": "该配置在 {gpu} 上有实测数据"},
    C.PUBLISHED_RUN: {
        "": "{gpu} 上以 {engine} 运行该配置的公开实测（{source}）：每 GPU 每秒 {tokens_per_s_per_gpu} 个输出 token，本方案吞吐即取此值"
    },
    C.PUBLISHED_RECORD: {
        "": "{gpu} 上 {engine} 对该模型的 {runs} 次公开实测（按其各自配置；{source}）吞吐为模型值的 {ratio:.2f} 倍"
        "（{low:.2f}-{high:.2f} 倍）；本方案数值取模型值，其 TPOT 误差带已涵盖此差距",
        "tp": "{gpu} 上 {engine} 以 {tensor_parallel} 路张量并行对该模型的 {runs} 次公开实测（按其各自配置；{source}）"
        "吞吐为模型值的 {ratio:.2f} 倍（{low:.2f}-{high:.2f} 倍）；本方案数值取模型值，其 TPOT 误差带已涵盖此差距",
    },
    C.MULTI_NODE: {
        "": "跨 {nodes} 个节点，每节点 {gpus_per_node} 块 GPU",
        "network": "跨 {nodes} 个节点，每节点 {gpus_per_node} 块 GPU，按其网络计时：{network}",
    },
    C.QUANTISED_WEIGHTS: {"": "{quant_method} 量化权重"},
    C.EXPERT_PARALLEL: {
        "": "专家并行：{experts} 个路由专家整体分布到每个副本的 {tensor_parallel} 块 GPU 上（每块 {experts_per_gpu} 个），"
        "注意力数据并行，每个 MoE 层一次 all-to-all"
    },
    C.DISAGGREGATED: {
        "": "预填充/解码分离：提示词在 {prefill_gpus} 块 GPU 上处理（繁忙 {prefill_busy_pct}%），生成在 {decode_gpus} 块上"
        "（其迭代中没有提示词分块）；每个提示词的 KV 缓存经 {link} 传输，耗时 {kv_transfer_ms} ms"
    },
    C.LITTLE_HEADROOM: {
        "": "余量很小：目标最多在 {capacity_requests_per_s} req/s 下成立，只比负载高 {headroom_pct}%，负载稍增即不达标；"
        "平均 TTFT 为 {ttft_mean_ms} ms（目标按 p50 判定；接近容量时准入队列的尾部会变长）"
    },
    C.FASTER_AT_NEAR_COST: {
        "": "成本在最便宜方案 {slack_pct:g}% 以内的最快方案：{gpu_count} 块 GPU 需 {cost:,.2f} {currency}（便宜 {extra_pct:.2g}%），"
        "但要 {hours} 小时"
    },
    C.WITH_GRADIENT_CHECKPOINTING: {
        "": "开启梯度检查点" + _WHATIF_ZH,
        "instead": "开启梯度检查点" + _WHATIF_INSTEAD_ZH,
    },
    C.WITH_QLORA: {
        "": "改用 QLoRA（4 比特基座）" + _WHATIF_ZH,
        "instead": "改用 QLoRA（4 比特基座）" + _WHATIF_INSTEAD_ZH,
    },
    C.WITH_FUSED_OPTIMIZER: {
        "": "使用融合 AdamW（optimizer_impl fused）" + _WHATIF_ZH,
        "instead": "使用融合 AdamW（optimizer_impl fused）" + _WHATIF_INSTEAD_ZH,
    },
    C.WITH_GRADIENT_ACCUMULATION: {
        "": "改为微批 1 并做梯度累积、每个优化器步 {global_batch} 条序列（workload.batch_size 1，global_batch {global_batch}）"
        + _WHATIF_ZH,
        "instead": "改为微批 1 并做梯度累积、每个优化器步 {global_batch} 条序列（workload.batch_size 1，global_batch {global_batch}）"
        + _WHATIF_INSTEAD_ZH,
    },
    C.WITH_MORE_GPUS: {
        "": "把 max_gpus 放宽到 {gpu_count}（原为 {max_gpus}；{nodes} 个节点）后，{gpu_count} 块 {gpu} "
        "即可放下（每块 {needed_gib} / {usable_gib} GiB）：分片的状态随 GPU 数增加而变小",
        "deadline": "把 max_gpus 放宽到 {gpu_count}（原为 {max_gpus}；{nodes} 个节点）后，{gpu_count} 块 {gpu} "
        "即可放下（每块 {needed_gib} / {usable_gib} GiB），且即使按误差带上限（{hours_high} 小时）也能在 "
        "{deadline_hours} 小时的截止时间内完成",
    },
    C.WITH_FP8_WEIGHTS: {
        "": "改用 FP8 权重后，一个副本在 {gpu} 上只需 TP{tensor_parallel}（原为 TP{instead_of}；每块 "
        "{needed_gib} / {usable_gib} GiB）"
    },
    C.WITH_FP16: {
        "training": "改用精度 {precision}（{gpu} 有 FP16 张量核心但不支持 bf16；fp16 训练需损失缩放）后，"
        "{gpu_count} 块 {gpu} 即可运行（每块 {needed_gib} / {usable_gib} GiB）",
        "serving": "改用精度 {precision}（{gpu} 有 FP16 张量核心但不支持 bf16；权重以 fp16 提供服务）后，"
        "{gpu_count} 块 {gpu} 即可运行（每块 {needed_gib} / {usable_gib} GiB）",
    },
    C.WITH_QUANTIZATION: {
        "": "允许量化（constraints.allow_quantization）并使用 {quant_method} 权重后，可用 {gpu_count} 块 {gpu} "
        "服务（每副本 TP{tensor_parallel}；每块 {needed_gib} / {usable_gib} GiB）"
    },
    C.NO_OPTION: {"": "没有满足约束的方案；{excluded} 种 GPU 被排除（见 excluded）"},
    C.NO_PLAN_MEETS_DEADLINE: {
        "": "没有方案能在 {deadline_hours} 小时期限内完成；列出找到的最快方案：{gpu_count} 块 {gpu}，{hours} 小时",
        "band": "没有方案能在 {deadline_hours} 小时期限内完成（按区间上限）；列出找到的最快方案：{gpu_count} 块 "
        "{gpu}，{hours} 小时（最多 {hours_high} 小时）",
        "more": "没有方案能在 {deadline_hours} 小时期限内完成（按区间上限）；列出找到的最快方案：{gpu_count} 块 "
        "{gpu}，{hours} 小时（最多 {hours_high} 小时）。即使线性扩展，也至少需要 {gpus_at_least} 块："
        "请提高 max_gpus 或放宽期限",
    },
    C.LONG_RUN: {
        "": _LONG_RUN_ZH + "；未找到成本在 +{cost_slack_pct}% 以内的更快方案",
        "faster": _LONG_RUN_ZH + _FASTER_ZH,
        "faster_cost": _LONG_RUN_ZH + _FASTER_ZH + "（成本为其 {faster_cost_ratio} 倍）",
    },
    C.ENGINE_ASSUMED: {"": "请求给出了负载但未指定推理引擎：按 {engine} 连续批处理估计"},
    C.GLOBAL_BATCH_HELD: {"": "不同 GPU 数量下全局批大小（{global_batch} 条序列）保持不变（梯度累积）"},
    C.BEYOND_CONTEXT: {
        "": "每条序列 {tokens} 个 token，超过 {model} 的 max_position_embeddings（{limit}）：未配置 RoPE 缩放时推理引擎会拒绝该长度"
        "（vLLM 的 --max-model-len），模型也未在该长度上训练；给出的数字是该长度的代价"
    },
    C.ASSUMED_OPTIMIZER_STATES: {
        "": _RECIPE_ZH,
        "other_fits": _RECIPE_ZH + _RECIPE_GPU_ZH + "放得下）",
        "other_too_big": _RECIPE_ZH + _RECIPE_GPU_ZH + "放不下）",
    },
    C.ASSUMED_LOOP: {
        "stated": "训练循环：{loop}",
        "default": "训练循环：{loop}（未指定：区间上限覆盖保留输出的循环）",
    },
    C.ASSUMED_STACK: {"": "训练软件栈：{stack}"},
    C.ASSUMED_NETWORK: {"": "节点布局与网络：{network}"},
    C.ASSUMED_ENGINE: {"stated": "推理引擎：{engine}", "default": "推理引擎：{engine}（假定：请求未指定）"},
    C.ASSUMED_PRICES: {
        "": _PRICE_ZH + "至少 {age_days_at_least} 天前的价格",
        "dated": _PRICE_ZH + "{age_days_at_least} 天前的价格（有日期）{stale:?，已过期|}",
        "undated": _PRICE_ZH
        + "至少 {age_days_at_least} 天前的价格（实际日期未知：从读取目录副本之日算起）{stale:?，已过期|}",
    },
    C.ASSUMED_BAND: {"": "区间为留出误差的 {level} 区间"},
    C.ASSUMED_USABLE_MEMORY: {
        "": "{gpu} 的可用显存没有来源：按物理显存 {physical_gib} GiB 判断是否放得下，可能偏乐观（驱动和 ECC 会占用一部分）"
    },
    C.ASSUMED_WHOLE_NODES: {
        "": "训练只按整节点跨节点：max_gpus {max_gpus} 不是每节点 {gpus_per_node} 块 GPU 的整数倍，"
        "因此最多尝试 {largest} 块 GPU（不满的节点同样要付费，且其集合通信受最慢链路拖累）"
    },
}

TEMPLATES: Final[Mapping[str, Table]] = {"en": EN, "zh": ZH}
"""Every language the answers are worded in (Accept-Language picks one)."""

_LIST_SEPARATOR = {"en": ", ", "zh": "、"}


def language(accept_language: str | None) -> str:
    """``zh`` when Chinese is preferred over English in ``Accept-Language`` (q-values
    honoured), else ``en``."""
    if not accept_language:
        return "en"
    best: tuple[float, str] = (-1.0, "en")
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


def _number(x: float) -> str:
    return f"{x:,.1f}" if abs(x) < 1000 else f"{x:,.0f}"


def _plain(value: Any, spec: str, sep: str) -> Any:
    """A value for a placeholder without a spec, or with one of the templates' own specs."""
    if spec.startswith("?"):
        yes, _, no = spec[1:].partition("|")
        return yes if value else no
    if isinstance(value, list | tuple):
        return sep.join(str(x).upper() if spec == "upper" else str(x) for x in value)
    if spec == "upper":
        return str(value).upper()
    if isinstance(value, float):
        return _number(value)
    return value


_COMPILED: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {}
"""Template -> (the template with its own specs removed, (name, spec) of each such placeholder):
Python's specs stay in the string and are applied in C by ``str.format_map``."""


def _compiled(template: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    found = _COMPILED.get(template)
    if found is None:
        parts: list[str] = []
        own: list[tuple[str, str]] = []
        for literal, name, spec, _conv in string.Formatter().parse(template):
            parts.append(literal.replace("{", "{{").replace("}", "}}"))
            if name is None:
                continue
            if not spec or spec == "upper" or spec.startswith("?"):
                own.append((name, spec or ""))
                parts.append("{" + name + "}")
            else:
                parts.append("{" + name + ":" + spec + "}")
        found = _COMPILED[template] = ("".join(parts), tuple(own))
    return found


def render(template: str, params: Mapping[str, Any], lang: str) -> str:
    """``template`` with ``params`` in ``lang``'s words (list separator)."""
    fmt, own = _compiled(template)
    if not own:
        return fmt.format_map(params)
    values = dict(params)
    for name, spec in own:
        v = values[name]
        if not spec and type(v) is float:  # the common case, inline: answers word ~100 reasons
            values[name] = f"{v:,.1f}" if -1000 < v < 1000 else f"{v:,.0f}"
        elif spec or isinstance(v, list | tuple | float):
            values[name] = _plain(v, spec, _LIST_SEPARATOR.get(lang, ", "))
    return fmt.format_map(values)


def placeholders(template: str) -> set[str]:
    """The parameter names a template renders."""
    return {name for _text, name, _spec, _conv in string.Formatter().parse(template) if name is not None}


def sentence(code: str, params: Mapping[str, Any], lang: str = "en") -> str | None:
    """``code`` with ``params`` in ``lang``; None when no declared form takes these parameters
    (an answer stored before a code's parameters changed: its stored sentence stands)."""
    name = form_name(code, params)
    if name is None:
        return None
    return render(TEMPLATES.get(lang, EN)[C(code)][name], params, lang)
