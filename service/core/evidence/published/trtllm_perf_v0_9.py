"""TensorRT-LLM v0.9.0 "Performance of TensorRT-LLM": static-batch throughput and batch-1 TTFT.

Source: ``docs/source/performance/perf-overview.md`` of NVIDIA/TensorRT-LLM as of release v0.9.0
("All data was generated using version 0.9.0"; published
https://github.com/NVIDIA/TensorRT-LLM/blob/v0.9.0/docs/source/performance/perf-overview.md). The
stored copy read is the fork ``WhiteD2125/TensorRT-LLM`` at commit
``6ad7cf1bcc08e31990c62ba929a8e84f35667654`` (same path). Date: v0.9.0 release, April 2024
(NVIDIA/TensorRT-LLM PR #1461 "Update documents for release 0.9"; downstream projects moved to
0.9 on 2024-04-08/16).

Stack: TensorRT-LLM 0.9.0 built from source in its development container; engines from
``trtllm-build`` with ``--paged_kv_cache disable --context_fmha enable --gpt_attention_plugin
float16 --strongly_typed``; checkpoint configs with ``quant_algo: FP8`` and
``kv_cache_quant_algo: FP8`` on H200 / H100 / L40S (FP8 weights, activations and KV cache); on A100
the quantization fields are removed ("dtype": "float16": FP16 weights and KV cache). Runs use the
C++ ``gptSessionBenchmark`` -- static batching (no in-flight batching), ``--warm_up 1 --num_runs 5``.
``TRTLLM_ENABLE_XQA=1`` was set "where our tests displayed performance benefits" (e.g. Llama-2-70B).

Method: throughput table -- "reference data at large batch sizes": every request of the batch has
exactly ``input_len`` prompt tokens and generates ``output_len`` tokens; the metric is output
tokens/s **per GPU** (the group of ``tp`` GPUs divided by ``tp``) at the batch listed in each row.
Latency table -- "1st Token Latency (ms)" at batch 1, measured by
generating a single output token (``input_output_len <isl>,1``).

GPUs: "H100" -- the page reproduces on "an H100-HBM3-80GB system" (SXM5); "H200" is taken to be
the H200 SXM (no other H200 existed at v0.9.0); "A100" is not further identified (left without a
slug); "L40S". Models: "LLaMA 7B" / "LLaMA 70B" are Llama-2-7b / Llama-2-70b (the build section
configures "Llama2-7b" / "Llama2-70b"); "Mistral 7B" version not stated; GPT-J 6B and Falcon 180B
by their Hugging Face ids.
"""

from __future__ import annotations

from typing import Final

from service.core.evidence.published.schema import PublishedRow, PublishedTable, SourceFile

TABLE_ID: Final = "trtllm-perf-overview-v0.9"

# source GPU label -> (gpu_name, slug, precision, kv cache dtype, assumption)
GPUS: Final[dict[str, tuple[str, str | None, str, str, str]]] = {
    "H200": (
        "H200",
        "nvidia-h200-sxm",
        "fp8",
        "fp8",
        "SXM assumed: the page says only 'H200'; no other H200 part existed at v0.9.0",
    ),
    "H100": (
        "H100",
        "nvidia-h100-sxm",
        "fp8",
        "fp8",
        "SXM5 assumed: the page reproduces its numbers on 'an H100-HBM3-80GB system'",
    ),
    "L40S": ("L40S", "nvidia-l40s", "fp8", "fp8", ""),
    "A100": ("A100 (variant not stated)", None, "fp16", "fp16", "A100 memory size / form factor not stated"),
}

