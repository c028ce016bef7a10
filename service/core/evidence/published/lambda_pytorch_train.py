"""Lambda Labs "PyTorch Training GPU Benchmarks 2023": single-GPU training throughput.

Source: https://lambdalabs.com/gpu-benchmarks, raw CSVs in the public repository
``lambdal/deeplearning-benchmark``: ``pytorch/pytorch-train-throughput-fp16.csv`` and
``pytorch/pytorch-train-throughput-fp32.csv`` at commit
``0551cb70ffdc155dc4cb2c10dddebb65651c3883``; batch sizes from
``pytorch/pytorch-train-bs-fp16.csv`` (commit ``08d77c41c42f48de5598b48c77f3fbd1b6252348``),
where a GPU has no row there the batch of the template for its memory size (80 GB, 24 GB) is
used, as Lambda's configs do.

Stack (as Lambda states it): NGC PyTorch 22.10 container (PyTorch 1.13.0a0+d0d6b1f, CUDA
11.8.0, cuDNN from the image, driver 520.61.05), NVIDIA DeepLearningExamples models in
Lambda's fork (branch ``lambda/benchmark``): ResNet-50 v1.5 (images/s, synthetic data,
DALI-free), BERT-base / BERT-large SQuAD fine-tuning (sequences/s, sequence length 384).
``fp16`` rows are automatic mixed precision; ``fp32`` rows are "FP32" as NGC runs it, i.e.
TF32 tensor cores on Ampere and newer (NGC's defaults enable TF32), true FP32 on Volta/Turing.

GPU figures: dense datasheet peaks at FP32 accumulate (DESIGN "GPU catalog semantics";
GeForce FP16-with-FP32-accumulate is half the FP16-accumulate figure), memory bandwidth in
GB/s; slugs are the service catalog's. Sources: NVIDIA product datasheets and the Volta,
Turing, Ampere (GA100, GA102) and Ada Lovelace architecture whitepapers. "LambdaCloud V100
16GB" is assumed to be the SXM2 part (Lambda's 8x V100 cloud nodes); the H100 SXM5 row is
Lambda's own (the Dell/SMC/1CC OEM rows are left out as duplicates).
"""

from __future__ import annotations

from typing import Final, TypedDict

from service.core.evidence.published.schema import PublishedRow, PublishedTable, SourceFile


class GpuRow(TypedDict):
    slug: str
    architecture: str
    fp16_tflops: float  # dense tensor-core FP16 at FP32 accumulate
    tf32_tflops: float | None  # dense TF32 tensor; None before Ampere
    fp32_tflops: float  # non-tensor FP32
    bandwidth_gb_per_s: float
    memory_gb: int
    # throughput by precision table then workload; batch per GPU by workload (fp16 table)
    fp16: dict[str, float]
    fp32: dict[str, float]
    batch_fp16: dict[str, int]


SOURCE: Final = {
    "name": "Lambda Labs PyTorch Training GPU Benchmarks 2023",
    "url": "https://lambdalabs.com/gpu-benchmarks",
    "repository": "lambdal/deeplearning-benchmark",
    "files": {
        "pytorch/pytorch-train-throughput-fp16.csv": "0551cb70ffdc155dc4cb2c10dddebb65651c3883",
        "pytorch/pytorch-train-throughput-fp32.csv": "0551cb70ffdc155dc4cb2c10dddebb65651c3883",
        "pytorch/pytorch-train-bs-fp16.csv": "08d77c41c42f48de5598b48c77f3fbd1b6252348",
    },
    "stack": "NGC PyTorch 22.10 (PyTorch 1.13.0a0+d0d6b1f, CUDA 11.8.0, driver 520.61.05), "
    "NVIDIA DeepLearningExamples (Lambda fork); fp16 = AMP; fp32 = TF32 on Ampere+",
    "provenance": "published",
}

WORKLOADS: Final[dict[str, dict[str, str | int]]] = {
    "resnet50": {"unit": "images/s", "model": "resnet50", "seq_len": 0},
    "bert_large_squad": {"unit": "sequences/s", "model": "bert-large", "seq_len": 384},
    "bert_base_squad": {"unit": "sequences/s", "model": "bert-base", "seq_len": 384},
}

_B80 = {"resnet50": 1280, "bert_large_squad": 112, "bert_base_squad": 320}
_B48 = {"resnet50": 928, "bert_large_squad": 64, "bert_base_squad": 192}
_B24 = {"resnet50": 448, "bert_large_squad": 28, "bert_base_squad": 96}

