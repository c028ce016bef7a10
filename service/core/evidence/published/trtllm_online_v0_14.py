"""TensorRT-LLM v0.14.0 "Online Serving Measurements": latency and throughput at fixed request rates.

Source: the "Online Serving Measurements" section of ``docs/source/performance/perf-overview.md``
of NVIDIA/TensorRT-LLM as of v0.14.0 (https://github.com/NVIDIA/TensorRT-LLM/blob/v0.14.0/docs/
source/performance/perf-overview.md); stored copy read: fork ``arthurrasmusson/TensorRT-LLM`` at
commit ``e00d4e6564921307dd264b61fe1d46f116095e0e``. The section says: "All data in the table below
was generated using version 0.14.0, with 500 requests and BF16 precision." The section, still
labelled 0.14.0, is repeated in the v0.15 and v0.17 versions of the page. Date: v0.14.0 release, 2024-11-01.

Stack: TensorRT-LLM 0.14.0 served by the Triton TensorRT-LLM backend
(triton-inference-server/tensorrtllm_backend), BF16 engines (weights and activations; KV-cache
dtype not stated).

Method: 500 requests per point, offered at a fixed QPS (2, 4, 8, 16, 32) or all at once ("INF",
``request_rate=None``); columns: achieved requests/s ("Tput(req/s)"), mean TTFT, mean ITL (inter-
token latency), total (input + output) tokens/s and output tokens/s. "Input Length" / "Output
Length" are 467/256, 467/16 and 202/214 -- the page does not say whether they are fixed or mean
lengths of a dataset. Values are rounded to integers as published.

Why ``cross_gpu=False``: only two GPUs (H100 SXM5 and H200) -- kept for validating the queueing
model (latency vs offered rate), not for the cross-GPU transfer check that wants >= 3 GPUs.

GPUs: "H100 80GB HBM3" is the nvidia-smi name of the H100 SXM5; "H200 131GB HBM3" is taken to be
the H200 SXM (141 GB part; the "131GB" is as published).
"""

from __future__ import annotations

from typing import Final

from service.core.evidence.published.schema import PublishedRow, PublishedTable, SourceFile

TABLE_ID: Final = "trtllm-online-serving-v0.14"

GPUS: Final[dict[str, tuple[str, str | None, str]]] = {
    "H100": ("H100 80GB HBM3", "nvidia-h100-sxm", ""),
    "H200": ("H200 131GB HBM3", "nvidia-h200-sxm", "H200 SXM assumed; the header reads '131GB' as published"),
}