# gpu model batch tp input_len output_len output-tokens/s/GPU ("Peak Throughput" tables)
THROUGHPUT: Final = """
H200 EleutherAI/gpt-j-6b 1024 1 128 128 27304
H200 EleutherAI/gpt-j-6b 120 1 128 2048 8530
H200 EleutherAI/gpt-j-6b 64 1 2048 128 2785
H200 EleutherAI/gpt-j-6b 64 1 2048 2048 3753
H200 mistral-7b 896 1 128 128 20460
H200 mistral-7b 120 1 128 2048 8950
H200 mistral-7b 64 1 2048 128 2423
H200 mistral-7b 56 1 2048 2048 3867
H200 llama2-7b 896 1 128 128 20618
H200 llama2-7b 120 1 128 2048 8348
H200 llama2-7b 64 1 2048 128 2391
H200 llama2-7b 56 1 2048 2048 3522
H200 llama2-70b 1024 1 128 128 3989
H200 llama2-70b 512 2 128 2048 3963
H200 llama2-70b 64 1 2048 128 418
H200 llama2-70b 64 1 2048 2048 1458
H200 tiiuae/falcon-180B 1024 4 128 128 1118
H200 tiiuae/falcon-180B 1024 4 128 2048 990
H200 tiiuae/falcon-180B 64 4 2048 128 118
H200 tiiuae/falcon-180B 64 4 2048 2048 265
H100 EleutherAI/gpt-j-6b 1024 1 128 128 25860
H100 EleutherAI/gpt-j-6b 120 1 128 2048 7350
H100 EleutherAI/gpt-j-6b 64 1 2048 128 2570
H100 EleutherAI/gpt-j-6b 64 1 2048 2048 3212
H100 mistral-7b 896 1 128 128 20404
H100 mistral-7b 120 1 128 2048 8623
H100 mistral-7b 84 1 2048 128 2405
H100 mistral-7b 56 1 2048 2048 3731
H100 llama2-7b 896 1 128 128 19854
H100 llama2-7b 120 1 128 2048 6944
H100 llama2-7b 84 1 2048 128 2163
H100 llama2-7b 56 1 2048 2048 2826
H100 llama2-70b 1024 2 128 128 3214
H100 llama2-70b 512 4 128 2048 2725
H100 llama2-70b 96 2 2048 128 346
H100 llama2-70b 64 2 2048 2048 1011
H100 tiiuae/falcon-180B 1024 4 128 128 1100
H100 tiiuae/falcon-180B 1024 8 128 2048 837
H100 tiiuae/falcon-180B 64 4 2048 128 112
H100 tiiuae/falcon-180B 64 4 2048 2048 246
L40S EleutherAI/gpt-j-6b 512 1 128 128 7859
L40S EleutherAI/gpt-j-6b 64 1 128 2048 1904
L40S EleutherAI/gpt-j-6b 32 1 2048 128 684
L40S EleutherAI/gpt-j-6b 32 1 2048 2048 768
L40S mistral-7b 896 1 128 128 9562
L40S mistral-7b 120 1 128 2048 4387
L40S mistral-7b 84 1 2048 128 971
L40S mistral-7b 56 1 2048 2048 1721
L40S llama2-7b 256 1 128 128 5885
L40S llama2-7b 64 1 128 2048 1654
L40S llama2-7b 32 1 2048 128 574
L40S llama2-7b 16 1 2048 2048 537
L40S llama2-70b 256 2 128 128 562
L40S llama2-70b 256 4 128 2048 478
L40S llama2-70b 16 2 2048 128 49
L40S llama2-70b 64 4 2048 2048 185
L40S tiiuae/falcon-180B 512 8 128 128 152
L40S tiiuae/falcon-180B 256 8 128 2048 200
L40S tiiuae/falcon-180B 32 8 2048 128 15
L40S tiiuae/falcon-180B 32 8 2048 2048 52
A100 EleutherAI/gpt-j-6b 512 1 128 128 5876
A100 EleutherAI/gpt-j-6b 32 1 128 2048 1549
A100 EleutherAI/gpt-j-6b 32 1 2048 128 545
A100 EleutherAI/gpt-j-6b 32 1 2048 2048 815
A100 mistral-7b 896 1 128 128 6251
A100 mistral-7b 120 1 128 2048 3776
A100 mistral-7b 64 1 2048 128 698
A100 mistral-7b 56 1 2048 2048 1576
A100 mixtral-8x7b 512 2 128 128 2842
A100 mixtral-8x7b 128 2 128 2048 1724
A100 mixtral-8x7b 64 2 2048 128 319
A100 mixtral-8x7b 32 2 2048 2048 801
A100 llama2-7b 256 1 128 128 5390
A100 llama2-7b 32 1 128 2048 1484
A100 llama2-7b 32 1 2048 128 533
A100 llama2-7b 16 1 2048 2048 603
A100 llama2-70b 1024 4 128 128 686
A100 llama2-70b 512 8 128 2048 684
A100 llama2-70b 96 4 2048 128 80
A100 llama2-70b 64 4 2048 2048 289
A100 tiiuae/falcon-180B 1024 8 128 128 254
A100 tiiuae/falcon-180B 512 8 128 2048 266
A100 tiiuae/falcon-180B 64 8 2048 128 29
A100 tiiuae/falcon-180B 64 8 2048 2048 93
"""

