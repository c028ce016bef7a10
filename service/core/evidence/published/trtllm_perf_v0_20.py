"""TensorRT-LLM v0.20 "Perf Overview": max-throughput tokens/s on B200, H200, H100.

Source: ``docs/source/performance/perf-overview.md`` in the fork ``dominicshanshan/TensorRT-LLM``
at commit ``ab4143e1d3c82df550f0d5673090a8feee84c7bd`` (same path as the v0.14 / v0.17 / v1.0
tables). Version evidence: the page says "The data collected for the v0.20 benchmarks was run
with the following file" (the ``llm_options.yml`` below) and "Starting with v0.19, testing was
performed using the PyTorch backend"; the later v0.21 page (NVIDIA/TensorRT-LLM pull request #6270,
"[doc] Update perf_overview.md for release 0.21", 2025-07-24) re-measures the other tables but keeps
the Llama 4 Maverick table, "preserved from 0.20" -- its cells match the Maverick table here (v0.21
drops the 20000/2000 row). Another
stored copy of this page (the cells compared match) differs in the option names of that
``llm_options.yml`` (``use_cuda_graph`` / ``cuda_graph_padding_enabled`` /
``cuda_graph_batch_sizes``). Date: the v0.20 release (release notes added by NVIDIA/TensorRT-LLM
pull request #5150, 2025-06-12).

Stack: TensorRT-LLM 0.20 with the PyTorch backend (no engine build): ``trtllm-bench --model
$model_name throughput --dataset $dataset_file --backend pytorch --extra_llm_api_options
$llm_options`` with CUDA graphs (padding enabled, batch sizes 1 .. 8192);
``--kv_cache_free_gpu_mem_fraction 0.95`` "in a majority of cases", 0.90 on OOM. Checkpoints are
NVIDIA's ModelOpt-quantized ones: ``nvidia/Llama-3.3-70B-Instruct-FP4``,
``nvidia/Llama-3.1-405B-Instruct-FP4`` (B200, FP4 = NVFP4) and ``nvidia/Llama-3.1-8B-Instruct-FP8``,
``nvidia/Llama-3.3-70B-Instruct-FP8``, ``nvidia/Llama-3.1-405B-Instruct-FP8`` (H200 / H100, FP8).

Method: offline maximum throughput ("a local inference client is fed requests at an infinite
rate"), synthetic prompts of exactly ``input_len`` tokens and exactly ``output_len`` output tokens
(``prepare_dataset.py token-norm-dist`` with stdev 0); 30,000 requests at 128/128, 3,000 at
128/2048, 2048/128, 1000/1000 and 500/2000, 1,500 at 128/4096, 1000/2000, 2048/2048 and 5000/500,
1,000 at 20000/2000 (1024/2048 is not in the page's request table). Metric: "Total Output
Throughput (tokens/sec)" for the whole group of ``tp`` GPUs (``output_tokens_per_s``).

GPUs: headers "B200", "H200 141GB HBM3" (taken to be the H200 SXM, as in the v0.14 / v0.17
tables; the v0.21 page lists "H200 SXM 141GB (DGX H200)") and "H100 80GB HBM3" (H100 SXM5).

Transcribed: the dense models, all run with plain tensor parallelism ("TP Size" columns; no pipeline
or expert parallelism on the page) -- Llama 3.3 70B (B200 FP4 TP1/2/4/8, H200 and H100 FP8
TP1/2/4/8), Llama 3.1 405B (B200 FP4 TP4/8, H200 and H100 FP8 TP8) and Llama 3.1 8B (H200 and
H100 FP8 TP1): 167 cells. Llama 3.3 70B rows carry the preset ``llama3.1-70b`` (Llama 3.3 70B has
Llama 3.1 70B's architecture, as in the v1.0 table) and say so in their note.

Caveats: skipped -- Llama 4 Maverick (MoE; expert-parallel layout not stated, no catalog preset).
KV-cache dtype is not stated on the page (the ``llm_options.yml`` it shows sets no KV-cache option),
so it is ``None``. Empty cells (OOM or not run) are omitted.
"""

from __future__ import annotations

from typing import Final