# gpu model tp input_len output_len qps | req/s | mean TTFT ms | mean ITL ms | total tok/s | output tok/s
DATA: Final = """
H100 llama3.1-70b 4 467 256 2 2 62 21 1406 498
H100 llama3.1-70b 4 467 256 4 4 68 24 2750 973
H100 llama3.1-70b 4 467 256 8 7 92 32 5256 1860
H100 llama3.1-70b 4 467 256 16 12 175 66 8941 3164
H100 llama3.1-70b 4 467 256 32 16 1229 86 11537 4083
H100 llama3.1-70b 4 467 256 INF 16 9123 85 11593 4103
H100 llama3.1-70b 4 467 16 2 2 53 18 844 28
H100 llama3.1-70b 4 467 16 4 4 58 20 1908 63
H100 llama3.1-70b 4 467 16 8 8 71 24 3795 126
H100 llama3.1-70b 4 467 16 16 16 109 38 7492 248
H100 llama3.1-70b 4 467 16 32 28 1197 482 13655 452
H100 llama3.1-70b 4 467 16 INF 28 9126 548 13719 454
H100 llama3.1-70b 4 202 214 2 2 48 20 780 401
H100 llama3.1-70b 4 202 214 4 4 51 22 1499 771
H100 llama3.1-70b 4 202 214 8 7 57 25 2702 1390
H100 llama3.1-70b 4 202 214 16 11 74 32 4364 2245
H100 llama3.1-70b 4 202 214 32 14 116 42 5837 3003
H100 llama3.1-70b 4 202 214 INF 16 4482 50 6725 3459
H100 llama3.1-8b 1 467 256 2 2 23 8 1423 504
H100 llama3.1-8b 1 467 256 4 4 24 9 2624 929
H100 llama3.1-8b 1 467 256 8 8 26 9 5535 1959
H100 llama3.1-8b 1 467 256 16 15 30 11 10636 3765
H100 llama3.1-8b 1 467 256 32 26 50 19 19138 6774
H100 llama3.1-8b 1 467 256 INF 37 3335 39 26614 9420
H100 llama3.1-8b 1 467 16 2 2 19 7 956 32
H100 llama3.1-8b 1 467 16 4 4 20 7 1910 63
H100 llama3.1-8b 1 467 16 8 8 22 7 3808 126
H100 llama3.1-8b 1 467 16 16 16 24 8 7567 251
H100 llama3.1-8b 1 467 16 32 31 29 10 14894 493
H100 llama3.1-8b 1 467 16 INF 79 3280 193 38319 1269
H100 llama3.1-8b 1 202 214 2 2 19 7 809 416
H100 llama3.1-8b 1 202 214 4 4 20 8 1586 816
H100 llama3.1-8b 1 202 214 8 7 21 9 3047 1568
H100 llama3.1-8b 1 202 214 16 13 23 10 5597 2879
H100 llama3.1-8b 1 202 214 32 23 27 11 9381 4825
H100 llama3.1-8b 1 202 214 INF 39 1657 21 16117 8291
H200 llama3.1-70b 4 467 256 2 2 58 18 1411 499
H200 llama3.1-70b 4 467 256 4 4 63 20 2770 980
H200 llama3.1-70b 4 467 256 8 7 84 27 5328 1886
H200 llama3.1-70b 4 467 256 16 13 165 60 9224 3264
H200 llama3.1-70b 4 467 256 32 16 1279 83 11800 4176
H200 llama3.1-70b 4 467 256 INF 16 9222 83 11826 4185
H200 llama3.1-70b 4 467 16 2 2 50 15 956 32
H200 llama3.1-70b 4 467 16 4 4 55 16 1909 63
H200 llama3.1-70b 4 467 16 8 8 67 20 3799 126
H200 llama3.1-70b 4 467 16 16 16 103 33 7499 248
H200 llama3.1-70b 4 467 16 32 28 1259 485 13586 450
H200 llama3.1-70b 4 467 16 INF 29 9074 546 13792 457
H200 llama3.1-70b 4 202 214 2 2 43 17 793 408
H200 llama3.1-70b 4 202 214 4 4 46 18 1524 784
H200 llama3.1-70b 4 202 214 8 7 51 21 2796 1438
H200 llama3.1-70b 4 202 214 16 11 67 28 4639 2386
H200 llama3.1-70b 4 202 214 32 15 112 39 6288 3235
H200 llama3.1-70b 4 202 214 INF 17 4480 48 7230 3719
H200 llama3.1-8b 1 467 256 2 2 21 6 1425 504
H200 llama3.1-8b 1 467 256 4 4 23 7 2828 1001
H200 llama3.1-8b 1 467 256 8 8 24 7 5567 1971
H200 llama3.1-8b 1 467 256 16 15 27 9 10761 3809
H200 llama3.1-8b 1 467 256 32 27 44 16 19848 7025
H200 llama3.1-8b 1 467 256 INF 40 3237 36 28596 10121
H200 llama3.1-8b 1 467 16 2 2 18 5 956 32
H200 llama3.1-8b 1 467 16 4 4 19 6 1910 63
H200 llama3.1-8b 1 467 16 8 8 20 6 3810 126
H200 llama3.1-8b 1 467 16 16 16 22 7 7567 250
H200 llama3.1-8b 1 467 16 32 31 27 9 14927 494
H200 llama3.1-8b 1 467 16 INF 81 3227 190 39007 1291
H200 llama3.1-8b 1 202 214 2 2 17 6 812 418
H200 llama3.1-8b 1 202 214 4 4 18 6 1597 822
H200 llama3.1-8b 1 202 214 8 7 19 7 3088 1589
H200 llama3.1-8b 1 202 214 16 14 20 8 5771 2969
H200 llama3.1-8b 1 202 214 32 24 24 9 9931 5109
H200 llama3.1-8b 1 202 214 INF 43 1665 19 17861 9189
"""

_METRICS: Final = ("requests_per_s", "ttft_ms", "itl_ms", "total_tokens_per_s", "output_tokens_per_s")


def _rows() -> tuple[PublishedRow, ...]:
    rows: list[PublishedRow] = []
    for line in DATA.strip().splitlines():
        g, model, tp, isl, osl, qps, *values = line.split()
        name, slug, assumption = GPUS[g]
        rate = None if qps == "INF" else float(qps)
        for metric, value in zip(_METRICS, values, strict=True):
            rows.append(
                PublishedRow(
                    table_id=TABLE_ID,
                    gpu_name=name,
                    slug=slug,
                    workload="llm-serve-online",
                    model=model,
                    precision="bf16",
                    metric=metric,
                    value=float(value),
                    gpu_count=int(tp),
                    input_len=int(isl),
                    output_len=int(osl),
                    tp=int(tp),
                    request_rate=rate,
                    gpu_assumption=assumption,
                    note="500 requests per point; latencies are means"
                    if metric in ("ttft_ms", "itl_ms")
                    else "500 requests per point",
                )
            )
    return tuple(rows)


TABLE: Final = PublishedTable(
    id=TABLE_ID,
    title="TensorRT-LLM Perf Overview, online serving at fixed QPS (v0.14.0, Triton backend)",
    kind="serving",
    publisher="NVIDIA",
    url="https://github.com/NVIDIA/TensorRT-LLM/blob/v0.14.0/docs/source/performance/perf-overview.md",
    files=(
        SourceFile(
            "arthurrasmusson/TensorRT-LLM",
            "docs/source/performance/perf-overview.md",
            "e00d4e6564921307dd264b61fe1d46f116095e0e",
        ),
    ),
    date="2024-11-01",
    date_note="TensorRT-LLM v0.14.0 release (PR #2401); the section says the data was generated with 0.14.0",
    engine="tensorrt-llm 0.14.0 + triton tensorrtllm_backend",
    stack="TensorRT-LLM 0.14.0 + Triton TensorRT-LLM backend, BF16 engines",
    method="500 requests offered at a fixed QPS (2..32) or all at once (INF); mean TTFT / ITL, achieved "
    "req/s, total and output tokens/s",
    caveats="two GPUs only (cross_gpu=False: a queueing-model validation table); lengths may be dataset "
    "means; integers as published",
    rows=_rows(),
    cross_gpu=False,
)
