"""TensorRT-LLM v0.12.0 "Perf Overview": max-throughput tokens/s on H200, GH200, H100, A100, L40S.

Source: ``docs/source/performance/perf-overview.md`` in NVIDIA/TensorRT-LLM at commit
``31ac30e928a2db795799fdcab6be446bfa3a3998`` (the stored version of the page at that commit; same
path as the v0.14 / v0.17 / v1.0 tables). The page states "All data in the table below was
generated using version 0.12.0 and presents token throughput in tokens/second." Date: the v0.12
release (NVIDIA/TensorRT-LLM pull request #2164 "TensorRT-LLM v0.12 Update", 2024-08-29).

Stack: TensorRT-LLM 0.12.0, engines built with ``trtllm-bench --model $model_name build --tp_size
$tp_size --quantization FP8 --dataset $dataset_file`` for the FP8 columns ("If you specify FP8
quantization, the KV cache will automatically be set to FP8 as well!") and without
``--quantization`` for the "Mixed" columns ("If you would like to build an FP16 engine without any
quantization, simply remove the ``--quantization FP8`` option"); run with ``trtllm-bench
throughput`` (in-flight batching, "Guaranteed No Evict" scheduling in the page's example output).

Method: offline maximum throughput ("a local inference client is fed requests at an infinite
rate"; "all requests are queued in rapid succession"), synthetic prompts of exactly ``input_len``
tokens and exactly ``output_len`` output tokens (``prepare_dataset.py token-norm-dist`` with stdev
0); 30,000 requests at 128/128, 3,000 at 128/2048 and 2048/128, 1,500 at 128/4096 and 2048/2048.
The metric is trtllm-bench's "Token Throughput (tokens/sec)" for the whole group of ``tp`` GPUs
(output tokens / total latency, as in the v0.14 table).

GPUs: column headers are nvidia-smi style names: "H100 80GB HBM3" = H100 SXM5 (twice: FP8 and
"Mixed"), "A100-SXM4-80GB" ("Mixed"), "L40S" (FP8); "H200 141GB HBM3" is taken to be the H200 SXM,
as in the v0.14 / v0.17 tables. "GH200 120GB" is a Grace Hopper superchip whose memory
configuration the page does not explain (neither of the catalogued 96 GB / 144 GB variants), so its
rows carry no slug. "Mixed" is read as the unquantized FP16 engine the page describes (precision
``fp16``; FP16/BF16 family), KV-cache dtype not stated.

Transcribed: the models with catalog presets -- LLaMA v2 7B, LLaMA v3 8B, Mistral 7B (TP1), Mixtral
8x7B (TP2, TP4), LLaMA v3 70B and LLaMA v2 70B (TP2, TP4, TP8): 274 cells. All runs are plain
tensor parallelism ("TP stands for Tensor Parallelism"; the engines are built with ``--tp_size``
only; Mixtral 8x7B too, as in the v0.14 table).

Caveats: skipped -- GPT-J 6B and Falcon 180B (no catalog preset). Checkpoints are named only
("LLaMA v3 8B", "Mistral 7B"; base vs instruct and the Mistral version are not stated). Empty cells
(OOM or not run) are omitted; some published cells look anomalous but are kept as published (e.g.
LLaMA v3 70B TP2 2048/2048 on A100-SXM4-80GB "87.54", and GH200 Mixtral 8x7B TP2 far below H100).
"""

from __future__ import annotations

from typing import Final

from service.core.evidence.published._columns import Column, column_rows
from service.core.evidence.published.schema import PublishedTable, SourceFile

TABLE_ID: Final = "trtllm-perf-overview-v0.12"
COMMIT: Final = "31ac30e928a2db795799fdcab6be446bfa3a3998"

