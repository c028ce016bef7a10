"""NVIDIA DeepLearningExamples ResNet-50 v1.5 for PyTorch, NGC pytorch:21.03-py3 (A100, V100, T4).

Source: ``PyTorch/Classification/ConvNets/resnet50v1.5/README.md`` in NVIDIA/DeepLearningExamples
at commit ``5843f4e5a1220dd98936e477d8597d8a77320666`` (the last commit on master that touches the
README), sections "Training performance results" and "Inference performance results". Both
sections state "Our results were obtained by running the applicable training script in the
pytorch-21.03 NGC container" (the accuracy section, not used here, says pytorch-20.12). The
numbers were put in by commit ``7bdfc81d258746323bf0d3ca57e0ad302a4c3a74`` (2021-04-20,
"[ConvNets/PyT] Triton and performance numbers updated", which also moved the Dockerfile to
``nvcr.io/nvidia/pytorch:21.03-py3``); the performance sections are byte-identical from that commit
to the one cited.

Stack: NGC PyTorch 21.03-py3, DeepLearningExamples ConvNets (``launch.py`` + ``configs.yml``).
TF32 is on by default on Ampere (the README: "TF32 is supported in the NVIDIA Ampere GPU
architecture and is enabled by default"), so the A100 "TF32" column is ``tf32`` and the V100 / T4
"FP32" columns are ``fp32``; "mixed precision" is PyTorch native AMP (changelog "February 2021:
Moved from APEX AMP to Native AMP"; configs.yml: static loss scale 128, NHWC memory format):
``amp_fp16``.

Method. Training (``launch.py --mode benchmark_training --epochs 1 --prof 100``, 100 iterations,
single-GPU and 8-GPU rows with ``multiproc.py``): images/s as published. The README tables do not
state the batch per GPU; it is the harness's ``configs.yml`` at commit 7bdfc81d (unchanged at the
cited commit): 256 for A100 TF32 and AMP, 112 for V100 FP32, 256 for V100 AMP -- recorded per row
with that provenance in ``note``. Inference (``--mode benchmark_inference``, 100 iterations per batch
size): "Throughput Avg" (images/s) and "Latency Avg" (ms per batch), batch 1..256, one GPU; the 95 %
and 99 % latency columns are left out.

GPUs: "DGX A100 (8x A100 80GB)" = A100 SXM4 80GB; "DGX-1 16GB (8x V100 16GB)" = V100 SXM2 16GB;
"DGX-1 32GB (8x V100 32GB)" = V100 SXM2 32GB (DGX-1 carries SXM2 parts); "T4" (inference only).
The README has no A100 inference table, so the inference rows pair V100 16GB with T4 only.
"""

from __future__ import annotations

from typing import Final

from service.core.evidence.published._dle_resnet import Notes, resnet_rows
from service.core.evidence.published.schema import PublishedTable, SourceFile

TABLE_ID: Final = "dle-pt-resnet50-ngc2103"

README_COMMIT: Final = "5843f4e5a1220dd98936e477d8597d8a77320666"
CONFIGS_COMMIT: Final = "7bdfc81d258746323bf0d3ca57e0ad302a4c3a74"

GPUS: Final[dict[str, tuple[str, str | None, str]]] = {
    "A100": (
        "A100 80GB (DGX A100)",
        "nvidia-a100-sxm4-80gb",
        "DGX A100 80GB carries the A100 SXM4 80GB part",
    ),
    "V100-16": ("V100 16GB (DGX-1)", "nvidia-v100-sxm2-16gb", "DGX-1 carries the V100 SXM2 part"),
    "V100-32": ("V100 32GB (DGX-1)", "nvidia-v100-sxm2-32gb", "DGX-1 carries the V100 SXM2 part"),
    "T4": ("T4", "nvidia-t4", ""),
}

# gpu precision gpu_count batch-per-GPU(configs.yml) images/s  ("Training performance", img/s)
TRAINING: Final = """
A100 tf32 1 256 938
A100 amp_fp16 1 256 2470
A100 tf32 8 256 7248
A100 amp_fp16 8 256 16621
V100-16 fp32 1 112 367
V100-16 amp_fp16 1 256 1200
V100-16 fp32 8 112 2855
V100-16 amp_fp16 8 256 8322
V100-32 fp32 1 112 356
V100-32 amp_fp16 1 256 1156
V100-32 fp32 8 112 2766
V100-32 amp_fp16 8 256 8056
"""

