"""How a plan is paid for, as deployed (issue 24): rented on an instance type that holds its node
shape (``PriceBook.rent_shape``), or, on the caller's own inventory, owned and costed by TCO --
never a rental price for GPUs the team already has. The one call site of pricing in the search.
"""

from __future__ import annotations

from dataclasses import dataclass

from service.core.catalog.specs import RDMA_NETWORK_KINDS, GpuSpec
from service.core.estimation.frozen import replace
from service.core.estimation.memory import TrainConfig
from service.core.pricing.cost import (
    NO_PURCHASE_PRICE,
    NoMatchingInstance,
    RentQuote,
    ShapePrice,
    Tco,
    tco,
)
from service.core.pricing.shapes import NO_MATCHING_INSTANCE, DeployShape, InstanceNetwork
from service.core.recommend.candidates import _placement, best_pool, spanned_network
from service.core.recommend.models import Option, Pool, RecommendData, RecommendQuestion
from service.core.recommend.reasons import Reason, ReasonCode

SHARDED = frozenset({"fsdp", "zero1", "zero2", "zero3"})


@dataclass(frozen=True, slots=True)
class PlanPrice:
    """What a plan costs per hour and on what: ``quote`` (rented) or ``tco`` (owned inventory);
    ``hourly`` is whichever applies (``None``: no cost); ``missing`` says why no instance type
    holds the shape; ``network`` the links it runs on."""

    quote: RentQuote | None = None
    tco: Tco | None = None
    network: InstanceNetwork | None = None
    missing: NoMatchingInstance | None = None

    @property
    def hourly(self) -> RentQuote | Tco | None:
        return self.quote if self.quote is not None else self.tco


