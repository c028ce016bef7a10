"""How a serving plan is priced: the node shape it is rented on (independent replicas, or the
nodes a disaggregated plan's two pools share), and how many replicas a per-hour budget pays for
(``fastest`` adds replicas to lower TPOT, never past the budget)."""

from __future__ import annotations

import math

from service.core.catalog.specs import GpuSpec
from service.core.estimation.memory import InferenceConfig
from service.core.estimation.network import replica_layout
from service.core.estimation.serving_disagg import disagg_layout
from service.core.pricing.shapes import DeployShape
from service.core.recommend.candidates import _placement, _pool_shape
from service.core.recommend.deployment import deploy_shape, price_plan
from service.core.recommend.models import Constraints, RecommendData, RecommendQuestion

__all__ = ["affordable", "serving_layout", "serving_shape"]


def serving_shape(gpu: GpuSpec, cfg: InferenceConfig, tp: int) -> DeployShape:
    """The node shape a serving plan is priced on: independent replicas of TP ``tp``, or for a
    disaggregated plan the nodes both pools fill as the estimate laid them out
    (:func:`~service.core.estimation.serving_disagg.disagg_layout`): every prompt's KV cache
    crosses from a prefill to a decode GPU over the node's GPU link, so the pools are not priced
    as unlinked single-GPU rentals (nor across nodes without a stated network)."""
    dis = cfg.disaggregated
    if dis is None:
        return replica_shape(gpu, cfg.replicas, tp, replica_layout(cfg.nodes, gpu, tp).gpus_per_node)
    layout = disagg_layout(dis, gpu)
    per = min(dis.prefill_gpus + dis.decode_gpus, layout.gpus_per_node)
    return deploy_shape(gpu, layout.nodes, per, tensor_parallel=max(tp, 2))


def replica_shape(gpu: GpuSpec, replicas: int, tp: int, per_node: int) -> DeployShape:
    """Independent replicas of TP ``tp`` inside a node each; one over several whole nodes of
    ``per_node`` GPUs is those nodes, linked by the network its all-reduces cross."""
    if tp <= per_node:
        return deploy_shape(gpu, replicas, tp, tensor_parallel=tp, replicas=True)
    return deploy_shape(gpu, replicas * (tp // per_node), per_node, tensor_parallel=tp)


def serving_layout(
    gpu: GpuSpec, cfg: InferenceConfig, tp: int, cons: Constraints
) -> tuple[int, int, DeployShape]:
    """Nodes and GPUs per node the plan is shown on, and the shape it is priced on: replicas
    packed on the GPU's nodes (or the inventory pool's), a disaggregated plan on the nodes its
    pools share."""
    deploy = serving_shape(gpu, cfg, tp)
    if cfg.disaggregated is not None:
        return deploy.nodes, deploy.gpus_per_node, deploy
    nodes, per = _placement(gpu, cfg.replicas * tp, cons)
    shape = _pool_shape(gpu, cons) if cons.pools is not None else None
    if shape is not None and shape[0] >= tp:
        per = (shape[0] // tp) * tp
        nodes = math.ceil(cfg.replicas / (shape[0] // tp))
    return nodes, per, deploy


def replicas_per_hour(
    data: RecommendData, q: RecommendQuestion, gpu: GpuSpec, tp: int, reps: int
) -> float | None:
    """The hourly price of ``reps`` replicas of TP ``tp`` (None where nothing prices them)."""
    per_node = _placement(gpu, tp, q.constraints)[1] if tp > 1 else 1
    hourly = price_plan(data, q, gpu, replica_shape(gpu, reps, tp, per_node)).hourly
    return hourly.per_hour if hourly is not None else None


def affordable(
    data: RecommendData, q: RecommendQuestion, gpu: GpuSpec, tp: int, fewest: int, most: int
) -> int:
    """The most replicas of TP ``tp`` (between ``fewest`` and ``most``) whose hourly price keeps
    a per-hour budget (``most`` where no budget or no price decides)."""
    budget = q.constraints.budget_per_hour
    if budget is None or most <= fewest:
        return most

    def per_hour(reps: int) -> float | None:
        return replicas_per_hour(data, q, gpu, tp, reps)

    low = per_hour(fewest)
    if low is None or low > budget:
        return most
    lo, hi = fewest, most + 1  # lo keeps the budget; hi does not, or is past ``most``
    while hi - lo > 1:
        mid = (lo + hi) // 2
        cost = per_hour(mid)
        if cost is not None and cost <= budget:
            lo = mid
        else:
            hi = mid
    return lo
