"""TensorRT-LLM v0.17 "Perf Overview": max-throughput tokens/s on H200, H100, GH200, L40S, A100.

Source: ``docs/source/performance/perf-overview.md`` in NVIDIA/TensorRT-LLM at commit
``258c7540c03517def55d9a5aadfa9288af474e1b`` (published at
https://nvidia.github.io/TensorRT-LLM/performance/perf-overview.html for the v0.17 release). The
page states "All data in the table below was generated using version 0.17 and presents token
throughput in tokens/second." Date: v0.17 release (NVIDIA/TensorRT-LLM pull request #2725,
2025-01-30).

Stack: TensorRT-LLM 0.17, ``trtllm-bench build --quantization FP8`` engines (FP8 also for the
KV cache) for H200 / H100 / GH200 / L40S, an FP16 engine (no quantization) for A100; run with
``trtllm-bench throughput`` (in-flight batching, ``kv_cache_free_gpu_mem_fraction`` 0.95 in most
cases, 0.90 on OOM). On GH200 the engines were built with ``trtllm-bench build`` but benchmarked
with the legacy ``gptManagerBenchmark`` (IFB, executor API, ``guaranteed_no_evict``, chunked
context, ``--request_rate -1``) because of known trtllm-bench issues on GH200 -- same engine
and workload, different client binary.

Method: offline maximum throughput (all requests queued at once), synthetic prompts of exactly
``input_len`` tokens and exactly ``output_len`` output tokens; request counts as in the v0.14
page (30,000 at 128/128 down to 1,000 at 20000/2000). Metric: total output tokens / total
latency for the whole group of ``tp`` GPUs.

GPUs: headers are nvidia-smi style names: "H100 80GB HBM3" = H100 SXM5, "A100-SXM4-80GB", "L40S";
"H200 141GB HBM3" is taken to be H200 SXM; "GH200 480GB" is the Grace Hopper superchip (the
catalog has no GH200 entry yet, and whether its GPU had 96 GB HBM3 or 144 GB HBM3e is not
stated), single GPU only (TP 1).

Caveats: checkpoints named only ("LLaMA v3.1 8B", "Mistral 7B"); FP16 KV-cache dtype not stated;
empty cells (OOM / not run) omitted.
"""

from __future__ import annotations

from typing import Final

from service.core.evidence.published._columns import Column, column_rows
from service.core.evidence.published.schema import PublishedTable, SourceFile

TABLE_ID: Final = "trtllm-perf-overview-v0.17"

_H200 = (
    "SXM assumed: the header is 'H200 141GB HBM3'; later versions of the page list "
    "'H200 SXM 141GB (DGX H200)'"
)
_GH200 = "GH200 superchip; GPU memory variant (96 GB HBM3 or 144 GB HBM3e) not stated"
COLUMNS: Final = (
    Column("H200 141GB HBM3", "nvidia-h200-sxm", "fp8", "fp8", gpu_assumption=_H200),
    Column("H100 80GB HBM3", "nvidia-h100-sxm", "fp8", "fp8"),
    Column(
        "GH200 480GB",
        None,
        "fp8",
        "fp8",
        gpu_assumption=_GH200,
        note="benchmarked with gptManagerBenchmark (legacy client), not trtllm-bench",
    ),
    Column("L40S", "nvidia-l40s", "fp8", "fp8"),
    Column("A100-SXM4-80GB", "nvidia-a100-sxm4-80gb", "fp16", None),
)

