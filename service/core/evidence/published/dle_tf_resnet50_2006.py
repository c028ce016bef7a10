"""NVIDIA DeepLearningExamples ResNet-50 v1.5 for TensorFlow, NGC 20.06-tf1-py3 (A100, V100, T4).

Source: ``TensorFlow/Classification/ConvNets/resnet50v1.5/README.md`` in NVIDIA/DeepLearningExamples
at commit ``1d4211fe9d94550d7bc72bb9b0ac4f576533ca52``, sections "Training performance results"
and "Inference performance results". Every result there states "the TensorFlow 20.06-tf1-py3 NGC
container"; the changelog entry "June, 2020: Added benchmark results for DGX-A100; Updated
benchmark results for DGX-1, DGX-2 and T4; Updated base docker image version" dates them.

Stack: NGC TensorFlow 20.06-tf1-py3 (the TensorFlow 1.15 line of NGC images), DeepLearningExamples
ResNet-50 v1.5.
TF32 is on by default on Ampere (the README: "TF32 is supported in the NVIDIA Ampere GPU
architecture and is enabled by default"), so the A100 "TF32" rows are ``tf32`` and the V100 / T4
"FP32" rows are ``fp32``; "mixed precision" is TF-AMP (automatic graph rewrite to FP16 with loss
scaling): ``amp_fp16``.

Method. Training (``resnet50v1.5/training/training_perf.sh``, ``--mode=training_benchmark``, 200
warm-up iterations): images/s "averaged over an entire training epoch", all with XLA; batch per GPU
256 on A100 (TF32 and AMP), 128 FP32 / 256 AMP on V100; single-GPU rows and the full-system rows
(8 or 16 GPUs, Horovod) as published. Inference (``inference_benchmark.sh``, 20 warm-up + 80
measured batches, synthetic data unless a data dir is given): average images/s and average batch
latency (ms) per batch size, without XLA (the XLA variants are left out so that every GPU has the
same two modes; the README notes "Performance without XLA enabled is low").

GPUs: "DGX A100 (8x A100 40GB)" = A100 SXM4 40GB; "DGX-1 (8x V100 16G)" = V100 SXM2 16GB; "DGX-2
(16x V100 32G)" = V100 SXM3 32GB (``nvidia-v100-sxm3-32gb``; the catalog leaves its peaks null, so the
transfer fit cannot use it); "T4" (inference only).
"""

from __future__ import annotations

from typing import Final

from service.core.evidence.published._dle_resnet import Notes, resnet_rows
from service.core.evidence.published.schema import PublishedTable, SourceFile

TABLE_ID: Final = "dle-tf-resnet50-ngc2006"

GPUS: Final[dict[str, tuple[str, str | None, str]]] = {
    "A100": ("A100 40GB (DGX A100)", "nvidia-a100-sxm4-40gb", ""),
    "V100-16": ("V100 16GB (DGX-1)", "nvidia-v100-sxm2-16gb", ""),
    "V100-32": ("V100 32GB (DGX-2)", "nvidia-v100-sxm3-32gb", "DGX-2 carries the V100 SXM3 32GB part"),
    "T4": ("T4", "nvidia-t4", ""),
}

# gpu precision gpu_count batch images/s  ("Training performance", all + XLA)
TRAINING: Final = """
A100 tf32 1 256 909
A100 amp_fp16 1 256 2375
A100 tf32 8 256 7000
A100 amp_fp16 8 256 17400
V100-16 fp32 1 128 412
V100-16 amp_fp16 1 256 1270
V100-16 fp32 8 128 3170
V100-16 amp_fp16 8 256 9510
V100-32 fp32 1 128 432
V100-32 amp_fp16 1 256 1300
V100-32 fp32 16 128 6500
V100-32 amp_fp16 16 256 17250
"""

