"""Node layout and network, pipeline parallelism, training stacks, and the bound with its
shares (issue 25's interface): physics stated as tests, through the pure core."""

from __future__ import annotations

from dataclasses import replace

import pytest

from service.catalog.loader import load_shipped
from service.core.catalog.models import get_model
from service.core.catalog.specs import GpuSpec, gpu_spec_from_doc
from service.core.errors import InvalidConfiguration
from service.core.estimation.calibration import CalibrationSet
from service.core.estimation.estimate import JobSpec, build_job, estimate
from service.core.estimation.memory import TrainConfig, estimate_training
from service.core.estimation.performance import H200_SXM, TIME_TERMS, step_summary


@pytest.fixture(scope="module")
def gpus() -> dict[str, GpuSpec]:
    return {d["slug"]: gpu_spec_from_doc(d) for d in load_shipped().gpus}


def _time(gpu: GpuSpec, **kw: object):  # type: ignore[no-untyped-def]
    t = estimate(gpu, build_job(JobSpec(**kw)), CalibrationSet()).time  # type: ignore[arg-type]
    assert t is not None
    return t


def test_fsdp_time_depends_on_the_node_layout(gpus: dict[str, GpuSpec]) -> None:
    """FSDP over 8 L40s: one PCIe node, 4 nodes of 2 and 8 nodes of 1 answer different times, and
    a slower network between the same nodes is slower (the network is stated in the answer)."""
    l40 = gpus["nvidia-l40"]
    job = {"model": "llama2-70b", "mode": "fine-tuning", "sharding": "fsdp", "gpu_count": 8, "seq_len": 4096}
    steps = {g: _time(l40, gpus_per_node=g, **job).step_time_s for g in (8, 2, 1)}
    assert len({round(v, 6) for v in steps.values()}) == 3
    fast = _time(l40, gpus_per_node=2, network_gbps_per_node=800.0, **job)
    slow = _time(l40, gpus_per_node=2, network_gbps_per_node=25.0, **job)
    tcp = _time(l40, gpus_per_node=2, network_gbps_per_node=800.0, rdma=False, **job)
    assert slow.step_time_s > fast.step_time_s and tcp.step_time_s > fast.step_time_s
    assert slow.network is not None and "25 Gb/s per node" in slow.network
    assert _time(l40, **job).network is None  # one node: no network to state


def test_default_network_is_stated_across_nodes(gpus: dict[str, GpuSpec]) -> None:
    t = _time(gpus["nvidia-h100-sxm"], model="llama3-8b", sharding="fsdp", gpu_count=16)
    assert t.network is not None and "default: 400 Gb/s per GPU" in t.network
    assert any(n.startswith("network: 2 node(s) of 8 GPUs") for n in t.notes)


def test_a_faster_network_is_never_slower(gpus: dict[str, GpuSpec]) -> None:
    for sharding in ("ddp", "fsdp", "zero1", "zero3"):
        prev = None
        for net in (25.0, 100.0, 400.0, 1600.0, 3200.0):
            t = _time(
                gpus["nvidia-h100-sxm"],
                model="llama3-8b",
                sharding=sharding,
                gpu_count=32,
                network_gbps_per_node=net,
            )
            assert prev is None or t.step_time_s <= prev + 1e-12, (sharding, net)
            prev = t.step_time_s


def test_shares_sum_to_one_and_bound_is_the_largest(gpus: dict[str, GpuSpec]) -> None:
    for kw in (
        {"model": "gt-llama-110m", "batch_size": 2, "seq_len": 512},
        {"model": "llama3-8b", "batch_size": 4, "seq_len": 2048},
        {"model": "llama2-70b", "sharding": "fsdp", "gpu_count": 16, "network_gbps_per_node": 10.0},
        {
            "model": "llama3-70b",
            "gpu_count": 64,
            "tensor_parallel": 4,
            "pipeline_parallel": 4,
            "sharding": "zero1",
        },
        {"model": "resnet50", "batch_size": 64},
    ):
        t = _time(gpus["nvidia-h100-sxm"], **kw)
        assert sum(t.time_shares.values()) == pytest.approx(1.0, abs=0.005), kw
        terms = {k: v for k, v in t.time_shares.items() if k in TIME_TERMS}
        assert t.bound == max(terms, key=lambda k: terms[k]), kw


