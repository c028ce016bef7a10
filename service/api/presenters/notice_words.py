"""Warnings and notes in Chinese: estimate warnings (:class:`~service.core.estimation.estimate_answers.NoticeCode`,
also on a recommendation's options) and price-quote notes
(:data:`~service.core.pricing.quotes.QUOTE_NOTES`).

A warning's English sentence is the core's own; its Chinese one is rebuilt here from the
warning's ``params`` by the template whose placeholders are exactly those parameters (a code may
have several, one per set of figures it is raised with). Quote notes are bare codes on the wire,
so both languages live here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from service.api.presenters.recommend_words import placeholders, render
from service.core.estimation.estimate_answers import NoticeCode as N
from service.core.pricing import quotes as q

NOTICE_ZH: Final[Mapping[N, tuple[str, ...]]] = {
    N.PCIE_MULTI_GPU_UNVALIDATED: (
        "PCIe 上的多卡通信仅按数据手册建模；尚无纯 PCIe 多卡实测数据验证",
    ),
    N.MULTI_GPU_UNVALIDATED: ("多卡通信按节点拓扑建模；尚未用多卡实测数据验证",),
    N.SPARSE_TIME_UNVALIDATED: (
        "显存按公开架构计算；MLA / 共享专家 MoE 结构的推理时间沿用在稠密模型上拟合的引擎类别，"
        "尚未用其公开数据验证（未建模逐层 MoE 算子与 all-reduce 下限）",
    ),
    N.USABLE_MEMORY_UNKNOWN: ("{gpu}：驱动报告的可用显存没有可靠来源，按物理显存计算，能否放下的判断可能偏乐观",),
    N.ASSUMED_SHAPE: ("模型结构为推定（英文说明）：{note}",),
    N.MEASURED_OOM: ("该配置在 {gpu} 上实测显存溢出（{results} 条实测结果）",),
    N.NO_TIME_ESTIMATE: (
        "{gpu} 缺少可靠来源的显存带宽，无法估计时间",
        "无法估计时间（英文说明）：{detail}",
    ),
    N.NO_SERVING_AS_GIVEN: ("按给定配置无法部署（英文说明：{detail}）；求解 min_gpus 可给出能承载的副本数 x 张量并行",),
    N.TRY_FSDP_MIXED_PRECISION_POLICY: (
        "改用 FSDP MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32) 代替 torch.autocast 后，"
        "按误差带上限每块 GPU 需要 {needed_gib} GiB，可以放下（autocast 在退出前保留整个模型的 bf16 权重副本；"
        "该策略一次只转换一层）",
        "改用 FSDP MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32) 后 {gpus} 块 GPU 即可放下；"
        "FSDP 分片上的 torch.autocast 在退出前保留整个模型的 bf16 权重副本",
        "改用 FSDP MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32) 后 {gpus} 块 GPU 即可放下"
        "（原需 {instead_of} 块）；FSDP 分片上的 torch.autocast 在退出前保留整个模型的 bf16 权重副本",
    ),
    N.TRY_FUSED_OPTIMIZER: (
        "{impl} AdamW 的优化器步是显存峰值（步内临时量 {temporaries_gib} GiB）；改用 "
        "torch.optim.AdamW(..., fused=True)（HF Trainer：optim='adamw_torch_fused'）按误差带上限需要 "
        "{needed_gib} GiB，可以放下",
    ),
    N.BEYOND_CONTEXT: (
        "每条序列 {tokens:,} 个 token，超过 {model} 的 max_position_embeddings（{limit:,}）："
        "不做 RoPE 缩放时推理引擎会拒绝，且模型在此长度上的质量并非其训练所得",
    ),
    N.NO_PEER_TO_PEER: ("{gpu} 卡间不支持 PCIe 点对点：NCCL 的每次集合通信都经主机内存中转，比此处按 PCIe 带宽估算的更慢",),
    N.OVERLOADED: (
        "每秒 {requests_per_s} 个请求超出该部署的承载能力（在其限制内为每秒 {capacity_requests_per_s} 个）：队列会无限增长；"
        "需要更多副本或 GPU（solve_for min_gpus）",
        "prefill 池忙碌率 {prefill_busy_pct}%：提示到达快于其计算速度，队列会无限增长；需要更大的 prefill 池",
    ),
    N.NETWORK_ASSUMED: (
        "{nodes} 个节点之间的网络未说明：按每节点 {gbps_per_node} Gb/s、支持 RDMA（DGX/HGX 节点的配置）估算；"
        "{gpu} 的服务器通常远低于此——请给出 network_gbps_per_node 和 rdma，时间取决于它们",
    ),
    N.CHECKPOINT_DEQUANTISED: (
        "{model} 的检查点以 {format} 格式发布权重，{engine} 在 {gpu} 上无法运行该格式：按 16 位权重估算（加载时反量化）",
    ),
    N.DOES_NOT_FIT: (
        "该配置按误差带上限每块 GPU 需要 {needed_gib} GiB，超过可用的 {usable_gib} GiB：会显存不足（OOM）；"
        "给出的时间是显存足够时的时间",
        "该配置实测显存不足（OOM），尽管模型按误差带上限估计每块 GPU 只需 {modelled_gib} GiB（可用 {usable_gib} GiB）；"
        "给出的时间是显存足够时的时间",
    ),
    N.TIGHT_FOR_LARGEST_REQUEST: (
        "可以放下，但损失函数的 fp32 logits 是一次 {request_gib} GiB 的分配，而按误差带上限只剩 {headroom_gib} GiB："
        "分配器需要一整块，碎片化的显存池可能没有（其余显存空闲也会 OOM）；"
        "设置 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True 可避免，减小 micro-batch 可缩小这块分配",
    ),
    N.CONCURRENCY_QUEUED: (
        "每个副本 {clients_per_replica} 个客户端中有 {waiting} 个在等待准入：一个副本最多同时容纳 {admitted} 条序列"
        "（KV 缓存与调度器），因此 TTFT 含等待时间；增加副本可让它们进入",
    ),
    N.CONTEXT_CAPPED_AT_MODEL_LIMIT: (
        "{model} 的 max_position_embeddings 为 {limit:,}：答案在此封顶，尽管显存还能容纳更长的上下文",
    ),
    N.ASSUMED_VARIANT: ("该名称对应多种 GPU（{candidates}）；假定为 {assumed}",),
    N.MIG_SLICE: ("该名称是 MIG 切片（{mig_profile}）；数据按整块 GPU 给出",),
    N.SHARED_GPU: ("该名称是分时共享的 GPU；吞吐在租户之间分摊",),
}  # fmt: skip

QUOTE_NOTE_WORDS: Final[Mapping[str, Mapping[str, str]]] = {
    q.PAYS_FOR_IDLE_GPUS: {
        "en": "the instance holds more GPUs than the job uses: the idle ones are paid for",
        "zh": "实例中的 GPU 多于任务所用：空闲的 GPU 也要付费",
    },
    q.MULTI_INSTANCE: {
        "en": "several instances: the job spans nodes",
        "zh": "需要多个实例：任务跨节点运行",
    },
    q.STALE_PRICE: {
        "en": "a price row is older than the staleness limit",
        "zh": "有价格数据超过了时效上限",
    },
    q.CURRENCY_CONVERTED: {
        "en": "the amount was converted through the exchange-rate table",
        "zh": "金额经汇率表换算",
    },
    q.SPOT_INTERRUPTIBLE: {
        "en": "spot capacity can be reclaimed mid-run",
        "zh": "竞价实例可能在运行中被回收",
    },
    q.RESERVED_COMMITMENT: {
        "en": "a reserved or capacity-block rate: it needs a commitment",
        "zh": "预留或容量块价格：需要承诺使用期",
    },
    q.PRICE_IS_ESTIMATE: {
        "en": "the price row is marked an estimate, not a list price",
        "zh": "该价格标注为估计值，而非标价",
    },
    q.HOST_NOT_INCLUDED: {
        "en": "a per-card purchase price: the server around it is not in the capital cost (its power is "
        "in the energy, as host_power_fraction; node_overhead_fraction applies to per-node prices only)",
        "zh": "按单卡采购价计算：资本成本未计入服务器本身（其功耗已按 host_power_fraction 计入电费；"
        "node_overhead_fraction 只用于按整机计价的价格）",
    },
    q.SUSPECT_PRICE: {
        "en": "the price row failed a price-quality check (used only because suspect prices are allowed)",
        "zh": "该价格未通过价格质量检查（仅因允许可疑价格而采用）",
    },
    q.PRICE_AGE_LOWER_BOUND: {
        "en": "the price's date is when it was read, not when it was set: its age is a lower bound",
        "zh": "价格日期是读取日期而非定价日期：价格年龄只是下限",
    },
    q.CAPEX_FROM_POOL: {
        "en": "owned GPUs: the purchase price per GPU is the one the inventory pool states",
        "zh": "自有 GPU：采购价格取自库存池给出的单卡价格",
    },
    q.CAPEX_UNKNOWN: {
        "en": "owned GPUs without a known purchase price: electricity only, the capital cost is unknown",
        "zh": "自有 GPU 没有已知采购价格：仅计电费，资本成本未知",
    },
}


def notice_text(code: str, message: str, params: Mapping[str, Any], lang: str) -> str:
    """A warning's sentence in ``lang``: the core's English sentence, or the Chinese template
    whose placeholders are exactly ``params`` (the English one when none is: never the code)."""
    if lang != "zh":
        return message
    present = {k for k, v in params.items() if v is not None}
    for template in NOTICE_ZH.get(N(code), ()) if code in N._value2member_map_ else ():
        if placeholders(template) == present:
            return render(template, params, "zh")
    return message


def quote_note_text(code: str, lang: str) -> str:
    """A price-quote note's sentence in ``lang`` (the code itself only for an undeclared one)."""
    words = QUOTE_NOTE_WORDS.get(code)
    return code if words is None else words.get(lang, words["en"])