from service.core.evidence.published._columns import Column, column_rows, with_checkpoints
from service.core.evidence.published.schema import PublishedTable, SourceFile

TABLE_ID: Final = "trtllm-perf-overview-v0.20"
REPOSITORY: Final = "dominicshanshan/TensorRT-LLM"
COMMIT: Final = "ab4143e1d3c82df550f0d5673090a8feee84c7bd"

_H200 = "SXM assumed: the header is 'H200 141GB HBM3'; the v0.21 page lists 'H200 SXM 141GB (DGX H200)'"
COLUMNS: Final = (
    Column("B200", "nvidia-b200", "fp4", None),
    Column("H200 141GB HBM3", "nvidia-h200-sxm", "fp8", None, gpu_assumption=_H200),
    Column("H100 80GB HBM3", "nvidia-h100-sxm", "fp8", None),
)

# model tp input_len output_len | B200 FP4 | H200 FP8 | H100 FP8
# (output tokens/s of the tp-GPU group; "-" = empty cell or not run at that tp)
DATA: Final = """
llama3.1-70b 1 128 128 10994.48 3605.47 3128.33
llama3.1-70b 1 128 2048 9580.46 4315.80 756.42
llama3.1-70b 1 128 4096 6418.39 2701.17 -
llama3.1-70b 1 500 2000 7343.32 3478.76 -
llama3.1-70b 1 1000 1000 6752.53 2744.32 742.14
llama3.1-70b 1 1000 2000 6670.07 2896.44 533.74
llama3.1-70b 1 1024 2048 6636.75 2874.18 530.16
llama3.1-70b 1 2048 128 1342.17 435.90 -
llama3.1-70b 1 5000 500 1429.67 545.96 204.94
llama3.1-70b 1 20000 2000 629.77 276.66 -
llama3.1-70b 2 128 128 17542.11 6427.69 6216.91
llama3.1-70b 2 128 2048 15432.35 8464.03 5782.57
llama3.1-70b 2 128 4096 9841.53 5573.55 3868.37
llama3.1-70b 2 500 2000 11850.57 6740.06 4684.06
llama3.1-70b 2 1000 1000 10815.88 5119.72 4247.19
llama3.1-70b 2 1000 2000 9830.73 5847.26 3866.53
llama3.1-70b 2 1024 2048 9807.13 5568.61 3796.68
llama3.1-70b 2 2048 128 1989.41 772.67 736.89
llama3.1-70b 2 5000 500 2419.67 997.15 862.91
llama3.1-70b 2 20000 2000 1177.01 620.33 416.13
llama3.1-70b 4 128 128 24667.31 10407.42 -
llama3.1-70b 4 128 2048 23568.12 13508.59 11464.94
llama3.1-70b 4 128 4096 17808.76 11458.56 8206.39
llama3.1-70b 4 500 2000 20709.67 12200.18 9903.53
llama3.1-70b 4 1000 1000 16413.04 8685.44 7435.65
llama3.1-70b 4 1000 2000 15597.49 9031.21 7611.12
llama3.1-70b 4 1024 2048 15519.23 8946.71 7575.24
llama3.1-70b 4 2048 128 3033.14 1264.76 1213.33
llama3.1-70b 4 5000 500 3686.84 1698.22 1552.68
llama3.1-70b 4 20000 2000 2120.66 1161.29 903.66
llama3.1-70b 8 128 128 27272.27 15434.37 -
llama3.1-70b 8 128 2048 31174.31 20759.72 17424.32
llama3.1-70b 8 128 4096 25229.25 16668.75 12624.61
llama3.1-70b 8 500 2000 28038.78 - 14553.93
llama3.1-70b 8 1000 1000 20060.66 12744.51 11018.81
llama3.1-70b 8 1000 2000 20672.37 13141.17 11139.22
llama3.1-70b 8 1024 2048 20617.28 13082.62 11004.31
llama3.1-70b 8 2048 128 4035.64 - 1839.22
llama3.1-70b 8 2048 2048 - 10412.85 -
llama3.1-70b 8 5000 500 5182.96 2655.28 2369.84
llama3.1-70b 8 20000 2000 3429.03 1985.85 1554.10
llama3.1-405b 4 128 128 6163.81 - -
llama3.1-405b 4 128 2048 7081.21 - -
llama3.1-405b 4 128 4096 6028.37 - -
llama3.1-405b 4 500 2000 5858.75 - -
llama3.1-405b 4 1000 1000 4848.00 - -
llama3.1-405b 4 1000 2000 5375.25 - -
llama3.1-405b 4 1024 2048 5345.70 - -
llama3.1-405b 4 2048 128 693.55 - -
llama3.1-405b 4 5000 500 947.49 - -
llama3.1-405b 4 20000 2000 641.11 - -
llama3.1-405b 8 128 128 9002.90 - -
llama3.1-405b 8 128 2048 10288.28 5567.87 -
llama3.1-405b 8 128 4096 8713.77 5136.85 -
llama3.1-405b 8 500 2000 9125.86 4787.61 3673.91
llama3.1-405b 8 1000 1000 7582.97 3286.30 3012.22
llama3.1-405b 8 1000 2000 7626.28 3636.76 3262.20
llama3.1-405b 8 1024 2048 7464.03 3618.66 3109.70
llama3.1-405b 8 2048 128 1086.56 443.10 449.02
llama3.1-405b 8 5000 500 1532.45 645.46 -
llama3.1-405b 8 20000 2000 1097.84 - 372.12
llama3.1-8b 1 128 128 - 27970.14 27688.36
llama3.1-8b 1 128 2048 - 23326.38 21841.15
llama3.1-8b 1 128 4096 - 17508.51 13730.89
llama3.1-8b 1 500 2000 - 21390.41 17833.34
llama3.1-8b 1 1000 1000 - 17366.89 15270.62
llama3.1-8b 1 1000 2000 - 16831.31 13798.08
llama3.1-8b 1 1024 2048 - 16737.03 13385.50
llama3.1-8b 1 2048 128 - 3488.03 3414.67
llama3.1-8b 1 5000 500 - 3813.69 3394.54
llama3.1-8b 1 20000 2000 - 1696.66 1345.42
"""

