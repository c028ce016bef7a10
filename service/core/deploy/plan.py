"""What an artifact is rendered from: the stored answer's options, read as the wire wrote them
(``RecommendResponse``), plus the names schedulers know each GPU by (catalog aliases)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from service.core.catalog.specs import RDMA_NETWORK_KINDS

FILL = "FILL-IN"
"""What marks, in an artifact, everything the user must provide."""


@dataclass(frozen=True, slots=True)
class SchedulerNames:
    """A GPU's names for schedulers, from its catalog aliases and identity."""

    vendor: str
    gfd: str | None = None
    """NVIDIA GPU feature discovery's ``nvidia.com/gpu.product`` value."""
    skypilot: str | None = None
    pci_device_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ServingFeatures:
    """The serving features the question sized the plan with, which the engine must be started
    with: multi-LoRA (``lora_adapters`` > 0; ``max_loras`` resident, rank ``lora_rank``),
    speculative decoding (``speculative``: ``eagle``, ``mtp`` or ``ngram``, ``draft_tokens`` a
    step) and the engine's memory setting the KV cache was sized at (``memory_fraction``; None:
    the engine's default, which the server picks itself)."""

    lora_adapters: int = 0
    lora_rank: int = 0
    max_loras: int = 0
    speculative: str | None = None
    draft_tokens: int = 0
    memory_fraction: float | None = None


NO_FEATURES = ServingFeatures()


@dataclass(frozen=True, slots=True)
class DeployOption:
    """One ranked option, everything a scheduler must be told (nothing dropped)."""

    rank: int
    gpu_slug: str
    gpu_name: str
    names: SchedulerNames
    gpu_count: int
    nodes: int
    gpus_per_node: int
    tensor_parallel: int
    replicas: int | None
    engine: str | None
    quant_method: str | None
    kv_cache_dtype: str | None
    precision: str
    sharding: str | None
    micro_batch: int | None
    global_batch: int | None
    accumulation_steps: int | None
    gradient_checkpointing: bool | None
    mixed_precision: str | None
    finetune: str | None
    walltime_s: float | None
    """Upper end of the training time band (Slurm ``--time``); None for serving."""
    expert_parallel: bool = False
    """Serving: routed experts spread whole over the TP group (attention data-parallel)."""
    disaggregated: str | None = None
    """Serving: the prefill / decode pools the option was sized as (``"P prefill + D decode
    GPUs"``), None for aggregated replicas."""
    network_gbps: float | None = None
    """Between nodes, Gb/s per node, of what the option was priced on and timed on (its rental's
    stated network, or the inventory's); None: not stated there (the question's, else the default)."""
    network_rdma: bool | None = None

    @property
    def serving(self) -> bool:
        return self.replicas is not None

    @property
    def nodes_per_replica(self) -> int:
        """Serving: nodes one tensor-parallel group spans (1 unless TP exceeds a node)."""
        return max(1, math.ceil(self.tensor_parallel / max(1, self.gpus_per_node)))

    @property
    def gpus_per_pod(self) -> int:
        """GPUs one pod (one node's share) asks for."""
        if self.serving:
            return self.tensor_parallel if self.nodes_per_replica == 1 else self.gpus_per_node
        return self.gpus_per_node

    def describe(self) -> str:
        if self.serving:
            return (
                f"{self.gpu_count} x {self.gpu_name}: {self.replicas} replica(s) x TP{self.tensor_parallel}"
                + (f", {self.nodes_per_replica} nodes per replica" if self.nodes_per_replica > 1 else "")
            )
        return (
            f"{self.gpu_count} x {self.gpu_name}: {self.nodes} node(s) x {self.gpus_per_node} GPU(s)"
            + (f", {self.sharding}" if self.sharding else "")
            + (f", TP{self.tensor_parallel}" if self.tensor_parallel > 1 else "")
        )


@dataclass(frozen=True, slots=True)
class DeployPlan:
    """A stored answer, as far as deployment is concerned."""

    recommendation_id: str
    data_version: str
    model_id: str
    mode: str
    max_model_len: int | None
    """Serving: the question's prompt + output length at the 99th percentile, the context the
    engine must admit."""
    rdma: bool | None
    network_gbit_per_s: float | None
    options: tuple[DeployOption, ...]
    checkpoint_format: str = "none"
    """The weight format the model's published checkpoint ships in (a plan in it loads that
    checkpoint as it is)."""
    features: ServingFeatures = NO_FEATURES

    def option(self, rank: int) -> DeployOption | None:
        return next((o for o in self.options if o.rank == rank), None)