GPUS: Final[dict[str, GpuRow]] = {
    "Quadro RTX 8000": {
        "slug": "nvidia-quadro-rtx-8000",
        "architecture": "turing",
        "fp16_tflops": 130.5,
        "tf32_tflops": None,
        "fp32_tflops": 16.3,
        "bandwidth_gb_per_s": 672.0,
        "memory_gb": 48,
        "fp16": {"resnet50": 651.0, "bert_large_squad": 50.0, "bert_base_squad": 146.0},
        "fp32": {"resnet50": 274.0, "bert_large_squad": 12.0, "bert_base_squad": 41.0},
        "batch_fp16": _B48,
    },
    "LambdaCloud V100 16GB": {
        "slug": "nvidia-v100-sxm2-16gb",
        "architecture": "volta",
        "fp16_tflops": 125.0,
        "tf32_tflops": None,
        "fp32_tflops": 15.7,
        "bandwidth_gb_per_s": 900.0,
        "memory_gb": 16,
        "fp16": {"resnet50": 833.0, "bert_large_squad": 57.0, "bert_base_squad": 189.0},
        "fp32": {"resnet50": 369.0, "bert_large_squad": 12.0, "bert_base_squad": 42.0},
        "batch_fp16": {"resnet50": 256, "bert_large_squad": 16, "bert_base_squad": 48},
    },
    "RTX 3090": {
        "slug": "nvidia-rtx-3090",
        "architecture": "ampere",
        "fp16_tflops": 71.0,
        "tf32_tflops": 35.6,
        "fp32_tflops": 35.6,
        "bandwidth_gb_per_s": 936.0,
        "memory_gb": 24,
        "fp16": {"resnet50": 905.0, "bert_large_squad": 52.0, "bert_base_squad": 172.0},
        "fp32": {"resnet50": 513.0, "bert_large_squad": 24.0, "bert_base_squad": 85.0},
        "batch_fp16": _B24,
    },
    "LambdaCloud A10": {
        "slug": "nvidia-a10",
        "architecture": "ampere",
        "fp16_tflops": 125.0,
        "tf32_tflops": 62.5,
        "fp32_tflops": 31.2,
        "bandwidth_gb_per_s": 600.0,
        "memory_gb": 24,
        "fp16": {"resnet50": 638.0, "bert_large_squad": 42.0, "bert_base_squad": 135.0},
        "fp32": {"resnet50": 349.0, "bert_large_squad": 19.0, "bert_base_squad": 70.0},
        "batch_fp16": _B24,
    },
    "LambdaCloud A100 40GB PCIe": {
        "slug": "nvidia-a100-pcie-40gb",
        "architecture": "ampere",
        "fp16_tflops": 312.0,
        "tf32_tflops": 156.0,
        "fp32_tflops": 19.5,
        "bandwidth_gb_per_s": 1555.0,
        "memory_gb": 40,
        "fp16": {"resnet50": 1396.0, "bert_large_squad": 117.0, "bert_base_squad": 368.0},
        "fp32": {"resnet50": 882.0, "bert_large_squad": 53.0, "bert_base_squad": 179.0},
        "batch_fp16": {"resnet50": 720, "bert_large_squad": 48, "bert_base_squad": 160},
    },
    "A100 80GB PCIe": {
        "slug": "nvidia-a100-pcie-80gb",
        "architecture": "ampere",
        "fp16_tflops": 312.0,
        "tf32_tflops": 156.0,
        "fp32_tflops": 19.5,
        "bandwidth_gb_per_s": 1935.0,
        "memory_gb": 80,
        "fp16": {"resnet50": 1527.0, "bert_large_squad": 140.0, "bert_base_squad": 415.0},
        "fp32": {"resnet50": 1014.0, "bert_large_squad": 70.0, "bert_base_squad": 224.0},
        "batch_fp16": _B80,
    },
    "A100 80GB SXM4": {
        "slug": "nvidia-a100-sxm4-80gb",
        "architecture": "ampere",
        "fp16_tflops": 312.0,
        "tf32_tflops": 156.0,
        "fp32_tflops": 19.5,
        "bandwidth_gb_per_s": 2039.0,
        "memory_gb": 80,
        "fp16": {"resnet50": 1582.0, "bert_large_squad": 152.0, "bert_base_squad": 443.0},
        "fp32": {"resnet50": 1066.0, "bert_large_squad": 75.0, "bert_base_squad": 239.0},
        "batch_fp16": _B80,
    },
    "RTX A6000": {
        "slug": "nvidia-rtx-a6000",
        "architecture": "ampere",
        "fp16_tflops": 154.8,
        "tf32_tflops": 77.4,
        "fp32_tflops": 38.7,
        "bandwidth_gb_per_s": 768.0,
        "memory_gb": 48,
        "fp16": {"resnet50": 916.0, "bert_large_squad": 68.0, "bert_base_squad": 198.0},
        "fp32": {"resnet50": 514.0, "bert_large_squad": 33.0, "bert_base_squad": 101.0},
        "batch_fp16": _B48,
    },
    "RTX 6000 Ada": {
        "slug": "nvidia-rtx-6000-ada",
        "architecture": "ada",
        "fp16_tflops": 364.2,
        "tf32_tflops": 182.1,
        "fp32_tflops": 91.1,
        "bandwidth_gb_per_s": 960.0,
        "memory_gb": 48,
        "fp16": {"resnet50": 1146.0, "bert_large_squad": 79.0, "bert_base_squad": 255.0},
        "fp32": {"resnet50": 647.0, "bert_large_squad": 44.0, "bert_base_squad": 136.0},
        "batch_fp16": _B48,
    },
    "RTX 4090": {
        "slug": "nvidia-rtx-4090",
        "architecture": "ada",
        "fp16_tflops": 165.2,
        "tf32_tflops": 82.6,
        "fp32_tflops": 82.6,
        "bandwidth_gb_per_s": 1008.0,
        "memory_gb": 24,
        "fp16": {"resnet50": 1301.0, "bert_large_squad": 93.0, "bert_base_squad": 297.0},
        "fp32": {"resnet50": 721.0, "bert_large_squad": 44.0, "bert_base_squad": 137.0},
        "batch_fp16": _B24,
    },
    "H100 80GB PCIe Gen5": {
        "slug": "nvidia-h100-pcie",
        "architecture": "hopper",
        "fp16_tflops": 756.5,
        "tf32_tflops": 378.0,
        "fp32_tflops": 51.0,
        "bandwidth_gb_per_s": 2000.0,
        "memory_gb": 80,
        "fp16": {"resnet50": 1866.0, "bert_large_squad": 203.0, "bert_base_squad": 567.0},
        "fp32": {"resnet50": 1197.0, "bert_large_squad": 97.0, "bert_base_squad": 292.0},
        "batch_fp16": _B80,
    },
    "H100 80GB SXM5": {
        "slug": "nvidia-h100-sxm",
        "architecture": "hopper",
        "fp16_tflops": 989.5,
        "tf32_tflops": 494.5,
        "fp32_tflops": 67.0,
        "bandwidth_gb_per_s": 3350.0,
        "memory_gb": 80,
        "fp16": {"resnet50": 2616.0, "bert_large_squad": 301.0, "bert_base_squad": 812.0},
        "fp32": {"resnet50": 1753.0, "bert_large_squad": 141.0, "bert_base_squad": 408.0},
        "batch_fp16": _B80,
    },
}