# (preset, precision) -> the checkpoint the page lists for it
CHECKPOINTS: Final[dict[tuple[str, str], str]] = {
    ("llama3.1-70b", "fp4"): "nvidia/Llama-3.3-70B-Instruct-FP4",
    ("llama3.1-70b", "fp8"): "nvidia/Llama-3.3-70B-Instruct-FP8",
    ("llama3.1-405b", "fp4"): "nvidia/Llama-3.1-405B-Instruct-FP4",
    ("llama3.1-405b", "fp8"): "nvidia/Llama-3.1-405B-Instruct-FP8",
    ("llama3.1-8b", "fp8"): "nvidia/Llama-3.1-8B-Instruct-FP8",
}


TABLE: Final = PublishedTable(
    id=TABLE_ID,
    title="TensorRT-LLM Perf Overview, throughput (v0.20)",
    kind="serving",
    publisher="NVIDIA",
    url=f"https://github.com/{REPOSITORY}/blob/{COMMIT}/docs/source/performance/perf-overview.md",
    files=(SourceFile(REPOSITORY, "docs/source/performance/perf-overview.md", COMMIT),),
    date="2025-06",
    date_note="TensorRT-LLM v0.20 release (release notes: NVIDIA/TensorRT-LLM PR #5150, 2025-06-12); "
    "the page says its data was collected for the v0.20 benchmarks",
    engine="tensorrt-llm 0.20",
    stack="TensorRT-LLM 0.20, PyTorch backend (trtllm-bench throughput --backend pytorch, CUDA graphs "
    "with padding), NVIDIA ModelOpt FP8 / NVFP4 checkpoints",
    method="offline max throughput (all requests queued at once), fixed input/output lengths, total "
    "output tokens/s of the whole tp group",
    caveats="Llama 4 Maverick (MoE) not transcribed; KV-cache dtype not stated (FP8 or FP4); H200 "
    "variant inferred (SXM); Llama 3.3 70B mapped to the llama3.1-70b preset; read from a fork's copy",
    rows=with_checkpoints(
        column_rows(TABLE_ID, DATA, COLUMNS, workload="llm-serve-offline", metric="output_tokens_per_s"),
        CHECKPOINTS,
    ),
)