# model tp input_len output_len | H200 FP8 | H100 FP8 | GH200 480GB FP8 | L40S FP8 |
# A100-SXM4-80GB FP16   (output tokens/s of the tp-GPU group; "-" = empty cell)
DATA: Final = """
llama3.1-8b 1 128 128 29526.04 28836.77 29852.96 9104.61 6627.27
llama3.1-8b 1 128 2048 25398.86 21109.38 21769.55 5365.81 5255.99
llama3.1-8b 1 128 4096 17370.8 13593.65 14189.89 3025.92 3453.79
llama3.1-8b 1 500 2000 21020.81 16500.69 17137.29 4273.75 4276.58
llama3.1-8b 1 1000 1000 17537.96 15244.78 16482.77 4054.71 3786.83
llama3.1-8b 1 2048 128 3794.14 3556.73 3843.95 1066.52 799.61
llama3.1-8b 1 2048 2048 11968.5 9488.42 10265.9 2225.27 2424.16
llama3.1-8b 1 5000 500 3987.79 3559.36 3932.58 981.2 825.13
llama3.1-8b 1 20000 2000 1804.1 1401.31 1560.2 327.97 330.04
llama3.1-70b 1 128 128 4020.75 3378.03 3636.91 - -
llama3.1-70b 1 128 2048 4165.68 911.62 2082.74 - -
llama3.1-70b 1 128 4096 2651.75 426.32 1263.98 - -
llama3.1-70b 1 500 2000 3018.39 775.57 1973.86 - -
llama3.1-70b 1 1000 1000 2823.45 839.97 1746.12 - -
llama3.1-70b 1 2048 128 465.99 343.29 424.96 - -
llama3.1-70b 1 2048 2048 1913.8 - 1086.93 - -
llama3.1-70b 1 5000 500 560.16 245.34 422.36 - -
llama3.1-70b 1 20000 2000 279.52 - - - -
llama3.1-70b 2 128 128 6823.01 6645.12 - - 1313.96
llama3.1-70b 2 128 2048 8290.35 6169.58 - - 531.26
llama3.1-70b 2 128 4096 6526.67 3897.06 - - -
llama3.1-70b 2 500 2000 6848.02 4972.57 - - 439.41
llama3.1-70b 2 1000 1000 5164.76 4390.53 - - 472.94
llama3.1-70b 2 2048 128 809 772.66 - - 148.96
llama3.1-70b 2 2048 2048 4183.88 2898.16 - - 261.1
llama3.1-70b 2 5000 500 1025.38 919.73 - - 121.47
llama3.1-70b 2 20000 2000 640.62 443.01 - - -
llama3.1-70b 4 128 128 11098.63 11127.53 - 1523.52 2733.48
llama3.1-70b 4 128 2048 14156 11511.93 - 1942.66 2811.27
llama3.1-70b 4 128 4096 10574.06 7439.41 - 1440.23 1976.49
llama3.1-70b 4 500 2000 12452.79 9836.7 - 1634.72 2275.79
llama3.1-70b 4 1000 1000 8911.29 7430.99 - 1209.25 1921.77
llama3.1-70b 4 2048 128 1358.06 1302.6 - 177.72 325.15
llama3.1-70b 4 2048 2048 7130.44 5480.03 - 969.68 1393.64
llama3.1-70b 4 5000 500 1811.55 1602.78 - 249.52 392.62
llama3.1-70b 4 20000 2000 1199.68 920.19 - 162.25 212.08
llama3.1-70b 8 128 128 15355.84 14730.69 - 1464.03 4717.62
llama3.1-70b 8 128 2048 21195.88 17061.82 - 2303.31 5241.5
llama3.1-70b 8 128 4096 16941.52 14171.43 - 2018.22 3724.67
llama3.1-70b 8 500 2000 17278.4 14679.33 - 1971.96 4445.37
llama3.1-70b 8 1000 1000 13181.24 11451.16 - 1333.62 3320.41
llama3.1-70b 8 2048 128 1983.03 1923.41 - 176.16 542.38
llama3.1-70b 8 2048 2048 11142.47 8801.95 - 1200.16 2553.71
llama3.1-70b 8 5000 500 2717.83 2457.42 - 259.71 696.34
llama3.1-70b 8 20000 2000 1920.45 1512.6 - 209.87 413.38
llama3.1-405b 8 128 128 3874.19 - - - -
llama3.1-405b 8 128 2048 5938.09 - - - -
llama3.1-405b 8 128 4096 5168.37 - - - -
llama3.1-405b 8 500 2000 5084.29 - - - -
llama3.1-405b 8 1000 1000 3399.69 - - - -
llama3.1-405b 8 2048 128 463.42 - - - -
llama3.1-405b 8 2048 2048 2940.62 - - - -
llama3.1-405b 8 5000 500 669.13 - - - -
llama3.1-405b 8 20000 2000 535.31 - - - -
mistral-7b 1 128 128 31938.12 31674.49 32498.47 9664.13 6982.53
mistral-7b 1 128 2048 27409.3 23496.42 23337.29 5720.65 5630.62
mistral-7b 1 128 4096 18505.03 14350.99 15017.88 3136.33 3591.22
mistral-7b 1 500 2000 22354.67 18026.27 18556 4521.77 4400.48
mistral-7b 1 1000 1000 18426.16 16035.66 17252.11 4177.76 3896.58
mistral-7b 1 2048 128 3834.43 3642.48 3813.13 1076.74 808.58
mistral-7b 1 2048 2048 12347.37 9958.17 10755.94 2286.71 2489.77
mistral-7b 1 5000 500 4041.59 3591.33 3949.66 1001.02 844.64
mistral-7b 1 20000 2000 1822.69 1373.24 1601.28 337.83 332.3
mixtral-8x7b 1 128 128 17157.72 15962.49 16859.18 - -
mixtral-8x7b 1 128 2048 15095.21 8290.13 11120.16 - -
mixtral-8x7b 1 128 4096 9534.62 4784.86 6610.47 - -
mixtral-8x7b 1 500 2000 12105.27 6800.6 9192.86 - -
mixtral-8x7b 1 1000 1000 10371.36 6868.52 8849.18 - -
mixtral-8x7b 1 2048 128 2009.67 1892.81 1994.31 - -
mixtral-8x7b 1 2048 2048 6940.32 3983.1 5545.46 - -
mixtral-8x7b 1 5000 500 2309.1 1764.7 2078.27 - -
mixtral-8x7b 1 20000 2000 1151.78 673.7 860.68 - -
mixtral-8x7b 2 128 128 27825.34 27451.13 - - 5541.47
mixtral-8x7b 2 128 2048 29584.05 22830.08 - - 4169.78
mixtral-8x7b 2 128 4096 21564.68 14237.01 - - 2608.05
mixtral-8x7b 2 500 2000 23410.63 17036.04 - - 3446.37
mixtral-8x7b 2 1000 1000 19151.19 15770.89 - - 3154.52
mixtral-8x7b 2 2048 128 3383.16 3333.68 - - 649
mixtral-8x7b 2 2048 2048 14007.29 10685.85 - - 2056.58
mixtral-8x7b 2 5000 500 4223.68 3646.09 - - 724.44
mixtral-8x7b 2 20000 2000 2299.21 1757.45 - - 337.51
mixtral-8x7b 4 128 128 42551.59 41068.23 - 6921.87 10324.28
mixtral-8x7b 4 128 2048 52291.78 41164.73 - 7996.93 10911.86
mixtral-8x7b 4 128 4096 39513.73 27912.48 - 5736.09 7666.51
mixtral-8x7b 4 500 2000 43818.99 34489.34 - 6914.68 8456.21
mixtral-8x7b 4 1000 1000 33580.9 27784.74 - 5251.49 7122.84
mixtral-8x7b 4 2048 128 5467.62 5234.98 - 827.62 1237.62
mixtral-8x7b 4 2048 2048 24980.93 19432.08 - 3935.32 5222.98
mixtral-8x7b 4 5000 500 7084.94 6401.56 - 1092.88 1500.55
mixtral-8x7b 4 20000 2000 4236.84 3303.83 - 682.48 829.59
mixtral-8x7b 8 128 128 53212.55 50849.55 - 6740.84 17043.54
mixtral-8x7b 8 128 2048 68608.45 61607.7 - 10393.3 20277.88
mixtral-8x7b 8 128 4096 54827.78 48280.37 - 8472.35 15282.89
mixtral-8x7b 8 500 2000 58706.39 52583.65 - 8660.71 17184.24
mixtral-8x7b 8 1000 1000 44705.48 40631.71 - 5947.72 12851.44
mixtral-8x7b 8 2048 128 7554.38 6988.18 - 811.96 2165.52
mixtral-8x7b 8 2048 2048 36193.64 30983.35 - 5136.98 9809.76
mixtral-8x7b 8 5000 500 10271.8 9210.11 - 1153.76 2761.28
mixtral-8x7b 8 20000 2000 6835.53 5602.43 - 918.95 1592.53
mistralai/Mixtral-8x22B-v0.1 8 128 128 22948.57 21876.08 - - 6381.95
mistralai/Mixtral-8x22B-v0.1 8 128 2048 32415.81 25150.03 - - 6685.99
mistralai/Mixtral-8x22B-v0.1 8 128 4096 25753.14 18387.4 - - 4789.13
mistralai/Mixtral-8x22B-v0.1 8 500 2000 27429.6 21421.86 - - 5648.46
mistralai/Mixtral-8x22B-v0.1 8 1000 1000 19712.35 16573.24 - - 4549.46
mistralai/Mixtral-8x22B-v0.1 8 2048 128 2899.84 2794.97 - - 761.56
mistralai/Mixtral-8x22B-v0.1 8 2048 2048 15798.59 12244.93 - - 3521.98
mistralai/Mixtral-8x22B-v0.1 8 5000 500 4031.79 3645.27 - - 959.14
mistralai/Mixtral-8x22B-v0.1 8 20000 2000 2815.76 2227.63 - - 575.02
"""