_H200 = (
    "SXM assumed: the header is 'H200 141GB HBM3'; later versions of the page list "
    "'H200 SXM 141GB (DGX H200)'"
)
_GH200 = (
    "GH200 superchip; the header says 'GH200 120GB', which matches neither catalogued variant "
    "(96 GB HBM3 / 144 GB HBM3e)"
)
_MIXED = "header precision 'Mixed': the unquantized (FP16) engine; KV-cache dtype not stated"
COLUMNS: Final = (
    Column("H200 141GB HBM3", "nvidia-h200-sxm", "fp8", "fp8", gpu_assumption=_H200),
    Column("GH200 120GB", None, "fp8", "fp8", gpu_assumption=_GH200),
    Column("H100 80GB HBM3", "nvidia-h100-sxm", "fp8", "fp8"),
    Column("H100 80GB HBM3", "nvidia-h100-sxm", "fp16", None, note=_MIXED),
    Column("A100-SXM4-80GB", "nvidia-a100-sxm4-80gb", "fp16", None, note=_MIXED),
    Column("L40S", "nvidia-l40s", "fp8", "fp8"),
)

# model tp input_len output_len | H200 FP8 | GH200 120GB FP8 | H100 FP8 | H100 Mixed |
# A100-SXM4-80GB Mixed | L40S FP8   (output tokens/s of the tp-GPU group; "-" = empty cell)
DATA: Final = """
llama2-7b 1 128 128 19706.35 17803.58 19068.99 11393.48 5272.39 6345.72
llama2-7b 1 128 2048 7651.12 5472.34 6610.03 2964.65 1785.79 1551.37
llama2-7b 1 128 4096 4424.90 3271.61 3649.38 1596.87 957.12 817.24
llama2-7b 1 2048 128 2385.54 2035.42 2271.63 1189.06 564.77 625.09
llama2-7b 1 2048 2048 3191.34 2726.29 2802.41 1243.96 735.19 641.56
llama3-8b 1 128 128 28288.75 25420.52 27399.75 15567.44 6586.88 8745.80
llama3-8b 1 128 2048 23230.62 16426.68 19198.73 8817.39 4882.13 5084.49
llama3-8b 1 128 4096 16144.44 9832.66 12084.97 5352.37 3079.90 2755.13
llama3-8b 1 2048 128 3623.79 3290.22 3463.26 1852.48 781.63 980.86
llama3-8b 1 2048 2048 11093.62 7573.35 8894.11 3986.83 2268.13 2051.79
mistral-7b 1 128 128 30223.01 27696.90 29788.46 16319.25 6807.02 9612.58
mistral-7b 1 128 2048 24989.54 17942.29 20509.72 9982.01 5296.02 5444.89
mistral-7b 1 128 4096 17036.14 10846.03 12807.80 5718.89 3241.33 2931.17
mistral-7b 1 2048 128 3678.80 3294.02 3521.71 1887.75 786.43 1002.49
mistral-7b 1 2048 2048 11510.54 8357.75 9214.61 4284.82 2363.25 2154.26
mixtral-8x7b 2 128 128 24895.03 8785.80 24394.71 15529.86 5921.41 -
mixtral-8x7b 4 128 128 42014.24 38828.53 40197.42 28132.17 11414.95 6820.26
mixtral-8x7b 2 128 2048 29389.21 5474.69 20873.02 7066.02 4306.98 -
mixtral-8x7b 4 128 2048 52348.10 41573.66 40588.05 21285.72 10974.83 7467.15
mixtral-8x7b 2 128 4096 21480.27 2277.66 12838.28 3986.01 2400.11 -
mixtral-8x7b 4 128 4096 39182.04 28626.55 28337.31 12447.13 7278.89 5233.43
mixtral-8x7b 2 2048 128 2934.44 1003.51 2898.27 1834.77 693.51 -
mixtral-8x7b 4 2048 128 5152.40 4724.01 5028.61 3393.18 1362.93 805.49
mixtral-8x7b 2 2048 2048 14029.17 2671.88 10479.45 3531.31 1945.88 -
mixtral-8x7b 4 2048 2048 25436.05 20302.56 19971.72 9622.66 5221.74 3616.30
llama3-70b 2 128 128 5386.88 - - 2959.22 1301.14 -
llama3-70b 4 128 128 8944.26 8587.01 8642.05 5966.47 2413.95 -
llama3-70b 8 128 128 16125.20 - 15397.47 10406.55 4548.32 1364.08
llama3-70b 2 128 2048 7007.27 - - 720.73 500.83 -
llama3-70b 4 128 2048 12906.75 10761.53 8978.95 4736.61 2380.02 -
llama3-70b 8 128 2048 19417.37 - 14822.93 6672.14 3815.08 1809.40
llama3-70b 2 128 4096 6183.85 - - 369.29 251.24 -
llama3-70b 4 128 4096 8859.54 7270.77 6073.48 2969.99 1634.82 -
llama3-70b 8 128 4096 13969.95 - 10094.57 4358.77 2847.54 1313.78
llama3-70b 2 2048 128 696.59 - - 301.46 140.88 -
llama3-70b 4 2048 128 1044.35 1000.55 1022.06 681.72 278.76 -
llama3-70b 8 2048 128 2018.47 - 1933.15 1279.46 543.73 163.36
llama3-70b 2 2048 2048 3525.18 - - - 87.54 -
llama3-70b 4 2048 2048 6550.76 4859.38 4870.26 2379.66 1209.69 -
llama3-70b 8 2048 2048 9706.95 - 7670.04 3692.41 2192.28 895.23
llama2-70b 2 128 128 6355.16 - - 2927.71 1374.05 -
llama2-70b 4 128 128 10818.97 10819.19 10754.99 6603.10 2765.94 -
llama2-70b 8 128 128 16667.25 - 16074.84 11369.11 4796.89 1402.92
llama2-70b 2 128 2048 6185.77 - - 668.52 445.04 -
llama2-70b 4 128 2048 12884.76 11356.48 8870.71 5067.06 2710.53 -
llama2-70b 8 128 2048 19053.13 - 17534.62 8805.16 5665.93 2203.33
llama2-70b 2 128 4096 4873.24 - - 334.10 215.70 -
llama2-70b 4 128 4096 8664.90 6311.85 7564.99 3354.02 1884.46 -
llama2-70b 8 128 4096 15110.32 - 10584.03 5373.10 3672.80 1787.76
llama2-70b 2 2048 128 732.09 - - 302.49 141.70 -
llama2-70b 4 2048 128 1272.90 1269.58 1265.80 774.93 320.79 -
llama2-70b 8 2048 128 2015.77 - 1943.96 1355.78 569.48 165.52
llama2-70b 2 2048 2048 3508.50 - - 321.95 212.97 -
llama2-70b 4 2048 2048 6642.69 5545.83 4889.26 2439.10 1276.58 -
llama2-70b 8 2048 2048 10178.71 - 8071.77 4275.74 2589.60 1083.45
"""

