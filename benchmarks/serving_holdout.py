"""Independent published serving figures, for checking only: never used to fit anything.

The engine class is fitted on the TensorRT-LLM tables the service ships
(``service/core/evidence/published``: v0.9 static, v0.14 / v0.17 offline, v0.14 online). These figures
come from sources the project does not ship and other engine versions, so they test whether the
fit captured physics rather than numbers. Values are copied as published; the configuration
each was measured at, and any inference about it, is stated per table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

Kind = Literal["offline", "static", "ttft", "tpot1", "concurrency"]


@dataclass(frozen=True, slots=True)
class HoldoutTable:
    id: str
    engine: str  # engine class the figures are predicted with
    source: str
    date: str
    method: str
    assumptions: str
    kind: Kind
    # rows: (gpu slug, model preset, precision, kv fp8?, tp, batch or concurrency, input, output, value)
    # value units: offline / static -> output tokens/s (offline: whole TP group; static: per GPU);
    # ttft / tpot1 -> ms; concurrency -> output tokens/s of the replica
    rows: tuple[tuple[str, str, str, bool, int, int, int, int, float], ...]


def _v020() -> tuple[tuple[str, str, str, bool, int, int, int, int, float], ...]:
    lengths = [
        (128, 128),
        (128, 2048),
        (128, 4096),
        (500, 2000),
        (1000, 1000),
        (1000, 2000),
        (1024, 2048),
        (2048, 128),
        (2048, 2048),
        (5000, 500),
        (20000, 2000),
    ]
    # Llama 3.1 8B FP8, TP1: H200, H100 (no 2048/2048 row)
    l8 = [
        (27970.14, 27688.36),
        (23326.38, 21841.15),
        (17508.51, 13730.89),
        (21390.41, 17833.34),
        (17366.89, 15270.62),
        (16831.31, 13798.08),
        (16737.03, 13385.50),
        (3488.03, 3414.67),
        None,
        (3813.69, 3394.54),
        (1696.66, 1345.42),
    ]
    # Llama 3.3 70B FP8 (the Llama 3.1 70B architecture): H200 TP1,2,4,8 then H100 TP1,2,4,8
    l70: list[tuple[float | None, ...]] = [
        (3605.47, 6427.69, 10407.42, 15434.37, 3128.33, 6216.91, None, None),
        (4315.80, 8464.03, 13508.59, 20759.72, 756.42, 5782.57, 11464.94, 17424.32),
        (2701.17, 5573.55, 11458.56, 16668.75, None, 3868.37, 8206.39, 12624.61),
        (3478.76, 6740.06, 12200.18, None, None, 4684.06, 9903.53, 14553.93),
        (2744.32, 5119.72, 8685.44, 12744.51, 742.14, 4247.19, 7435.65, 11018.81),
        (2896.44, 5847.26, 9031.21, 13141.17, 533.74, 3866.53, 7611.12, 11139.22),
        (2874.18, 5568.61, 8946.71, 13082.62, 530.16, 3796.68, 7575.24, 11004.31),
        (435.90, 772.67, 1264.76, None, None, 736.89, 1213.33, 1839.22),
        (None, None, None, 10412.85, None, None, None, None),
        (545.96, 997.15, 1698.22, 2655.28, 204.94, 862.91, 1552.68, 2369.84),
        (276.66, 620.33, 1161.29, 1985.85, None, 416.13, 903.66, 1554.10),
    ]
    # Llama 3.1 405B FP8, TP8: H200, H100
    l405: list[tuple[float | None, float | None] | None] = [
        None,
        (5567.87, None),
        (5136.85, None),
        (4787.61, 3673.91),
        (3286.30, 3012.22),
        (3636.76, 3262.20),
        (3618.66, 3109.70),
        (443.10, 449.02),
        None,
        (645.46, None),
        (None, 372.12),
    ]
    rows: list[tuple[str, str, str, bool, int, int, int, int, float]] = []
    gpus = ("nvidia-h200-sxm", "nvidia-h100-sxm")
    for (isl, osl), v in zip(lengths, l8, strict=True):
        if v:
            for g, x in zip(gpus, v, strict=True):
                rows.append((g, "llama3.1-8b", "fp8", True, 1, 0, isl, osl, x))
    for (isl, osl), vals in zip(lengths, l70, strict=True):
        for i, x in enumerate(vals):
            if x is not None:
                rows.append((gpus[i // 4], "llama3.1-70b", "fp8", True, (1, 2, 4, 8)[i % 4], 0, isl, osl, x))
    for (isl, osl), pair in zip(lengths, l405, strict=True):
        if pair:
            for g, y in zip(gpus, pair, strict=True):
                if y is not None:
                    rows.append((g, "llama3.1-405b", "fp8", True, 8, 0, isl, osl, y))
    return tuple(rows)


TABLES: Final[tuple[HoldoutTable, ...]] = (
    HoldoutTable(
        id="trtllm-perf-overview-v0.20",
        engine="tensorrt-llm",
        source="NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md, 'The data collected for the v0.20 "
        "benchmarks' (PyTorch backend, trtllm-bench throughput); stored copy: fork dominicshanshan/TensorRT-LLM "
        "at commit ab4143e1d3c82df550f0d5673090a8feee84c7bd",
        date="2025 (TensorRT-LLM v0.20)",
        method="offline max throughput, all requests queued, fixed lengths; total output tokens/s of the TP group; "
        "kv_cache_free_gpu_mem_fraction 0.95 in most cases",
        assumptions="'H200 141GB HBM3' taken as H200 SXM; Llama 3.3 70B has the Llama 3.1 70B architecture; "
        "ModelOpt FP8 checkpoints with FP8 KV cache",
        kind="offline",
        rows=_v020(),
    ),
    HoldoutTable(
        id="trtllm-performance-v0.6.1",
        engine="tensorrt-llm",
        source="NVIDIA/TensorRT-LLM docs/source/performance.md at commit 138f96d45f90b9667426f7c47297d8c06bafac73 "
        "('This data has been updated for v0.6.1'; L40S rows 'from TensorRT-LLM v0.5')",
        date="2023-12 (v0.6.1) / 2023-10 (v0.5)",
        method="gptSessionBenchmark static batch at the listed batch, fixed lengths; output tokens/s per GPU",
        assumptions="H100 = H100 SXM (the page reproduces on an H100-HBM3-80GB system); 'LLaMA 7B/70B' = Llama 2 "
        "(as for v0.9); FP8 weights and FP8 KV cache (--enable_fp8 --fp8_kv_cache); the A100 rows "
        "(variant not stated) are left out",
        kind="static",
        rows=(
            ("nvidia-h100-sxm", "llama2-7b", "fp8", True, 1, 768, 128, 128, 19694.0),
            ("nvidia-h100-sxm", "llama2-7b", "fp8", True, 1, 112, 128, 2048, 6818.0),
            ("nvidia-h100-sxm", "llama2-7b", "fp8", True, 1, 80, 2048, 128, 2244.0),
            ("nvidia-h100-sxm", "llama2-7b", "fp8", True, 1, 48, 2048, 2048, 2740.0),
            ("nvidia-h100-sxm", "llama2-70b", "fp8", True, 2, 1024, 128, 128, 2657.0),
            ("nvidia-h100-sxm", "llama2-70b", "fp8", True, 4, 480, 128, 2048, 1486.0),
            ("nvidia-h100-sxm", "llama2-70b", "fp8", True, 2, 96, 2048, 128, 306.0),
            ("nvidia-h100-sxm", "llama2-70b", "fp8", True, 2, 64, 2048, 2048, 547.0),
            ("nvidia-l40s", "llama2-7b", "fp8", True, 1, 64, 128, 128, 3240.0),
            ("nvidia-l40s", "llama2-7b", "fp8", True, 1, 64, 128, 2048, 1622.0),
            ("nvidia-l40s", "llama2-7b", "fp8", True, 1, 32, 2048, 128, 581.0),
            ("nvidia-l40s", "llama2-7b", "fp8", True, 1, 16, 2048, 2048, 531.0),
        ),
    ),
    HoldoutTable(
        id="trtllm-performance-v0.5-first-token",
        engine="tensorrt-llm",
        source="NVIDIA/TensorRT-LLM docs/source/performance.md at commit 138f96d45f90b9667426f7c47297d8c06bafac73, "
        "'Low Latency' tables ('from TensorRT-LLM v0.5')",
        date="2023-10 (v0.5)",
        method="first-token latency of a batch-1 request, ms",
        assumptions="as for v0.6.1 above; integers as published",
        kind="ttft",
        rows=(
            ("nvidia-h100-sxm", "llama2-7b", "fp8", True, 1, 1, 128, 1, 7.0),
            ("nvidia-h100-sxm", "llama2-7b", "fp8", True, 1, 1, 2048, 1, 36.0),
            ("nvidia-h100-sxm", "llama2-70b", "fp8", True, 4, 1, 128, 1, 26.0),
            ("nvidia-h100-sxm", "llama2-70b", "fp8", True, 4, 1, 2048, 1, 109.0),
            ("nvidia-l40s", "llama2-7b", "fp8", True, 1, 1, 128, 1, 14.0),
            ("nvidia-l40s", "llama2-7b", "fp8", True, 1, 1, 2048, 1, 73.0),
        ),
    ),
    HoldoutTable(
        id="vllm-single-stream-a100-40gb",
        engine="vllm",
        source="J. Musgrave, 'vLLM throughput-latency sweep on NVIDIA A100', https://johnmusgrave.com/p/"
        "vllm-throughput-latency-sweep-on (vLLM 0.23.0)",
        date="2026",
        method="vllm bench serve, random 1024-token prompts, 128 output tokens (--ignore-eos), concurrency 1: "
        "'decode at one request per time runs at about 75 tokens/sec'",
        assumptions="A100 40GB on Lambda taken as the SXM4 part; 75 tokens/s read as 1/TPOT (13.3 ms)",
        kind="tpot1",
        rows=(("nvidia-a100-sxm4-40gb", "llama3.1-8b", "bf16", False, 1, 1, 1024, 128, 1000.0 / 75.0),),
    ),
    HoldoutTable(
        id="vllm-concurrency-rtx4090",
        engine="vllm",
        source="M. Rahman, capacity planning of Mistral-7B-Instruct-v0.3 on one RTX 4090 with vLLM, "
        "https://mushfiqrahman.dev/?p=1668",
        date="2025-2026 (vLLM version not stated)",
        method="300 prompts of 256 tokens -> 128 output tokens, max concurrency 4..48 (closed loop); output tok/s",
        assumptions="Mistral-7B v0.3 modelled by the v0.1 preset (same shape, 32768 vs 32000 vocabulary); bf16",
        kind="concurrency",
        rows=(
            ("nvidia-rtx-4090", "mistral-7b", "bf16", False, 1, 4, 256, 128, 210.0),
            ("nvidia-rtx-4090", "mistral-7b", "bf16", False, 1, 8, 256, 128, 377.0),
            ("nvidia-rtx-4090", "mistral-7b", "bf16", False, 1, 16, 256, 128, 644.0),
            ("nvidia-rtx-4090", "mistral-7b", "bf16", False, 1, 32, 256, 128, 975.0),
            ("nvidia-rtx-4090", "mistral-7b", "bf16", False, 1, 48, 256, 128, 1190.0),
        ),
    ),
)
