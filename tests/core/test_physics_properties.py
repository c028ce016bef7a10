"""Physical properties of the estimator over every catalog GPU (a grid, deterministic):

* with all else equal, a step is never slower on a GPU with a higher dense peak, nor on one
  with more memory bandwidth -- under the spec defaults *and* under fitted efficiencies, so a
  fitted constant can never make a faster GPU slower;
* peak memory is monotone in batch size and sequence length;
* for n >= 2 at a fixed micro-batch, FSDP/ZeRO memory per GPU is non-increasing in n and DDP
  memory is constant.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from service.catalog.loader import load_shipped
from service.core.catalog.models import get_model
from service.core.catalog.specs import GpuSpec, gpu_spec_from_doc
from service.core.errors import MissingFigure
from service.core.estimation.calibration import Calibration as _Cal
from service.core.estimation.calibration import apply_multipliers, transfer_precision
from service.core.estimation.memory import TrainConfig, estimate_training
from service.core.estimation.performance import SPEC_DEFAULTS, Efficiencies, estimate_step

CATALOG = [gpu_spec_from_doc(d) for d in load_shipped().gpus]
TIMED = [g for g in CATALOG if g.peak_for("bf16") and g.bandwidth_gb_per_s]

EFFICIENCIES: dict[str, Efficiencies] = {
    "spec": SPEC_DEFAULTS,
    # the extremes a fit can reach, both ways, for every fitted group
    "fitted-low": apply_multipliers(
        SPEC_DEFAULTS, {"mm": 0.5, "attn": 0.5, "bw": 0.5, "dispatch": 4.0, "conv": 0.5}
    ),
    "fitted-high": apply_multipliers(
        SPEC_DEFAULTS, {"mm": 1.2, "attn": 2.0, "bw": 1.2, "dispatch": 0.3, "conv": 2.0}
    ),
}

CONFIGS = {
    # compute-bound (large tokens per step), memory-bound-ish (tiny batch, LoRA), launch-bound
    "compute": TrainConfig(model=get_model("llama3-8b"), precision="bf16", batch_size=4, seq_len=4096),
    "ckpt": TrainConfig(
        model=get_model("gt-llama-1b-v32k"), batch_size=8, seq_len=2048, gradient_checkpointing=True
    ),
    "small": TrainConfig(model=get_model("gt-llama-110m"), batch_size=2, seq_len=512),
    "lora": TrainConfig(
        model=get_model("llama2-7b"), precision="bf16", finetune="lora", batch_size=1, seq_len=256
    ),
    "fsdp": TrainConfig(
        model=get_model("llama3-8b"),
        batch_size=1,
        seq_len=2048,
        sharding="fsdp",
        gpu_count=8,
        mixed_precision="fsdp_policy",
        optimizer_impl="foreach",
    ),
    "bert": TrainConfig(model=get_model("bert-large"), batch_size=32, seq_len=512),
    "resnet": TrainConfig(model=get_model("resnet50"), batch_size=128, seq_len=1, optimizer="sgd"),
}


def _faster(g: GpuSpec, peak: float = 1.0, bw: float = 1.0) -> GpuSpec:
    return replace(
        g,
        slug=g.slug + "-x",
        peaks={k: v * peak for k, v in g.peaks.items()},
        bandwidth_gb_per_s=(g.bandwidth_gb_per_s or 0) * bw,
    )


@pytest.mark.parametrize("eff", sorted(EFFICIENCIES))
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_never_slower_on_a_higher_peak_or_more_bandwidth(config: str, eff: str) -> None:
    c, e = CONFIGS[config], EFFICIENCIES[eff]
    assert len(TIMED) >= 10
    checked = 0
    for g in TIMED:
        try:
            base = estimate_step(c, g, e).step_time_s
        except MissingFigure:  # no time estimate at all for this GPU and precision
            continue
        checked += 1
        for k in (1.01, 1.5, 4.0):
            assert estimate_step(c, _faster(g, peak=k), e).step_time_s <= base * (1 + 1e-12), (g.slug, k)
            assert estimate_step(c, _faster(g, bw=k), e).step_time_s <= base * (1 + 1e-12), (g.slug, k)
    assert checked >= 10


def test_a_precision_transfer_never_makes_a_faster_gemm_slower() -> None:
    """The GEMM-ratio transfer: a higher measured rate for the target precision never gives a
    slower step."""
    g = next(x for x in TIMED if x.peak_for("tf32"))
    cal = _Cal(
        efficiencies=EFFICIENCIES["spec"],
        band=(0.1, 0.1),
        multipliers={},
        source_gpus=(g.slug,),
        architecture=g.family,
        n_points=10,
        fit_mape=0.05,
    )
    c = replace(CONFIGS["compute"], precision="tf32")
    times = []
    for rate in (100.0, 200.0, 300.0, 400.0):
        t = transfer_precision(cal, g, "tf32", {"bf16": 600.0, "tf32": rate})
        assert t is not None
        times.append(estimate_step(c, g, t.efficiencies).step_time_s)
    assert times == sorted(times, reverse=True)


@pytest.mark.parametrize("config", ["compute", "ckpt", "small", "lora", "fsdp", "bert"])
def test_memory_is_monotone_in_batch_and_sequence(config: str) -> None:
    c = CONFIGS[config]
    last = 0
    for b in (1, 2, 3, 4, 8, 16):
        peak = estimate_training(replace(c, batch_size=b, global_batch=0)).peak_allocated_bytes
        assert peak >= last
        last = peak
    last = 0
    for s in (128, 256, 512, 1024, 2048, 4096):
        peak = estimate_training(replace(c, seq_len=s)).peak_allocated_bytes
        assert peak >= last
        last = peak


@pytest.mark.parametrize("model", ["gt-llama-1b-v32k", "llama3-8b", "llama3-70b"])
@pytest.mark.parametrize("precision", ["amp_bf16", "bf16"])
def test_sharded_memory_per_gpu_never_grows_with_more_gpus_and_ddp_is_constant(
    model: str, precision: str
) -> None:
    base = TrainConfig(
        model=get_model(model),
        precision=precision,
        batch_size=1,
        seq_len=2048,
        gradient_checkpointing=True,
        optimizer_impl="foreach",
    )
    variants = [("fsdp", "autocast"), ("zero1", "autocast"), ("zero2", "autocast"), ("zero3", "autocast")]
    if precision.startswith("amp_"):
        variants.append(("fsdp", "fsdp_policy"))
    for sharding, mixed in variants:
        last = None
        for n in (2, 4, 8, 16, 32, 64, 128):
            peak = estimate_training(replace(base, sharding=sharding, gpu_count=n, mixed_precision=mixed))
            need = peak.device_memory_needed_bytes
            if last is not None:
                assert need <= last, (sharding, mixed, n)
            last = need
    ddp = {
        estimate_training(replace(base, sharding="ddp", gpu_count=n)).device_memory_needed_bytes
        for n in (2, 4, 8, 16, 64)
    }
    assert len(ddp) == 1