TABLE: Final = PublishedTable(
    id=TABLE_ID,
    title="TensorRT-LLM Perf Overview, throughput (v0.12.0)",
    kind="serving",
    publisher="NVIDIA",
    url=f"https://github.com/NVIDIA/TensorRT-LLM/blob/{COMMIT}/docs/source/performance/perf-overview.md",
    files=(SourceFile("NVIDIA/TensorRT-LLM", "docs/source/performance/perf-overview.md", COMMIT),),
    date="2024-08-29",
    date_note="TensorRT-LLM v0.12 release (NVIDIA/TensorRT-LLM PR #2164); the page says the data was "
    "generated with 0.12.0",
    engine="tensorrt-llm 0.12.0",
    stack="TensorRT-LLM 0.12.0 (TensorRT engines from trtllm-bench build, trtllm-bench throughput, "
    "in-flight batching)",
    method="offline max throughput (all requests queued at once), fixed input/output lengths, output "
    "tokens/s of the whole tp group",
    caveats="H200 variant inferred (SXM); GH200 120GB not mapped to a catalog variant (no slug); "
    "'Mixed' read as FP16 with KV-cache dtype not stated; GPT-J 6B and Falcon 180B not transcribed "
    "(no preset); checkpoint variants not stated",
    rows=tuple(
        column_rows(TABLE_ID, DATA, COLUMNS, workload="llm-serve-offline", metric="output_tokens_per_s")
    ),
)
