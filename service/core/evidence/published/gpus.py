"""Datasheet figures of the GPUs in the shipped published *training* tables (pure data).

The cross-GPU transfer (``service.core.estimation.transfer``) is fitted on these tables inside the pure core,
so it needs each GPU's figures without reading the catalog: dense peaks at FP32 accumulate
(TFLOP/s), memory bandwidth (GB/s), board power (W) and compute capability.

* **Catalogued GPUs** carry the shipped catalog's figures verbatim (``service/catalog/data``; the
  sources are in ``SOURCES.md``). ``tests/core/test_transfer.py`` checks that every figure here
  equals the catalog's, so a corrected catalog figure fails the suite until it is copied here.
* **GPUs of the tables that the catalog does not carry** (Lambda's 2020 and 2021 tables:
  Titan RTX, GeForce RTX 2080 Ti / 3070 / 3080, Quadro RTX 5000 / 6000, RTX A4000) are sourced
  below, one note per GPU, with the same rules as the catalog (dense, FP32 accumulate, sparse
  figures halved, a derivation shown where no document gives the figure). They are used only
  to fit and validate the transfer; the service cannot estimate on them (no catalog entry). Their
  ids look like slugs but are not catalog slugs (a test checks it); if the catalog adds one, its
  figures move to the catalogued block.
* **Left out**: the GeForce GTX 1080 Ti (Pascal: no tensor cores, FP16 at 1/64 of the FP32 rate,
  so its ``fp16`` rows have no datasheet peak to scale), the V100 SXM3 32 GB of DGX-2 (the catalog
  leaves its peaks and bandwidth null: no per-GPU vendor figures), and the Grace-Blackwell
  systems of the NeMo table (not catalogued; multi-GPU rows only).

Board power is the datasheet's maximum / total board power (the figure the catalog records), the
value a power-capped clock is computed against.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from service.core.catalog.specs import GpuSpec
from service.core.evidence.published.schema import PublishedRow


def _gpu(
    slug: str,
    name: str,
    architecture: str,
    cc: str,
    fp32: float,
    tf32: float | None,
    fp16: float,
    bandwidth: float,
    tdp: float,
) -> GpuSpec:
    peaks = {"fp32": fp32, "fp16": fp16}
    if float(cc) >= 8.0:  # BF16 tensor cores from Ampere on, at the FP16 rate
        peaks["bf16"] = fp16
    if tf32 is not None:
        peaks["tf32"] = tf32
    return GpuSpec(
        slug=slug,
        name=name,
        architecture=architecture,
        compute_capability=cc,
        peaks=peaks,
        bandwidth_gb_per_s=bandwidth,
        tdp_w=tdp,
    )


CATALOGUED: Final[dict[str, GpuSpec]] = {
    g.slug: g
    for g in (
        # slug, name, architecture, cc, FP32, TF32, FP16 (FP32 acc.), GB/s, W -- the shipped catalog's values
        _gpu(
            "nvidia-v100-sxm2-16gb",
            "NVIDIA Tesla V100 SXM2 16GB",
            "Volta",
            "7.0",
            15.7,
            None,
            125.0,
            900.0,
            300,
        ),
        _gpu(
            "nvidia-v100-pcie-32gb",
            "NVIDIA Tesla V100 PCIe 32GB",
            "Volta",
            "7.0",
            14.0,
            None,
            112.0,
            900.0,
            250,
        ),
        _gpu(
            "nvidia-quadro-rtx-8000", "NVIDIA Quadro RTX 8000", "Turing", "7.5", 16.3, None, 130.5, 672.0, 295
        ),
        _gpu("nvidia-a10", "NVIDIA A10", "Ampere", "8.6", 31.2, 62.5, 125.0, 600.0, 150),
        _gpu(
            "nvidia-a100-pcie-40gb", "NVIDIA A100 40GB PCIe", "Ampere", "8.0", 19.5, 156.0, 312.0, 1555.0, 250
        ),
        _gpu(
            "nvidia-a100-sxm4-40gb", "NVIDIA A100 40GB SXM4", "Ampere", "8.0", 19.5, 156.0, 312.0, 1555.0, 400
        ),
        _gpu(
            "nvidia-a100-pcie-80gb", "NVIDIA A100 80GB PCIe", "Ampere", "8.0", 19.5, 156.0, 312.0, 1935.0, 300
        ),
        _gpu(
            "nvidia-a100-sxm4-80gb", "NVIDIA A100 80GB SXM4", "Ampere", "8.0", 19.5, 156.0, 312.0, 2039.0, 400
        ),
        _gpu("nvidia-a40", "NVIDIA A40", "Ampere", "8.6", 37.4, 74.8, 149.7, 696.0, 300),
        _gpu("nvidia-rtx-3090", "NVIDIA GeForce RTX 3090", "Ampere", "8.6", 35.6, 35.6, 71.0, 936.0, 350),
        _gpu("nvidia-rtx-a5000", "NVIDIA RTX A5000", "Ampere", "8.6", 27.8, 55.5, 111.1, 768.0, 230),
        _gpu("nvidia-rtx-a6000", "NVIDIA RTX A6000", "Ampere", "8.6", 38.7, 77.4, 154.8, 768.0, 300),
        _gpu(
            "nvidia-rtx-4090",
            "NVIDIA GeForce RTX 4090",
            "Ada Lovelace",
            "8.9",
            82.6,
            82.6,
            165.2,
            1008.0,
            450,
        ),
        _gpu(
            "nvidia-rtx-6000-ada",
            "NVIDIA RTX 6000 Ada Generation",
            "Ada Lovelace",
            "8.9",
            91.1,
            182.1,
            364.0,
            960.0,
            300,
        ),
        _gpu("nvidia-h100-pcie", "NVIDIA H100 PCIe", "Hopper", "9.0", 51.0, 378.0, 756.5, 2000.0, 350),
        _gpu("nvidia-h100-sxm", "NVIDIA H100 SXM5 80GB", "Hopper", "9.0", 67.0, 494.5, 989.5, 3350.0, 700),
    )
}

TABLE_ONLY: Final[dict[str, GpuSpec]] = {
    g.slug: g
    for g in (
        _gpu("nvidia-titan-rtx", "NVIDIA TITAN RTX", "Turing", "7.5", 16.3, None, 130.5, 672.0, 280),
        _gpu(
            "nvidia-quadro-rtx-6000", "NVIDIA Quadro RTX 6000", "Turing", "7.5", 16.3, None, 130.5, 672.0, 295
        ),
        _gpu(
            "nvidia-quadro-rtx-5000", "NVIDIA Quadro RTX 5000", "Turing", "7.5", 11.2, None, 89.2, 448.0, 265
        ),
        _gpu(
            "nvidia-rtx-2080-ti", "NVIDIA GeForce RTX 2080 Ti", "Turing", "7.5", 13.4, None, 53.8, 616.0, 250
        ),
        _gpu("nvidia-rtx-3070", "NVIDIA GeForce RTX 3070", "Ampere", "8.6", 20.3, 20.3, 40.6, 448.0, 220),
        _gpu("nvidia-rtx-3080", "NVIDIA GeForce RTX 3080", "Ampere", "8.6", 29.8, 29.8, 59.5, 760.0, 320),
        _gpu("nvidia-rtx-a4000", "NVIDIA RTX A4000", "Ampere", "8.6", 19.2, 38.4, 76.7, 448.0, 140),
    )
}
"""Figures of table GPUs the catalog does not carry, and where each comes from:

* ``nvidia-titan-rtx``: NVIDIA's launch announcement (TU102, 4,608 CUDA cores, 576 Tensor Cores,
  1,770 MHz boost, 24 GB GDDR6 at 672 GB/s, 280 W TDP; read in HotHardware's report of it,
  https://hothardware.com/news/nvidia-titan-rtx-turing-gpu-24gb-gddr6-11-gigarays-ray-tracing);
  FP32 = 4,608 x 2 x 1.770 GHz = 16.3 TFLOP/s; tensor 130.5 TFLOP/s "for FP16 inputs with FP32
  accumulates" -- the TITAN runs FP32 accumulate at full rate, unlike the GeForce RTX 2080 Ti
  (Tom's Hardware, Titan RTX review, deep-learning page,
  https://www.tomshardware.com/reviews/nvidia-titan-rtx-deep-learning-gaming-tensor,5971-3.html).
* ``nvidia-quadro-rtx-6000``: the actively cooled Quadro RTX 6000 (Lambda's workstation part;
  the passive server variant is 14.9 / 119.4 TFLOP/s, 624 GB/s, 250 W): same TU102 configuration
  as the catalog's Quadro RTX 8000 (4,608 cores, 576 Tensor Cores, 1,770 MHz), 16.3 TFLOP/s FP32,
  130.5 "Deep Learning" tensor TFLOP/s (FP16 with FP16 or FP32 accumulate), 672 GB/s, 295 W
  maximum power (NVIDIA Quadro RTX 6000 datasheet; the Turing architecture whitepaper's Quadro
  RTX 6000 column; 16.3 TFLOP/s and 295 W read in chip.pl's launch report,
  https://chip.pl/2018/10/bestia-dla-profesjonalistow-quadro-rtx-6000).
* ``nvidia-quadro-rtx-5000``: NVIDIA Quadro RTX 5000 datasheet -- 3,072 CUDA cores, 384 Tensor
  Cores, 11.2 TFLOP/s FP32, "Tensor Performance 89.2 TFLOPS", 16 GB GDDR6 at 448 GB/s, total
  board power 265 W (total graphics power 230 W); read in a reseller's copy of the datasheet
  table; 11.2 = 3,072 x 2 x 1.815 GHz as Cornell's Virtual Workshop computes it
  (https://cvw.cac.cornell.edu/gpu-architecture/gpus-frontera-rtx-5000/rtx_5000). Quadro parts
  run FP32 accumulate at full rate.
* ``nvidia-rtx-2080-ti``: the reference board (Lambda's CSV lists 250 W, the reference TDP; the
  Founders Edition is 260 W, 14.2 / 56.9 TFLOP/s): Turing architecture whitepaper, Table 1, the
  reference figures beside the Founders Edition's -- 68 SMs, 4,352 cores, 1,545 MHz boost,
  13.4 TFLOP/s FP32, 107.6 FP16 tensor TFLOP/s with FP16 accumulate and 53.8 with FP32 accumulate
  (GeForce runs FP32 accumulate at half rate), 616 GB/s, 250 W (https://images.nvidia.com/aem-dam/en-zz/Solutions/design-visualization/technologies/turing-architecture/NVIDIA-Turing-Architecture-Whitepaper.pdf).
* ``nvidia-rtx-3070``: NVIDIA Ampere GA102 whitepaper, Appendix A (GeForce RTX 3070): 46 SMs,
  5,888 cores, 1,725 MHz, 20.3 TFLOP/s FP32, FP16 tensor with FP32 accumulate 40.6 dense (81.3
  with FP16 accumulate), TF32 20.3 dense, 448 GB/s, 220 W
  (https://www.nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf).
* ``nvidia-rtx-3080``: the same whitepaper, Table 1 (GeForce RTX 3080): 68 SMs, 8,704 cores,
  1,710 MHz, 29.8 TFLOP/s FP32, FP16 tensor with FP32 accumulate 59.5 dense (119 with FP16
  accumulate), TF32 29.8, 760 GB/s GDDR6X, 320 W.
* ``nvidia-rtx-a4000``: NVIDIA RTX A4000 datasheet -- 6,144 CUDA cores, 192 Tensor Cores,
  19.2 TFLOP/s FP32, "Tensor performance 153.4 TFLOPS" (sparse, no accumulate type), 16 GB GDDR6
  at 448 GB/s, 140 W total board power (read in a reseller's copy of the datasheet table). The
  dense tensor figures are **derived** as the catalog derives the RTX A5000's: professional
  GA10x rate from the GA102 whitepaper's RTX A6000 column, 1,024 FP16 FLOP (FP32 accumulate) and
  512 TF32 FLOP per SM per clock, x 48 SMs x 1.560 GHz (19.2 / (6,144 x 2)) = 76.7 and 38.4;
  the datasheet's 153.4 / 2 = 76.7 agrees.
"""

FIGURES: Final[Mapping[str, GpuSpec]] = {**CATALOGUED, **TABLE_ONLY}

_NAMES: Final[dict[str, str]] = {
    # table GPU name (rows with slug None) -> id above
    "Titan RTX": "nvidia-titan-rtx",
    "Quadro RTX 6000": "nvidia-quadro-rtx-6000",
    "Quadro RTX 5000": "nvidia-quadro-rtx-5000",
    "GeForce RTX 2080 Ti": "nvidia-rtx-2080-ti",
    "GeForce RTX 3070": "nvidia-rtx-3070",
    "GeForce RTX 3080": "nvidia-rtx-3080",
    "RTX A4000": "nvidia-rtx-a4000",
}


def figures_for(row: PublishedRow) -> GpuSpec | None:
    """The figures of the GPU a published row ran on, or ``None`` when none are sourced here."""
    if row.slug is not None:
        return FIGURES.get(row.slug)
    key = _NAMES.get(row.gpu_name)
    return FIGURES[key] if key else None
