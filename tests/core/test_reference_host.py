"""One host for every transferred answer (``CalibrationSet.reference_host``): each measured GPU
ran on its own machine, and machines differ in how fast they launch an eager step, so a GPU
nobody measured must not take its nearest source's machine with it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from service.catalog.loader import load_shipped
from service.core.catalog.models import get_model
from service.core.catalog.specs import GpuSpec, gpu_spec_from_doc
from service.core.estimation.band import Band
from service.core.estimation.calibration import CalibrationSet
from service.core.estimation.calibration_fit import Calibration
from service.core.estimation.efficiencies import SPEC_DEFAULTS
from service.core.estimation.estimate_time import host_spread_s
from service.core.estimation.memory_encoders import BatchInferenceConfig
from service.core.estimation.serving import estimate_batch_inference

_SHIPPED = {g["slug"]: gpu_spec_from_doc(g) for g in load_shipped().gpus}
H200_SXM, H100_SXM, H100_PCIE, B200 = (
    _SHIPPED[s] for s in ("nvidia-h200-sxm", "nvidia-h100-sxm", "nvidia-h100-pcie", "nvidia-b200")
)
SLOW_HOST_S, FAST_HOST_S = 30e-6, 10e-6


def _fit(gpu: GpuSpec, dispatch_s: float, n: int) -> Calibration:
    return Calibration(
        efficiencies=replace(SPEC_DEFAULTS, dispatch_s=dispatch_s, step_s=2e-3 if n > 5 else 1e-3),
        band=(0.1, 0.1),
        multipliers={},
        source_gpus=(gpu.slug,),
        architecture=gpu.architecture or "",
        n_points=n,
        fit_mape=0.05,
        source=gpu,
    )


def _set() -> CalibrationSet:
    """The H200 measured on a slow-launching machine (8 points: the reference), the H100 SXM on a
    fast one (3 points)."""
    return CalibrationSet(
        by_key={
            (H200_SXM.slug, "resnet50-infer", "16bit"): _fit(H200_SXM, SLOW_HOST_S, 8),
            (H100_SXM.slug, "resnet50-infer", "16bit"): _fit(H100_SXM, FAST_HOST_S, 3),
        },
        families={H200_SXM.slug: H200_SXM.family, H100_SXM.slug: H100_SXM.family},
    )


def test_the_best_populated_fit_is_the_reference_host() -> None:
    cs = _set()
    ref = cs.reference_host("resnet50-infer", "16bit")
    assert ref is not None and ref.source_gpus == (H200_SXM.slug,)
    host = cs.host_profile("resnet50-infer", "amp_bf16")
    assert host is not None and host.dispatch_s == SLOW_HOST_S and H200_SXM.slug in host.source
    assert cs.reference_host("bert-large-infer", "16bit") is None


def test_a_transfer_keeps_its_sources_gpu_side_but_the_reference_host() -> None:
    """The H100 PCIe is answered from its nearest measured GPU, the H100 SXM (its compute and
    bandwidth efficiencies), but on the reference machine's launches; measured GPUs keep their own."""
    cs = _set()
    pcie = cs.pick(H100_PCIE, "resnet50-infer", "amp_bf16")
    assert pcie is not None and pcie.source_gpus == (H100_SXM.slug,)
    assert pcie.efficiencies.dispatch_s == SLOW_HOST_S and pcie.efficiencies.step_s == 2e-3
    assert "host side" in pcie.notes[-1] and H200_SXM.slug in pcie.notes[-1]
    own = cs.pick(H100_SXM, "resnet50-infer", "amp_bf16")
    assert own is not None and own.efficiencies.dispatch_s == FAST_HOST_S  # its own machine, measured
    from_ref = cs.pick(B200, "resnet50-infer", "amp_bf16")
    assert from_ref is not None and from_ref.efficiencies.dispatch_s == SLOW_HOST_S
    assert not any("host side" in n for n in from_ref.notes)  # already the reference's machine


def test_unmeasured_gpus_are_ordered_by_their_figures_not_their_sources_machines() -> None:
    """At a launch-bound batch, the GPU with more peak and bandwidth (B200, answered from the
    H200) is not slower than one with less (H100 PCIe, answered from the fast-host H100 SXM)."""
    cs = _set()
    model = get_model("resnet50")
    assert not isinstance(model, type(None))
    c = BatchInferenceConfig(model=model, batch_size=1, seq_len=1, precision="amp_bf16")  # type: ignore[arg-type]
    step = {}
    for g in (H100_PCIE, B200):
        cal = cs.pick(g, "resnet50-infer", "amp_bf16")
        assert cal is not None
        step[g.slug] = estimate_batch_inference(c, g, cal.efficiencies).step_time_s
    assert step[B200.slug] <= step[H100_PCIE.slug], step


def test_a_transferred_band_spans_the_measured_machines_hosts() -> None:
    """The user's machine is none of those that measured: the band reaches the step's host part
    at the fastest and slowest measured machine, added to the GPU's time or inside an encoder's
    ``max(GPU, host)``."""
    pcie = _set().pick(H100_PCIE, "resnet50-infer", "amp_bf16")
    assert pcie is not None and pcie.host_range == (FAST_HOST_S / SLOW_HOST_S, 1.0)
    assert host_spread_s(3e-3, (0.5, 1.5)) == pytest.approx((1.5e-3, 1.5e-3))
    assert host_spread_s(3e-3, (0.5, 1.5), gpu_s=4e-3) == pytest.approx(
        (0.0, 0.5e-3)
    )  # hidden until it overtakes
    assert Band(1.0, 2.0, 3.0).widened(1.5, 0.5) == Band(0.0, 2.0, 3.5)