def test_bound_labels_follow_the_modelled_terms(gpus: dict[str, GpuSpec]) -> None:
    """A small model at 1k tokens is host-bound; an 8k-token LoRA step on an L40 is compute-bound
    (issue 25 found it labelled memory-bound); FSDP of a 70B over a slow network is
    communication-bound (it was labelled compute-bound at 11 % MFU)."""
    h100 = gpus["nvidia-h100-sxm"]
    assert _time(h100, model="gt-llama-110m", batch_size=2, seq_len=512).bound == "host"
    lora = _time(gpus["nvidia-l40"], model="llama3-8b", mode="fine-tuning", batch_size=4, seq_len=2048)
    assert lora.bound == "compute"
    comm = _time(
        h100, model="llama2-70b", sharding="fsdp", gpu_count=16, gpus_per_node=2, network_gbps_per_node=25.0
    )
    assert comm.bound == "communication" and comm.time_shares["communication"] > 0.5


def test_pipeline_bubble_and_micro_batches() -> None:
    """1F1B: the bubble share is (pp - 1) / (m + pp - 1) of the pipelined time, and more
    micro-batches per step shrink it."""
    m = get_model("llama3-8b")
    base = TrainConfig(m, "amp_bf16", batch_size=1, seq_len=2048, gpu_count=4, pipeline_parallel=4)
    few = step_summary(replace(base, global_batch=4), H200_SXM)
    many = step_summary(replace(base, global_batch=32), H200_SXM)
    assert few.shares[4] > many.shares[4] > 0
    assert few.shares[4] == pytest.approx(3 / (4 + 3), rel=0.15)  # optimizer and p2p aside
    assert many.shares[4] == pytest.approx(3 / (32 + 3), rel=0.15)


def test_pipeline_memory_per_stage() -> None:
    """A stage holds its share of the layers: the per-GPU peak falls with more stages, the first
    stage holds the activations of min(pp, m) micro-batches, and the data-parallel count is
    gpu_count / (tp x pp)."""
    m = get_model("llama3-8b")
    one = estimate_training(TrainConfig(m, "bf16", batch_size=1, seq_len=4096, global_batch=8))
    pp4 = estimate_training(
        TrainConfig(m, "bf16", batch_size=1, seq_len=4096, gpu_count=4, pipeline_parallel=4, global_batch=8)
    )
    assert pp4.peak_allocated_bytes < 0.6 * one.peak_allocated_bytes
    assert any("pipeline stages" in a for a in pp4.assumptions)
    c = TrainConfig(m, "bf16", gpu_count=16, tensor_parallel=2, pipeline_parallel=4)
    assert c.data_parallel == 2
    with pytest.raises(InvalidConfiguration) as e:
        TrainConfig(m, "bf16", gpu_count=6, pipeline_parallel=4)
    assert e.value.field == "pipeline_parallel"
    with pytest.raises(InvalidConfiguration):
        TrainConfig(m, "bf16", gpu_count=4, pipeline_parallel=4, sharding="fsdp")


def test_stack_sets_efficiencies_only(gpus: dict[str, GpuSpec]) -> None:
    """An optimised stack is faster than the eager loop on every GPU with a time, leaves memory
    alone, and the answer names it and the defaults it changed."""
    job = {
        "model": "tinyllama-1.1b",
        "sharding": "fsdp",
        "gpu_count": 16,
        "batch_size": 8,
        "global_batch": 1024,
    }
    for slug in ("nvidia-a100-sxm4-40gb", "nvidia-h100-sxm", "nvidia-l40"):
        eager = _time(gpus[slug], **job)
        for stack in ("compiled", "megatron"):
            t = _time(gpus[slug], stack=stack, **job)
            assert t.step_time_s < eager.step_time_s, (slug, stack)
            assert t.stack == stack and any(n.startswith(f"stack {stack}") for n in t.notes)
    mem = estimate(
        gpus["nvidia-h100-sxm"], build_job(JobSpec(stack="megatron", **job)), CalibrationSet()
    ).memory  # type: ignore[arg-type]
    ref = estimate(gpus["nvidia-h100-sxm"], build_job(JobSpec(**job)), CalibrationSet()).memory  # type: ignore[arg-type]
    assert mem.estimate == ref.estimate
    with pytest.raises(InvalidConfiguration):
        TrainConfig(get_model("llama3-8b"), stack="deepspeed-magic")