# gpu precision batch avg-images/s avg-latency-ms  ("Inference performance", 1 GPU, no XLA)
INFERENCE: Final = """
A100 tf32 1 191.23 5.26
A100 tf32 2 376.83 5.34
A100 tf32 4 601.12 6.65
A100 tf32 8 963.86 8.31
A100 tf32 16 1361.58 11.82
A100 tf32 32 1602.09 19.99
A100 tf32 64 1793.81 35.82
A100 tf32 128 1876.22 68.23
A100 tf32 256 1911.96 133.90
A100 amp_fp16 1 223.35 4.51
A100 amp_fp16 2 435.51 4.63
A100 amp_fp16 4 882.00 4.63
A100 amp_fp16 8 1503.24 5.40
A100 amp_fp16 16 1903.58 8.47
A100 amp_fp16 32 1974.01 16.23
A100 amp_fp16 64 3570.46 18.14
A100 amp_fp16 128 3474.94 37.86
A100 amp_fp16 256 3229.32 81.02
V100-16 fp32 1 173.35 5.79
V100-16 fp32 2 303.65 6.61
V100-16 fp32 4 562.35 7.12
V100-16 fp32 8 783.24 10.22
V100-16 fp32 16 1003.10 15.99
V100-16 fp32 32 1140.12 28.19
V100-16 fp32 64 1252.06 51.12
V100-16 fp32 128 1324.91 96.61
V100-16 fp32 256 1348.52 189.85
V100-16 amp_fp16 1 237.35 4.25
V100-16 amp_fp16 2 464.94 4.32
V100-16 amp_fp16 4 942.44 4.26
V100-16 amp_fp16 8 1454.93 5.57
V100-16 amp_fp16 16 2003.75 8.13
V100-16 amp_fp16 32 2356.17 13.69
V100-16 amp_fp16 64 2706.11 23.86
V100-16 amp_fp16 128 2770.61 47.04
V100-16 amp_fp16 256 2742.14 94.67
V100-32 fp32 1 187.41 5.374
V100-32 fp32 2 339.52 5.901
V100-32 fp32 4 577.50 6.940
V100-32 fp32 8 821.15 9.751
V100-32 fp32 16 1055.64 15.209
V100-32 fp32 32 1195.74 26.772
V100-32 fp32 64 1313.83 48.796
V100-32 fp32 128 1372.58 93.262
V100-32 fp32 256 1414.99 180.923
V100-32 amp_fp16 1 289.89 3.50
V100-32 amp_fp16 2 606.27 3.38
V100-32 amp_fp16 4 982.92 4.09
V100-32 amp_fp16 8 1553.34 5.22
V100-32 amp_fp16 16 2091.27 7.82
V100-32 amp_fp16 32 2457.61 13.14
V100-32 amp_fp16 64 2746.11 23.31
V100-32 amp_fp16 128 2937.20 43.58
V100-32 amp_fp16 256 3009.83 85.06
T4 fp32 1 136.44 7.34
T4 fp32 2 215.38 9.29
T4 fp32 4 289.29 13.83
T4 fp32 8 341.77 23.41
T4 fp32 16 394.36 40.58
T4 fp32 32 414.66 77.18
T4 fp32 64 424.42 150.82
T4 fp32 128 429.83 297.82
T4 fp32 256 425.72 601.37
T4 amp_fp16 1 211.04 4.77
T4 amp_fp16 2 381.23 5.27
T4 amp_fp16 4 593.13 6.75
T4 amp_fp16 8 791.12 10.16
T4 amp_fp16 16 914.26 17.55
T4 amp_fp16 32 972.36 32.92
T4 amp_fp16 64 991.39 64.56
T4 amp_fp16 128 995.81 128.55
T4 amp_fp16 256 993.39 257.71
"""


TABLE: Final = PublishedTable(
    id=TABLE_ID,
    title="NVIDIA DeepLearningExamples ResNet-50 v1.5 TensorFlow performance (NGC 20.06)",
    kind="training",
    publisher="NVIDIA",
    url="https://github.com/NVIDIA/DeepLearningExamples/blob/1d4211fe9d94550d7bc72bb9b0ac4f576533ca52/"
    "TensorFlow/Classification/ConvNets/resnet50v1.5/README.md",
    files=(
        SourceFile(
            "NVIDIA/DeepLearningExamples",
            "TensorFlow/Classification/ConvNets/resnet50v1.5/README.md",
            "1d4211fe9d94550d7bc72bb9b0ac4f576533ca52",
        ),
    ),
    date="2020-06",
    date_note="README changelog 'June, 2020: Added benchmark results for DGX-A100; Updated benchmark results "
    "for DGX-1, DGX-2 and T4'",
    engine="tensorflow 1.15 (ngc 20.06-tf1)",
    stack="NGC TensorFlow 20.06-tf1-py3 (TensorFlow 1.15), DeepLearningExamples ResNet-50 v1.5",
    method="training: XLA, mean img/s over one epoch at the stated batch per GPU (1 GPU and full system); "
    "inference: no XLA, average img/s and batch latency over 80 batches, batch 1..256",
    caveats="training is TF32 on A100 but FP32 on V100 (TF32 needs Ampere); V100 32GB (DGX-2, SXM3) has no "
    "catalog peaks; inference rows (resnet50-infer) ship in this training table as published together",
    rows=resnet_rows(
        TABLE_ID,
        GPUS,
        TRAINING,
        INFERENCE,
        Notes(
            "TensorFlow + XLA; mean over one training epoch",
            "Horovod data parallel",
            "TensorFlow without XLA; average over 80 batches",
        ),
    ),
)