# --------------------------------------------------------------------------------------------
# Uniform rows for the registry (``service.core.evidence.published``)
# --------------------------------------------------------------------------------------------

# Batch per GPU of the fp32 runs: ``pytorch/pytorch-train-bs-fp32.csv`` at commit
# ``08d77c41c42f48de5598b48c77f3fbd1b6252348`` ("Ada A6000" there is the RTX 6000 Ada). The A10
# and the H100 SXM5 have no row in either batch file; like ``batch_fp16`` above they take the
# template of their memory size (24 GB: the RTX 3090 / 4090 rows; 80 GB: the A100 / H100 80 GB rows).
BATCH_FP32: Final[dict[str, dict[str, int]]] = {
    "Quadro RTX 8000": {"resnet50": 496, "bert_large_squad": 32, "bert_base_squad": 96},
    "LambdaCloud V100 16GB": {"resnet50": 128, "bert_large_squad": 8, "bert_base_squad": 24},
    "RTX 3090": {"resnet50": 224, "bert_large_squad": 16, "bert_base_squad": 48},
    "LambdaCloud A10": {"resnet50": 224, "bert_large_squad": 16, "bert_base_squad": 48},
    "LambdaCloud A100 40GB PCIe": {"resnet50": 360, "bert_large_squad": 28, "bert_base_squad": 80},
    "A100 80GB PCIe": {"resnet50": 640, "bert_large_squad": 64, "bert_base_squad": 172},
    "A100 80GB SXM4": {"resnet50": 640, "bert_large_squad": 64, "bert_base_squad": 172},
    "RTX A6000": {"resnet50": 496, "bert_large_squad": 32, "bert_base_squad": 96},
    "RTX 6000 Ada": {"resnet50": 496, "bert_large_squad": 32, "bert_base_squad": 96},
    "RTX 4090": {"resnet50": 224, "bert_large_squad": 16, "bert_base_squad": 48},
    "H100 80GB PCIe Gen5": {"resnet50": 640, "bert_large_squad": 64, "bert_base_squad": 172},
    "H100 80GB SXM5": {"resnet50": 640, "bert_large_squad": 64, "bert_base_squad": 172},
}
_BATCH_FROM_TEMPLATE: Final = frozenset({"LambdaCloud A10", "H100 80GB SXM5"})
# Slugs above that the service catalog does not carry: their rows get ``slug=None`` (none since the
# catalog added the Quadro RTX 8000 and the GeForce RTX 3090, issue #13).
_NOT_IN_CATALOG: Final[frozenset[str]] = frozenset()
_ASSUMED: Final[dict[str, str]] = {
    "LambdaCloud V100 16GB": "SXM2 assumed (Lambda's 8x V100 cloud nodes); the source says only 'V100 16GB'",
}


