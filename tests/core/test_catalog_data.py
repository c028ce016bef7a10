"""The shipped catalog: schema-valid, sourced, and free of the seed posts' wrong figures."""

from __future__ import annotations

from collections import Counter

import pytest

from service.catalog.loader import load_shipped
from service.core.specs import normalise_name
from service.schemas.gpus import GpuDocument

GPUS = {g["slug"]: GpuDocument.model_validate(g) for g in load_shipped().gpus}
REQUIRED = [
    "nvidia-v100-sxm2-16gb", "nvidia-v100-pcie-16gb", "nvidia-t4", "nvidia-a10", "nvidia-a10g", "nvidia-a30",
    "nvidia-a40", "nvidia-a100-pcie-40gb", "nvidia-a100-pcie-80gb", "nvidia-a100-sxm4-40gb",
    "nvidia-a100-sxm4-80gb", "nvidia-l4", "nvidia-l20", "nvidia-l40", "nvidia-l40s", "nvidia-h20",
    "nvidia-h100-pcie", "nvidia-h100-sxm", "nvidia-h100-nvl-94gb", "nvidia-h800-sxm", "nvidia-h200-sxm",
    "nvidia-h200-nvl", "nvidia-b200", "nvidia-rtx-4090", "nvidia-rtx-6000-ada", "nvidia-rtx-a6000",
    "amd-mi210", "amd-mi250x", "amd-mi300x", "amd-mi325x", "intel-gaudi2", "intel-gaudi3",
]


def test_at_least_35_devices_including_the_required_ones() -> None:
    assert len(GPUS) >= 35
    missing = [s for s in REQUIRED if s not in GPUS]
    assert not missing
    assert any(s.startswith("nvidia-a800") for s in GPUS)


def test_every_entry_has_sources_and_consistent_memory() -> None:
    for slug, g in GPUS.items():
        assert g.sources, slug
        m = g.memory
        if m.memory_bytes and m.usable_memory_bytes:
            assert m.usable_memory_bytes <= m.memory_bytes * 1.02, slug


def test_seed_post_errors_are_not_in_the_catalog() -> None:
    l40, l20 = GPUS["nvidia-l40"], GPUS["nvidia-l20"]
    assert l40.architecture == "Ada Lovelace" and l40.peaks.fp32_tflops == 90.5 and l40.power.tdp_w == 300
    assert l40.supports.fp8 == "yes"
    assert l20.memory.bandwidth_gb_per_s == 864 and l20.memory.memory_bytes == 48 * 2**30
    assert l20.compute.cuda_cores == 11776 and l20.power.tdp_w == 275
    assert GPUS["nvidia-a100-pcie-80gb"].memory.bandwidth_gb_per_s == 1935
    assert GPUS["nvidia-a100-sxm4-80gb"].memory.bandwidth_gb_per_s == 2039
    assert GPUS["nvidia-a100-sxm4-40gb"].memory.bandwidth_gb_per_s == 1555
    assert GPUS["nvidia-a100-pcie-40gb"].power.tdp_w == 250
    assert GPUS["nvidia-a100-sxm4-80gb"].power.tdp_w == 400


@pytest.mark.parametrize(
    ("slug", "mib"),
    [("nvidia-h200-sxm", 143_771), ("nvidia-h100-sxm", 81_559), ("nvidia-l40s", 46_068), ("nvidia-l20", 46_068)],
)
def test_usable_memory_from_design(slug: str, mib: int) -> None:
    assert GPUS[slug].memory.usable_memory_bytes == mib * 2**20


def test_peaks_are_dense_and_ordered() -> None:
    for slug, g in GPUS.items():
        p = g.peaks
        if p.bf16_tflops and p.fp8_tflops:
            assert p.fp8_tflops <= 2.05 * p.bf16_tflops, slug
        if p.tf32_tflops and p.bf16_tflops:
            assert p.tf32_tflops <= p.bf16_tflops * 1.01, slug
    assert GPUS["nvidia-h100-sxm"].peaks.bf16_tflops == pytest.approx(989.4, rel=0.01)
    assert GPUS["nvidia-rtx-4090"].peaks.fp16_tflops == pytest.approx(165.2, rel=0.01)


def test_alias_defaults_are_unique_per_alias() -> None:
    defaults: Counter[str] = Counter()
    for g in GPUS.values():
        for a in g.aliases:
            if a.default:
                defaults[normalise_name(a.name)] += 1
    assert all(n == 1 for n in defaults.values()), defaults