def deploy_shape(
    gpu: GpuSpec,
    nodes: int,
    gpus_per_node: int,
    *,
    tensor_parallel: int = 1,
    sharding: str = "none",
    replicas: bool = False,
) -> DeployShape:
    """The node shape a plan needs. The GPUs of a node need the part's NVLink when the estimate
    took it for their traffic: tensor parallelism or sharded data parallelism inside a node on a
    part whose NVLink domain covers the node. Serving replicas are independent nodes of ``tp``."""
    linked = gpu.node.nvlink_topology != "none"
    if replicas:
        tp = max(tensor_parallel, 1)
        return DeployShape(
            gpus_per_node=tp,
            nodes=max(1, (nodes * gpus_per_node) // tp),
            needs_gpu_link=tp > 1 and linked and tp <= gpu.node.nvlink_domain_size,
            independent=True,
        )
    chatty = tensor_parallel > 1 or sharding in SHARDED
    return DeployShape(
        gpus_per_node=gpus_per_node,
        nodes=nodes,
        needs_gpu_link=gpus_per_node > 1
        and chatty
        and linked
        and gpus_per_node <= gpu.node.nvlink_domain_size,
    )


def _pool_network(pools: tuple[Pool, ...], gpu: GpuSpec, shape: DeployShape) -> InstanceNetwork:
    """The links of the inventory nodes a plan sits on; over several nodes, the slowest network
    among those it may use (what its collectives were timed on)."""
    mine = [p for p in pools if p.gpu == gpu.slug]
    p = max(mine, key=lambda p: (p.free_gpus_per_node, p.nodes)) if mine else None
    nv = (p.interconnect if p is not None else None) or (
        "nvlink" if gpu.node.nvlink_topology != "none" else "pcie"
    )
    gbps: float | None = p.network_gbps_per_node if p is not None else None
    rdma = None if p is None else p.rdma
    if p is not None and shape.nodes > 1 and not shape.independent:
        slowest, rdma = spanned_network(pools, gpu, shape.gpus_per_node)
        gbps = slowest or None
    return InstanceNetwork(
        intra_node="nvlink" if nv == "nvlink" else "pcie",
        gpu_link_gpus=gpu.node.nvlink_domain_size if nv == "nvlink" else 1,
        inter_node_gbps=gbps,
        rdma=None if rdma is None else ("yes" if rdma else "no"),
        intra_basis="table",
        inter_basis="table" if gbps is not None else "provider_default",
        source="the request's inventory pool",
    )


def price_plan(
    data: RecommendData,
    q: RecommendQuestion,
    gpu: GpuSpec,
    shape: DeployShape,
    *,
    hours: float | None = None,
    hours_band: tuple[float, float] | None = None,
) -> PlanPrice:
    """Price ``shape`` of ``gpu``: owned (TCO) when the request gives an inventory, else the
    cheapest instance type that holds it."""
    if data.prices is None:
        return PlanPrice()
    pools = q.constraints.pools
    if pools is not None:
        t = owned_tco(data, q, gpu, shape.gpus, hours=hours, hours_band=hours_band)
        return PlanPrice(tco=t, network=_pool_network(pools, gpu, shape))
    p = data.prices.rent_shape(gpu.slug, shape, q.cost)
    if isinstance(p, ShapePrice):
        return PlanPrice(quote=p.quote, network=p.network)
    return PlanPrice(missing=p)


def rented_network(
    data: RecommendData, q: RecommendQuestion, gpu: GpuSpec, shape: DeployShape
) -> tuple[float, bool] | None:
    """(Gb/s per node, RDMA) between the nodes of the instance type ``shape`` is rented on:
    a plan over several rented nodes is timed on that network, not on a DGX node's default
    (a GCP A2 has 100 Gb/s without RDMA, an AWS p4d 400). None: not rented over nodes, or
    nothing prices it (the default network stays, and the plan shows no price)."""
    if q.constraints.pools is not None or shape.nodes <= 1 or shape.independent:
        return None
    net = price_plan(data, q, gpu, shape).network
    if net is None or not net.inter_node_gbps:
        return None
    return net.inter_node_gbps, (net.rdma or "") in RDMA_NETWORK_KINDS


def multi_node_reason(
    nodes: int, per: int, network: str, rdma: bool, q: RecommendQuestion, gpu: GpuSpec
) -> Reason:
    """``MULTI_NODE`` with the network a training plan over nodes was timed on (``rdma``: as
    timed); on inventory nodes whose RDMA :func:`~.candidates.spanned_network` finds unstated,
    that it was assumed (the sentence had said "RDMA" as if the inventory stated it)."""
    on = best_pool(gpu, q.constraints)  # the nodes it was timed on, as candidates.on_pool took them
    if (
        rdma
        and on is not None
        and spanned_network(q.constraints.pools or (), gpu, on.free_gpus_per_node)[1] is None
    ):
        network = f"{network} (RDMA assumed: the inventory does not say; rdma false times NCCL sockets)"
    return Reason("MULTI_NODE", {"nodes": nodes, "gpus_per_node": per, "network": network})


def on_rental(data: RecommendData, q: RecommendQuestion, gpu: GpuSpec, cfg: TrainConfig) -> TrainConfig:
    """A training plan over rented nodes, timed on the network of the instance type it is priced
    on (:func:`rented_network`) unless the workload states one."""
    if cfg.network_gbps_per_node:
        return cfg
    nodes, per = _placement(gpu, cfg.gpu_count, q.constraints)
    shape = deploy_shape(gpu, nodes, per, tensor_parallel=cfg.tensor_parallel, sharding=cfg.sharding)
    net = rented_network(data, q, gpu, shape)
    return cfg if net is None else replace(cfg, gpus_per_node=per, network_gbps_per_node=net[0], rdma=net[1])


def owned_tco(
    data: RecommendData,
    q: RecommendQuestion,
    gpu: GpuSpec,
    gpu_count: int,
    *,
    hours: float | None = None,
    hours_band: tuple[float, float] | None = None,
) -> Tco | None:
    """GPUs of the request's inventory, always costed by TCO: the pool's own purchase price per
    GPU, else the catalog's, else electricity only (``Tco.capex_unknown``); never a rental."""
    assert data.prices is not None
    pool = next((p for p in q.constraints.pools or () if p.gpu == gpu.slug), None)
    return tco(
        data.prices,
        gpu.slug,
        gpu_count=gpu_count,
        tdp_w=gpu.tdp_w,
        assumptions=q.cost,
        hours=hours,
        hours_low=min(hours_band[0], hours) if hours_band and hours else None,
        hours_high=max(hours_band[1], hours) if hours_band and hours else None,
        price_per_gpu=pool.purchase_price_per_gpu if pool is not None else None,
        owned=True,
    )


def no_price_reason(o: Option, q: RecommendQuestion, name: str) -> Reason:
    """Why a plan that needs a cost has none: no instance type holds its node shape, no
    purchase price for owned inventory, or no rental row at all."""
    m = o.price_missing
    if m is not None and m.reason == NO_MATCHING_INSTANCE:
        return Reason(
            ReasonCode.NO_MATCHING_INSTANCE,
            {
                "gpu": name,
                "gpu_count": o.gpu_count,
                "gpus_per_node": m.shape.gpus_per_node,
                "nodes": m.shape.nodes,
                "needs_nvlink": m.shape.needs_gpu_link,
                "replicas": m.shape.independent,
                "suspect_only": m.suspect_only,
                "detail": m.detail,
            },
        )
    if q.constraints.pools is not None:
        return Reason(ReasonCode(o.tco_missing or NO_PURCHASE_PRICE), {"gpu": name, "gpu_count": o.gpu_count})
    cons = q.constraints
    return Reason(
        ReasonCode.NO_PRICE,
        {
            "gpu": name,
            "gpu_count": o.gpu_count,
            "providers": sorted(cons.providers) if cons.providers else None,
            "pricing_models": list(q.cost.pricing_models),
            "currency": q.cost.currency,
        },
    )


def gpu_hour_floor(data: RecommendData, q: RecommendQuestion, gpu: GpuSpec) -> float | None:
    """The lowest cost of one GPU-hour of ``gpu`` any plan of it can have (for the search's
    bounds): owned inventory's TCO per GPU-hour of a whole purchase unit, else the lowest
    per-GPU-hour rate of any allowed rental row."""
    book = data.prices
    if book is None:
        return None
    if q.constraints.pools is not None:
        p = book.purchase(gpu.slug)  # a whole unit spreads a per-node price over its GPUs
        t = owned_tco(data, q, gpu, p.gpus_per_unit if p is not None else 1)
        return t.per_gpu_hour if t is not None else None
    return book.min_gpu_hour(gpu.slug, q.cost)


def instance_sizes(data: RecommendData, q: RecommendQuestion, gpu: GpuSpec) -> frozenset[int]:
    """GPUs per instance of every rental row of ``gpu`` the question may use (its providers): a
    count that fills one pays for no idle GPU, so a cost or budget search times it (3 A100 on a
    3-GPU instance, not 2 of them paying for the third)."""
    book = data.prices
    if book is None or q.constraints.pools is not None:
        return frozenset()
    allowed = q.cost.providers
    return frozenset(
        r.gpus_per_instance
        for r in book.rentals.get(gpu.slug, ())
        if allowed is None or r.provider in allowed
    )