# gpu model batch tp input_len first-token-latency-ms ("Low Latency" tables, batch 1, 1 output token)
FIRST_TOKEN: Final = """
H200 EleutherAI/gpt-j-6b 1 1 128 5.0
H200 EleutherAI/gpt-j-6b 1 1 2048 23.5
H200 mistral-7b 1 1 128 5.9
H200 mistral-7b 1 1 2048 31.7
H200 llama2-7b 1 1 128 5.7
H200 llama2-7b 1 1 2048 30.2
H200 llama2-70b 1 4 128 17.8
H200 llama2-70b 1 4 2048 103.0
H200 tiiuae/falcon-180B 1 4 128 36.4
H200 tiiuae/falcon-180B 1 4 2048 194.4
H100 EleutherAI/gpt-j-6b 1 1 128 5.5
H100 EleutherAI/gpt-j-6b 1 1 2048 23.8
H100 mistral-7b 1 1 128 6.5
H100 mistral-7b 1 1 2048 32.4
H100 llama2-7b 1 1 128 6.3
H100 llama2-7b 1 1 2048 30.8
H100 llama2-70b 1 4 128 19.6
H100 llama2-70b 1 8 2048 85.1
H100 tiiuae/falcon-180B 1 4 128 41.1
H100 tiiuae/falcon-180B 1 8 2048 129.9
L40S EleutherAI/gpt-j-6b 1 1 128 12.4
L40S EleutherAI/gpt-j-6b 1 1 2048 61.7
L40S mistral-7b 1 1 128 15.4
L40S mistral-7b 1 1 2048 87.3
L40S llama2-7b 1 1 128 14.1
L40S llama2-7b 1 1 2048 80.1
L40S llama2-70b 1 8 128 70.4
L40S llama2-70b 1 4 2048 673.3
L40S tiiuae/falcon-180B 1 8 128 91.0
L40S tiiuae/falcon-180B 1 8 2048 768.8
A100 EleutherAI/gpt-j-6b 1 1 128 14.8
A100 EleutherAI/gpt-j-6b 1 1 2048 136.4
A100 mistral-7b 1 1 128 16.3
A100 mistral-7b 1 1 2048 139.6
A100 mixtral-8x7b 1 2 128 23.8
A100 mixtral-8x7b 1 2 2048 160.9
A100 llama2-7b 1 1 128 16.2
A100 llama2-7b 1 1 2048 132.4
A100 llama2-70b 1 4 128 45.6
A100 llama2-70b 1 8 2048 249.2
A100 tiiuae/falcon-180B 1 8 128 76.5
A100 tiiuae/falcon-180B 1 8 2048 456.0
"""


def _rows() -> tuple[PublishedRow, ...]:
    rows: list[PublishedRow] = []
    for line in THROUGHPUT.strip().splitlines():
        g, model, bs, tp, isl, osl, value = line.split()
        name, slug, prec, kv, assumption = GPUS[g]
        rows.append(
            PublishedRow(
                table_id=TABLE_ID,
                gpu_name=name,
                slug=slug,
                workload="llm-serve-static-batch",
                model=model,
                precision=prec,
                metric="output_tokens_per_s_per_gpu",
                value=float(value),
                gpu_count=int(tp),
                batch_size=int(bs),
                input_len=int(isl),
                output_len=int(osl),
                tp=int(tp),
                kv_cache_dtype=kv,
                gpu_assumption=assumption,
                note="static batch (gptSessionBenchmark); per GPU = group / tp",
            )
        )
    for line in FIRST_TOKEN.strip().splitlines():
        g, model, bs, tp, isl, value = line.split()
        name, slug, prec, kv, assumption = GPUS[g]
        rows.append(
            PublishedRow(
                table_id=TABLE_ID,
                gpu_name=name,
                slug=slug,
                workload="llm-serve-static-batch",
                model=model,
                precision=prec,
                metric="ttft_ms",
                value=float(value),
                gpu_count=int(tp),
                batch_size=int(bs),
                input_len=int(isl),
                output_len=1,
                tp=int(tp),
                kv_cache_dtype=kv,
                gpu_assumption=assumption,
                note="first-token latency of a batch-1 request generating one token (gptSessionBenchmark)",
            )
        )
    return tuple(rows)


TABLE: Final = PublishedTable(
    id=TABLE_ID,
    title="TensorRT-LLM Performance Overview, static batch (v0.9.0)",
    kind="serving",
    publisher="NVIDIA",
    url="https://github.com/NVIDIA/TensorRT-LLM/blob/v0.9.0/docs/source/performance/perf-overview.md",
    files=(
        SourceFile(
            "WhiteD2125/TensorRT-LLM",
            "docs/source/performance/perf-overview.md",
            "6ad7cf1bcc08e31990c62ba929a8e84f35667654",
        ),
    ),
    date="2024-04",
    date_note="TensorRT-LLM v0.9.0 release month (PR #1461); the page says all data was generated with 0.9.0",
    engine="tensorrt-llm 0.9.0",
    stack="TensorRT-LLM 0.9.0 (TensorRT engines, C++ gptSessionBenchmark, static batching, contiguous KV)",
    method="static batch at the listed size, fixed input/output lengths; output tokens/s per GPU; "
    "first-token latency at batch 1",
    caveats="H200 / H100 variants inferred (SXM); A100 variant not stated (no slug); XQA kernels enabled "
    "per model where they helped",
    rows=_rows(),
)