TABLE: Final = PublishedTable(
    id=TABLE_ID,
    title="TensorRT-LLM Perf Overview, throughput (v0.17)",
    kind="serving",
    publisher="NVIDIA",
    url="https://github.com/NVIDIA/TensorRT-LLM/blob/258c7540c03517def55d9a5aadfa9288af474e1b/"
    "docs/source/performance/perf-overview.md",
    files=(
        SourceFile(
            "NVIDIA/TensorRT-LLM",
            "docs/source/performance/perf-overview.md",
            "258c7540c03517def55d9a5aadfa9288af474e1b",
        ),
    ),
    date="2025-01-30",
    date_note="TensorRT-LLM v0.17 release (NVIDIA/TensorRT-LLM PR #2725); the page says the data was "
    "generated with 0.17",
    engine="tensorrt-llm 0.17",
    stack="TensorRT-LLM 0.17 (TensorRT engines, trtllm-bench throughput; gptManagerBenchmark on GH200)",
    method="offline max throughput (all requests queued at once), fixed input/output lengths, output "
    "tokens/s of the whole tp group",
    caveats="H200 variant inferred (SXM); GH200 not in the catalog and measured with the legacy client; "
    "FP16 KV-cache dtype not stated",
    rows=tuple(
        column_rows(TABLE_ID, DATA, COLUMNS, workload="llm-serve-offline", metric="output_tokens_per_s")
    ),
)
