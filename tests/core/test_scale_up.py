"""The scale-up fabric a group of GPUs in one node talks over (``GpuSpec.scale_up_gb_per_s``),
on the shipped catalog: a switch gives every GPU its whole figure, an OAM board's full mesh only
the links to the group's peers, and the service's collectives and the cross-GPU transfer both
use it."""

from __future__ import annotations

import pytest

from service.catalog.loader import load_shipped
from service.core.catalog.specs import GpuSpec, gpu_spec_from_doc
from service.core.estimation import transfer_sources as ts
from service.core.estimation.network import Layout, collective_s, link_bytes_per_s

SPECS = {g["slug"]: gpu_spec_from_doc(g) for g in load_shipped().gpus}


def test_a_switch_gives_every_group_the_whole_figure() -> None:
    h200 = SPECS["nvidia-h200-sxm"]
    full = h200.node.nvlink_per_direction_gb_per_s
    assert full is not None
    assert [h200.scale_up_gb_per_s(n) for n in (2, 4, 8)] == [full, full, full]
    assert h200.scale_up_gb_per_s(16) is None  # past the domain: the network's business


def test_an_oam_mesh_gives_a_group_one_link_per_peer() -> None:
    """The 8-OAM board links each GPU to each of the other 7 (the catalog's 448 GB/s per
    direction is their sum): two GPUs talk over one link, four over three."""
    for slug in ("amd-mi300x", "amd-mi355x", "intel-gaudi2"):
        g = SPECS[slug]
        agg = g.node.nvlink_per_direction_gb_per_s
        assert g.form_factor == "oam" and g.node.nvlink_topology == "pairwise" and agg
        per_peer = agg / (g.node.nvlink_domain_size - 1)
        assert g.scale_up_gb_per_s(2) == pytest.approx(per_peer)
        assert g.scale_up_gb_per_s(4) == pytest.approx(3 * per_peer)
        assert g.scale_up_gb_per_s(8) == pytest.approx(agg)
        # a strided pair (data parallelism across two TP-4 groups) still has one link
        assert g.scale_up_gb_per_s(2, span=8) == pytest.approx(per_peer)
        assert g.scale_up_gb_per_s(2, span=16) is None
    assert SPECS["amd-mi300x"].scale_up_gb_per_s(2) == pytest.approx(64.0)


def test_a_bridge_pair_and_a_cube_mesh_keep_their_figure() -> None:
    a100 = SPECS["nvidia-a100-pcie-80gb"]
    assert a100.scale_up_gb_per_s(2) == a100.node.nvlink_per_direction_gb_per_s
    assert a100.scale_up_gb_per_s(4) is None
    v100 = SPECS["nvidia-v100-sxm2-32gb"]
    assert v100.scale_up_gb_per_s(2) == v100.node.nvlink_per_direction_gb_per_s


def test_an_all_reduce_over_two_mesh_gpus_takes_the_one_link() -> None:
    """The service's own collective: two MI300X all-reduce over one 64 GB/s link, seven times
    slower per byte than eight over all seven; an H200 pair keeps its NVLink figure."""
    mi300x, h200 = SPECS["amd-mi300x"], SPECS["nvidia-h200-sxm"]
    assert link_bytes_per_s(mi300x, 2) == pytest.approx(64e9)
    layout = Layout(gpus_per_node=8, nodes=1, network_gbps_per_node=3200.0, rdma=True, stated=True)

    def per_byte(gpu: GpuSpec, ranks: int) -> float:
        t = collective_s(1e9, ranks, 1, True, gpu, layout, 1.0, 8)
        return t / (2.0 * (ranks - 1) / ranks * 1e9)

    assert per_byte(mi300x, 2) == pytest.approx(7.0 * per_byte(mi300x, 8))
    assert per_byte(h200, 2) == pytest.approx(per_byte(h200, 8))


def test_the_transfer_puts_an_unstated_mesh_on_the_board_not_on_pcie() -> None:
    """A source that does not say "NVLink" (AMD's and Intel's never do) still runs an OAM board's
    mesh; only a PCIe card's bridge is optional."""
    mi300x = SPECS["amd-mi300x"]
    assert ts.link_gb_per_s(mi300x, 8, bridged=False) == pytest.approx(448.0)
    assert ts.link_gb_per_s(mi300x, 4, bridged=False) == pytest.approx(192.0)
    assert ts.link_gb_per_s(mi300x, 16, bridged=False) == mi300x.node.pcie_per_direction_gb_per_s


def test_the_fabric_carries_its_vendors_name() -> None:
    """NVLink, AMD's Infinity Fabric, Gaudi's integrated RoCE ports: an answer names the link
    a KV cache or an all-reduce crosses as the vendor does."""
    from service.core.catalog.specs import GpuSpec

    names = {v: GpuSpec(slug=v, vendor=v).scale_up_fabric for v in ("nvidia", "amd", "intel")}
    assert names == {"nvidia": "NVLink", "amd": "Infinity Fabric", "intel": "RoCE"}