def _int(v: Any) -> int | None:
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _mapping(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def _str(v: Any) -> str | None:
    return str(v) if isinstance(v, str) and v else None


def _length_p99(mean: Any, cv: Any) -> int:
    """A log-normal-free, conservative reading: mean x (1 + 2.33 cv), the normal 99th percentile
    (cv 0: the mean itself)."""
    m = float(mean or 0)
    c = float(cv or 0)
    return math.ceil(m * (1.0 + 2.33 * c))


def _max_model_len(config: Mapping[str, Any]) -> int | None:
    if config.get("input_len") is None:
        return None
    total = _length_p99(config.get("input_len"), config.get("input_len_cv")) + _length_p99(
        config.get("output_len"), config.get("output_len_cv")
    )
    return max(256, math.ceil(total / 256) * 256)


def _walltime_s(o: Mapping[str, Any]) -> float | None:
    """The upper end of the time-to-train band, in seconds (None without ``workload.tokens``)."""
    t = (o.get("training") or {}).get("time_to_train") or {}
    hours = (t.get("band") or {}).get("high", t.get("value"))
    return float(hours) * 3600.0 if isinstance(hours, int | float) else None


def _option(o: Mapping[str, Any], names: Mapping[str, SchedulerNames]) -> DeployOption:
    s = o["strategy"]
    slug = str(o["gpu"]["slug"])
    serving = o.get("serving") is not None or s.get("replicas") is not None
    return DeployOption(
        rank=int(o["rank"]),
        gpu_slug=slug,
        gpu_name=str(o["gpu"].get("name") or slug),
        names=names.get(slug) or SchedulerNames(vendor=slug.split("-", 1)[0]),
        gpu_count=int(s["gpu_count"]),
        nodes=int(s["nodes"]),
        gpus_per_node=int(s["gpus_per_node"]),
        tensor_parallel=int(s.get("tensor_parallel") or 1),
        replicas=(_int(s.get("replicas")) or 1) if serving else None,
        engine=_str(s.get("engine")),
        quant_method=_str(s.get("quant_method")),
        kv_cache_dtype=_str(s.get("kv_cache_dtype")),
        precision=str(s.get("precision") or ""),
        sharding=_str(s.get("sharding")),
        micro_batch=_int(s.get("micro_batch")),
        global_batch=_int(s.get("global_batch")),
        accumulation_steps=_int(s.get("accumulation_steps")),
        gradient_checkpointing=s.get("gradient_checkpointing"),
        mixed_precision=_str(s.get("mixed_precision")),
        finetune=_str(s.get("finetune")),
        walltime_s=None if serving else _walltime_s(o),
        expert_parallel=bool(s.get("expert_parallel")),
        disaggregated=_pools(s.get("disaggregated")),
        **_network(o),
    )


def _network(o: Mapping[str, Any]) -> dict[str, Any]:
    """The option's inter-node network as its cost states it (``cost.network``)."""
    net = _mapping(_mapping(o.get("cost")).get("network"))
    gbps, rdma = net.get("inter_node_gbps"), net.get("rdma")
    owned = net.get("source") == "the request's inventory pool"  # RDMA unless the pool says not
    return {
        "network_gbps": float(gbps) if isinstance(gbps, int | float) and gbps > 0 else None,
        "network_rdma": rdma in RDMA_NETWORK_KINDS or (owned and rdma is None),
    }


def _pools(d: Any) -> str | None:
    if not isinstance(d, Mapping):
        return None
    return f"{d.get('prefill_gpus')} prefill + {d.get('decode_gpus')} decode GPUs"


def plan_of(
    response: Mapping[str, Any],
    names: Mapping[str, SchedulerNames],
    model_ref: str | None = None,
    checkpoint_format: str = "none",
) -> DeployPlan:
    """The deployment view of a stored answer (``RecommendResponse`` as JSON). ``model_ref`` is
    the model as the question named it (a Hugging Face id loads; a preset id may not)."""
    question = response.get("question") or {}
    config = question.get("configuration") or {}
    model = question.get("model") or {}
    gbps = config.get("network_gbps_per_node")
    return DeployPlan(
        recommendation_id=str(response.get("recommendation_id") or ""),
        data_version=str(response.get("data_version") or ""),
        model_id=model_ref or str(model.get("id") or ""),
        mode=str(question.get("mode") or ""),
        max_model_len=_max_model_len(config),
        rdma=config.get("rdma") if isinstance(config.get("rdma"), bool) else None,
        network_gbit_per_s=float(gbps) if isinstance(gbps, int | float) else None,
        options=tuple(_option(o, names) for o in response.get("options") or ()),
        checkpoint_format=checkpoint_format,
        features=_features((response.get("asked") or {}).get("workload") or {}),
    )


def _features(workload: Mapping[str, Any]) -> ServingFeatures:
    """The workload's multi-LoRA, speculative decoding and memory setting, as the question asked them."""
    lora, spec = _mapping(workload.get("lora")), _mapping(workload.get("speculative"))
    return ServingFeatures(
        lora_adapters=_int(lora.get("adapters")) or 0,
        lora_rank=_int(lora.get("rank")) or 0,
        max_loras=_int(lora.get("max_loras")) or 0,
        speculative=_str(spec.get("method")),
        draft_tokens=_int(spec.get("draft_tokens")) or 0,
        memory_fraction=_fraction(workload.get("memory_fraction")),
    )


def _fraction(v: Any) -> float | None:
    """A stated memory setting in (0, 1] (the API admits no other), else None."""
    if isinstance(v, int | float) and not isinstance(v, bool) and 0.0 < float(v) <= 1.0:
        return float(v)
    return None
