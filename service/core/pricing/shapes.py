"""Which rentable instance types can hold a plan's node shape, and what network they carry
(issue 24, "Deployable topology, priced as deployed").

A plan runs as ``nodes`` nodes of ``gpus_per_node`` GPUs. Tensor parallelism and FSDP inside a
node need a GPU-to-GPU link (NVLink, or AMD's Infinity Fabric) between the GPUs of that node;
several nodes need a network between them. A price is therefore only a price for the plan when
one instance type holds a whole node (never three 3-GPU rentals for one 8-GPU node, never two
marketplace offers in different hosts for one TP2 replica) and, across nodes, the type has a
stated inter-node network. Pure: the per-instance table and the GPUs' link figures are passed in.

Where an instance type's intra-node link is not in the table it follows from the GPU's form
factor: SXM and OAM modules sit on a baseboard whose only GPU-to-GPU path is NVLink/NVSwitch
(NVIDIA HGX) or Infinity Fabric (AMD OAM), so a multi-GPU instance of them is linked up to the
part's link domain (the catalog's ``nvlink.domain_size``); a PCIe card is taken as linked only
over PCIe unless the table says the instance has bridges (a bridge is an option the provider
may not have fitted).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

NO_MATCHING_INSTANCE = "NO_MATCHING_INSTANCE"
"""Reason code: no priced instance type holds the plan's node shape with the link it needs."""

IntraNode = Literal["nvlink", "infinity_fabric", "pcie", "none"]
Basis = Literal["table", "form_factor", "provider_default"]
MODULE_FORM_FACTORS = frozenset({"sxm", "oam"})


@dataclass(frozen=True, slots=True)
class DeployShape:
    """A plan as deployed: ``nodes`` nodes of ``gpus_per_node`` GPUs; ``needs_gpu_link`` when the
    GPUs of a node must talk over NVLink (tensor parallelism, FSDP/ZeRO sharded inside a node).
    ``independent`` nodes never talk to each other (serving replicas): several may share one
    instance and no inter-node network is needed."""

    gpus_per_node: int
    nodes: int = 1
    needs_gpu_link: bool = False
    independent: bool = False

    def __post_init__(self) -> None:
        if self.gpus_per_node < 1 or self.nodes < 1:
            raise ValueError(f"a node shape needs >= 1 GPU per node and >= 1 node, got {self}")

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * self.nodes


@dataclass(frozen=True, slots=True)
class InstanceShape:
    """One row of the sourced per-instance-type table: ``gpus`` per instance, the link between
    them (``gpu_link_gpus``: the largest group linked by it), the inter-node network in Gb/s per
    instance (``None``: not stated, so the type is not used across nodes) and its RDMA kind."""

    provider: str
    instance_type: str
    gpus: int
    intra_node: IntraNode
    gpu_link_gpus: int
    inter_node_gbps: float | None
    rdma: str | None
    source: str


@dataclass(frozen=True, slots=True)
class ProviderNetwork:
    """What a provider's instance types not in the table are taken to have between nodes
    (``inter_node_gbps`` ``None``: no stated inter-node network, so no multi-node pricing)."""

    provider: str
    inter_node_gbps: float | None
    rdma: str | None
    source: str


@dataclass(frozen=True, slots=True)
class GpuLink:
    """The catalog's figures for one GPU that the form-factor rule needs."""

    form_factor: str | None
    link_domain_gpus: int
    vendor: str = "nvidia"


@dataclass(frozen=True, slots=True)
class InstanceNetwork:
    """The links of one instance type as the pricing took them, and on what basis."""

    intra_node: IntraNode
    gpu_link_gpus: int
    inter_node_gbps: float | None
    rdma: str | None
    intra_basis: Basis
    inter_basis: Basis
    source: str


@dataclass(frozen=True, slots=True)
class ShapeTable:
    """The per-instance table and the per-provider defaults (``service/catalog/data``)."""

    instances: Mapping[tuple[str, str], InstanceShape]
    providers: Mapping[str, ProviderNetwork]

    def network(
        self, provider: str, instance_type: str, gpus_per_instance: int, link: GpuLink | None
    ) -> InstanceNetwork:
        """The instance type's links: the table's row when there is one, else the form-factor
        rule inside the instance and the provider's default between instances."""
        row = self.instances.get((provider, instance_type))
        if row is not None:
            return InstanceNetwork(
                intra_node=row.intra_node,
                gpu_link_gpus=min(row.gpu_link_gpus, gpus_per_instance),
                inter_node_gbps=row.inter_node_gbps,
                rdma=row.rdma,
                intra_basis="table",
                inter_basis="table",
                source=row.source,
            )
        intra: IntraNode = "none" if gpus_per_instance == 1 else "pcie"
        linked = 1
        if gpus_per_instance > 1 and link is not None and link.form_factor in MODULE_FORM_FACTORS:
            intra = "infinity_fabric" if link.vendor == "amd" else "nvlink"
            linked = min(gpus_per_instance, max(link.link_domain_gpus, 1))
        default = self.providers.get(provider)
        return InstanceNetwork(
            intra_node=intra,
            gpu_link_gpus=linked,
            inter_node_gbps=default.inter_node_gbps if default else None,
            rdma=default.rdma if default else None,
            intra_basis="form_factor",
            inter_basis="provider_default",
            source=default.source if default else f"no network stated for provider {provider}",
        )


EMPTY_TABLE = ShapeTable(instances={}, providers={})


def holds(shape: DeployShape, gpus_per_instance: int, net: InstanceNetwork) -> str | None:
    """Why an instance type of ``gpus_per_instance`` GPUs with links ``net`` cannot hold one node
    of ``shape`` (a sentence), or ``None`` when it can. One instance per node: a node is never
    assembled from several instances."""
    if gpus_per_instance < shape.gpus_per_node:
        return f"{gpus_per_instance} GPUs per instance, the node needs {shape.gpus_per_node}"
    if shape.needs_gpu_link and shape.gpus_per_node > 1 and net.gpu_link_gpus < shape.gpus_per_node:
        return (
            f"the node's {shape.gpus_per_node} GPUs need NVLink between them; this instance links "
            f"{net.gpu_link_gpus} over {net.intra_node}"
        )
    if shape.nodes > 1 and not shape.independent and not net.inter_node_gbps:
        return f"{shape.nodes} nodes need a stated inter-node network; {net.source}"
    return None