def _table() -> PublishedTable:
    from service.core.evidence.published._lambda_csv import LAMBDA_WORKLOADS

    rows: list[PublishedRow] = []
    for name, g in GPUS.items():
        slug = None if g["slug"] in _NOT_IN_CATALOG else g["slug"]
        for prec_table, values, batches in (
            ("fp16", g["fp16"], g["batch_fp16"]),
            ("fp32", g["fp32"], BATCH_FP32[name]),
        ):
            if prec_table == "fp16":
                precision, note = "amp_fp16", "automatic mixed precision"
            elif g["tf32_tflops"] is None:
                precision, note = "fp32", "Lambda's 'fp32' run; no TF32 on this GPU"
            else:
                precision, note = "tf32", "Lambda's 'fp32' run; TF32 tensor cores on (NGC default)"
            if name in _BATCH_FROM_TEMPLATE:
                note += "; batch from the template of the same memory size (no row in the batch file)"
            for col, (workload, model, metric, seq_len) in LAMBDA_WORKLOADS.items():
                rows.append(
                    PublishedRow(
                        table_id="lambda-pytorch-train-ngc2210",
                        gpu_name=name,
                        slug=slug,
                        workload=workload,
                        model=model,
                        precision=precision,
                        metric=metric,
                        value=values[col],
                        gpu_count=1,
                        batch_size=batches[col],
                        seq_len=seq_len,
                        gpu_assumption=_ASSUMED.get(name, ""),
                        note=note,
                    )
                )
    return PublishedTable(
        id="lambda-pytorch-train-ngc2210",
        title=str(SOURCE["name"]),
        kind="training",
        publisher="Lambda Labs",
        url=str(SOURCE["url"]),
        files=(
            SourceFile(
                "lambdal/deeplearning-benchmark",
                "pytorch/pytorch-train-throughput-fp16.csv",
                "0551cb70ffdc155dc4cb2c10dddebb65651c3883",
            ),
            SourceFile(
                "lambdal/deeplearning-benchmark",
                "pytorch/pytorch-train-throughput-fp32.csv",
                "0551cb70ffdc155dc4cb2c10dddebb65651c3883",
            ),
            SourceFile(
                "lambdal/deeplearning-benchmark",
                "pytorch/pytorch-train-bs-fp16.csv",
                "08d77c41c42f48de5598b48c77f3fbd1b6252348",
            ),
            SourceFile(
                "lambdal/deeplearning-benchmark",
                "pytorch/pytorch-train-bs-fp32.csv",
                "08d77c41c42f48de5598b48c77f3fbd1b6252348",
            ),
        ),
        date="2023",
        date_note="Lambda's 'PyTorch Training GPU Benchmarks 2023' page; CSV at commit 0551cb70",
        engine="pytorch 1.13.0a0 (ngc 22.10)",
        stack=str(SOURCE["stack"]),
        method="single GPU; NVIDIA DeepLearningExamples (Lambda fork): ResNet-50 v1.5 images/s, BERT "
        "SQuAD fine-tuning seq_len 384 sequences/s; Lambda's batch per GPU by memory size",
        caveats="fp32 runs are TF32 on Ampere and newer; V100 variant assumed SXM2; A10 / H100 SXM5 batch "
        "from the memory-size template; OEM H100 rows left out as duplicates",
        rows=tuple(rows),
    )


TABLE: Final = _table()