# gpu precision batch throughput-avg-images/s latency-avg-ms  ("Inference performance", 1 GPU)
INFERENCE: Final = """
V100-16 fp32 1 96 10.37
V100-16 fp32 2 196 10.24
V100-16 fp32 4 386 10.46
V100-16 fp32 8 709 11.5
V100-16 fp32 16 1023 16.07
V100-16 fp32 32 1127 29.37
V100-16 fp32 64 1200 55.4
V100-16 fp32 128 1229 109.26
V100-16 fp32 256 1261 214.48
V100-16 amp_fp16 1 78 12.78
V100-16 amp_fp16 2 154 13.01
V100-16 amp_fp16 4 300 13.41
V100-16 amp_fp16 8 595 13.65
V100-16 amp_fp16 16 1178 14.0
V100-16 amp_fp16 32 2146 15.84
V100-16 amp_fp16 64 2984 23.18
V100-16 amp_fp16 128 3249 43.55
V100-16 amp_fp16 256 3382 84.14
T4 fp32 1 98 10.7
T4 fp32 2 186 11.26
T4 fp32 4 325 12.73
T4 fp32 8 363 22.41
T4 fp32 16 409 39.77
T4 fp32 32 420 77.62
T4 fp32 64 428 152.73
T4 fp32 128 426 309.26
T4 fp32 256 415 635.98
T4 amp_fp16 1 79 12.96
T4 amp_fp16 2 156 13.18
T4 amp_fp16 4 317 12.99
T4 amp_fp16 8 652 12.82
T4 amp_fp16 16 1050 15.8
T4 amp_fp16 32 1128 29.54
T4 amp_fp16 64 1165 57.41
T4 amp_fp16 128 1190 114.24
T4 amp_fp16 256 1198 225.95
"""


TABLE: Final = PublishedTable(
    id=TABLE_ID,
    title="NVIDIA DeepLearningExamples ResNet-50 v1.5 PyTorch performance (NGC 21.03)",
    kind="training",
    publisher="NVIDIA",
    url=f"https://github.com/NVIDIA/DeepLearningExamples/blob/{README_COMMIT}/"
    "PyTorch/Classification/ConvNets/resnet50v1.5/README.md",
    files=(
        SourceFile(
            "NVIDIA/DeepLearningExamples",
            "PyTorch/Classification/ConvNets/resnet50v1.5/README.md",
            README_COMMIT,
        ),
        SourceFile(
            "NVIDIA/DeepLearningExamples",
            "PyTorch/Classification/ConvNets/configs.yml",
            CONFIGS_COMMIT,
        ),
    ),
    date="2021-04",
    date_note="results stated as run in the pytorch-21.03 NGC container; the numbers entered the README in "
    "commit 7bdfc81d (2021-04-20, '[ConvNets/PyT] Triton and performance numbers updated')",
    engine="pytorch (ngc 21.03)",
    stack="NGC PyTorch 21.03-py3, DeepLearningExamples ConvNets ResNet-50 v1.5 (launch.py, configs.yml), native AMP",
    method="training: launch.py benchmark_training, 100 iterations, images/s at the configs.yml batch per GPU "
    "(1 GPU and 8 GPUs); inference: launch.py benchmark_inference, 100 iterations, average img/s and average "
    "batch latency, batch 1..256 on one GPU",
    caveats="training is TF32 on A100 but FP32 on V100 (TF32 needs Ampere); the training batch per GPU is not in "
    "the README tables but the harness config (configs.yml at the commit that published the numbers); the data "
    "loader is the harness's (configs.yml sets data_backend pytorch; the benchmark commands pass none), so small-"
    "batch inference looks host-bound: at batch 1-4 AMP is slower than FP32 on both V100 and T4, and T4 ~ V100; no "
    "A100 inference table, so inference rows pair V100 16GB with T4 only; inference rows (resnet50-infer) ship "
    "in this training table as published together",
    rows=resnet_rows(
        TABLE_ID,
        GPUS,
        TRAINING,
        INFERENCE,
        Notes(
            "PyTorch; 100-iteration benchmark; batch per GPU from configs.yml, not the README table",
            "DDP data parallel (multiproc.py)",
            "PyTorch eager; average over a 100-iteration benchmark_inference run",
        ),
    ),
)
