"""TensorRT-LLM v1.0 "Perf Overview": max-throughput tokens/s on B200, GB200, H200, H100, RTX PRO 6000.

Source: ``docs/source/performance/perf-overview.md`` in NVIDIA/TensorRT-LLM at commit
``00f37686aa854010d68bcbd0f4ab000221541ca6`` (the page as of the v1.0 release; the v0.17 page
of ``trtllm_perf_v0_17`` is the same path at ``258c7540c03517def55d9a5aadfa9288af474e1b``, whose
tables carry v0.17 data and are not used here). The page itself names no version for its
numbers; it says "(NEW for v1.0) RTX 6000 Pro Blackwell Server Edition Benchmarks" and "Starting
with v0.19, testing was performed using the PyTorch backend". Version evidence: NVIDIA/TensorRT-LLM
pull request #7848, "[None][doc] Update Perf-Overview.md for release/1.0" (merged; reviewed
2025-09-19/20, CI run 2025-09-22), whose review thread on this file quotes the Llama 3.1 8B rows
of this commit digit for digit (e.g. "| 1000/2000 | 16,828 | 13,899 |", "| 20000/2000 | 1,804 |
1,351 |") and the author's note that "we added rtx 6000 tests with pp enabled"; pull request #7894
(2025-09-22) mirrors it to main ("add initial v1.0 data"). ``tensorrt_llm/version.py`` is not
stored at this commit (the stored copies are at other commits: 1.0.0rc4 at ``000a01de...``,
1.2.0rc2 at ``b35ac1b6...``), so the release is pinned by the pull request, not by the version
file. Date: September 2025 (release/1.0 documentation update; the exact tag date is not taken
from a stored source).

Stack: TensorRT-LLM 1.0 with the PyTorch backend (no engine build): ``trtllm-bench --tp $tp_size
--pp $pp_size --model $model_name throughput --backend pytorch --extra_llm_api_options`` with CUDA
graphs (``enable_padding: true``, batch sizes 1 .. 8192); ``kv_cache_free_gpu_mem_fraction`` 0.95
"in many cases", 0.90 or lower on OOM. Checkpoints are NVIDIA's ModelOpt-quantized ones:
``nvidia/Llama-3.3-70B-Instruct-FP4``, ``nvidia/Llama-3.1-405B-Instruct-FP4`` (FP4 columns,
NVFP4) and ``nvidia/Llama-3.1-8B-Instruct-FP8``, ``nvidia/Llama-3.3-70B-Instruct-FP8``,
``nvidia/Llama-3.1-405B-Instruct-FP8`` (FP8 columns). The release notes (``docs/source/
release-notes.md``, stored at the later commit ``001eaecea63dd6bdbfd02aed1bf8dc7fad567bd0``)
give the Release 1.0 base image as ``nvcr.io/nvidia/pytorch:25.06-py3``.

Method: offline maximum throughput ("a local inference client is fed requests at an infinite
rate"), synthetic prompts of exactly ``input_len`` tokens and exactly ``output_len`` output tokens
(``prepare_dataset.py token-norm-dist`` with stdev 0); 30,000 requests at 128/128, 3,000 at
128/2048, 2048/128, 1000/1000 and 500/2000, 1,500 at 128/4096, 1000/2000, 2048/2048 and 5000/500,
1,000 at 20000/2000. Metric: trtllm-bench's "Total Output Throughput (tokens/sec)" for the whole
group of ``tp`` GPUs (``output_tokens_per_s``, as in the v0.17 table).

GPUs: the page's hardware list names "H100 SXM 80GB (DGX H100)", "H200 SXM 141GB (DGX H200)",
"B200 180GB (DGX B200)", "GB200 192GB (GB200 NVL72)" and "RTX 6000 Pro Blackwell Server Edition";
the column headers say only B200 / GB200 / H200 / H100 with "TPn (FP4|FP8)". The RTX PRO 6000
tables are separate, one per model, with "N GPUs TPa,PPb" columns.

Transcribed: the dense models run with pure tensor parallelism only -- Llama 3.3 70B (B200 TP1
FP4, GB200 TP1 FP4, H200 TP1 FP8, H100 TP2 FP8, and the RTX PRO 6000 "1 GPUs TP1,PP1 (FP4)"
column), Llama 3.1 405B (B200 TP4 FP4, GB200 TP4 FP4, H200 TP8 FP8, H100 TP8 FP8) and Llama 3.1
8B (H200 TP1 FP8, H100 TP1 FP8): 110 cells. Llama 3.3 70B rows carry the catalog preset
``llama3.1-70b`` (Llama 3.3 70B has Llama 3.1 70B's architecture; the InferenceX importer maps
it the same way) and say so in their note.

Caveats: skipped -- the MoE models (Llama 4 Scout, Llama 4 Maverick, Qwen3-235B-A22B,
Qwen3-30B-A3B: the page runs MoE with ``enable_attention_dp`` and an ``--ep`` size it does not
state per column) and every RTX PRO 6000 column with PP > 1 (TP1,PP2/PP4/PP8 for Llama 3.3 70B,
TP1,PP8 for Llama 3.1 405B). KV-cache dtype is not stated on the page for either the FP8 or the
FP4 runs (the dense-model ``llm_options.yml`` it shows sets no ``kv_cache_config``; unlike the
v0.14 page there is no "KV cache set to FP8 with FP8 quantization" statement), so it is
``None``. Llama 3.3 70B FP8 was run at TP1 on H200 but TP2 on H100, so those two columns do not
form a same-configuration pair. A second stored version of this file (same values in every cell
read here) lacks the 128/128 rows and adds a DeepSeek R1 table; the 128/128 rows are from this
commit only. Empty cells: none in the columns transcribed.
"""

from __future__ import annotations

from typing import Final

from service.core.evidence.published._columns import Column, column_rows, with_checkpoints
from service.core.evidence.published.schema import PublishedTable, SourceFile

TABLE_ID: Final = "trtllm-perf-overview-v1.0"
COMMIT: Final = "00f37686aa854010d68bcbd0f4ab000221541ca6"

_GB200 = (
    "GB200 NVL72 as the page states ('GB200 192GB (GB200 NVL72)'); the catalog entry lists the "
    "part at 186 GB HBM3e"
)
COLUMNS: Final = (
    Column("B200 180GB (DGX B200)", "nvidia-b200", "fp4", None),
    Column("GB200 192GB (GB200 NVL72)", "nvidia-gb200", "fp4", None, gpu_assumption=_GB200),
    Column("H200 SXM 141GB (DGX H200)", "nvidia-h200-sxm", "fp8", None),
    Column("H100 SXM 80GB (DGX H100)", "nvidia-h100-sxm", "fp8", None),
    Column(
        "RTX 6000 Pro Blackwell Server Edition",
        "nvidia-rtx-pro-6000-blackwell-server",
        "fp4",
        None,
        note="the '1 GPUs TP1,PP1' column of the page's separate RTX 6000 Pro table",
    ),
)

# model tp input_len output_len | B200 FP4 | GB200 FP4 | H200 FP8 | H100 FP8 | RTX PRO 6000 Server FP4
# (output tokens/s of the tp-GPU group; "-" = not run at that tp)
DATA: Final = """
llama3.1-70b 1 128 128 11147 12189 3803 - 3264
llama3.1-70b 1 128 2048 9922 11309 4336 - 2422
llama3.1-70b 1 128 4096 6831 7849 2872 - 1349
llama3.1-70b 1 500 2000 7762 9028 3666 - 1856
llama3.1-70b 1 1000 1000 7007 7326 2909 - 1787
llama3.1-70b 1 1000 2000 6271 6513 2994 - 1594
llama3.1-70b 1 2048 128 1339 1450 442 - 393
llama3.1-70b 1 2048 2048 4783 5646 2003 - 1074
llama3.1-70b 1 5000 500 1459 1602 566 - 401
llama3.1-70b 1 20000 2000 665 755 283 - 142
llama3.1-70b 2 128 128 - - - 6378 -
llama3.1-70b 2 128 2048 - - - 6651 -
llama3.1-70b 2 128 4096 - - - 4199 -
llama3.1-70b 2 500 2000 - - - 5222 -
llama3.1-70b 2 1000 1000 - - - 4205 -
llama3.1-70b 2 1000 2000 - - - 4146 -
llama3.1-70b 2 2048 128 - - - 762 -
llama3.1-70b 2 2048 2048 - - - 3082 -
llama3.1-70b 2 5000 500 - - - 898 -
llama3.1-70b 2 20000 2000 - - - 437 -
llama3.1-405b 4 128 128 6281 6740 - - -
llama3.1-405b 4 128 2048 8020 8151 - - -
llama3.1-405b 4 128 4096 6345 6608 - - -
llama3.1-405b 4 500 2000 6244 6540 - - -
llama3.1-405b 4 1000 1000 5209 5389 - - -
llama3.1-405b 4 1000 2000 4933 5135 - - -
llama3.1-405b 4 2048 128 749 797 - - -
llama3.1-405b 4 2048 2048 4212 4407 - - -
llama3.1-405b 4 5000 500 1048 1112 - - -
llama3.1-405b 4 20000 2000 672 739 - - -
llama3.1-405b 8 128 128 - - 3814 3627 -
llama3.1-405b 8 128 2048 - - 5348 4340 -
llama3.1-405b 8 128 4096 - - 4741 3116 -
llama3.1-405b 8 500 2000 - - 4724 3994 -
llama3.1-405b 8 1000 1000 - - 3330 2919 -
llama3.1-405b 8 1000 2000 - - 3722 2895 -
llama3.1-405b 8 2048 128 - - 456 453 -
llama3.1-405b 8 2048 2048 - - 2948 2296 -
llama3.1-405b 8 5000 500 - - 650 610 -
llama3.1-405b 8 20000 2000 - - 505 345 -
llama3.1-8b 1 128 128 - - 27911 28312 -
llama3.1-8b 1 128 2048 - - 26221 22714 -
llama3.1-8b 1 128 4096 - - 18027 14325 -
llama3.1-8b 1 500 2000 - - 20770 17660 -
llama3.1-8b 1 1000 1000 - - 17744 15220 -
llama3.1-8b 1 1000 2000 - - 16828 13899 -
llama3.1-8b 1 2048 128 - - 3538 3450 -
llama3.1-8b 1 2048 2048 - - 12194 9305 -
llama3.1-8b 1 5000 500 - - 3902 3459 -
llama3.1-8b 1 20000 2000 - - 1804 1351 -
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
    title="TensorRT-LLM Perf Overview, throughput (v1.0)",
    kind="serving",
    publisher="NVIDIA",
    url=f"https://github.com/NVIDIA/TensorRT-LLM/blob/{COMMIT}/docs/source/performance/perf-overview.md",
    files=(SourceFile("NVIDIA/TensorRT-LLM", "docs/source/performance/perf-overview.md", COMMIT),),
    date="2025-09",
    date_note="TensorRT-LLM release/1.0 perf-overview update (NVIDIA/TensorRT-LLM PR #7848, reviewed "
    "2025-09-19/20; mirror PR #7894 2025-09-22), which quotes this commit's rows; the page says "
    "'(NEW for v1.0)' but names no version for its data, and version.py is not stored at this commit",
    engine="tensorrt-llm 1.0",
    stack="TensorRT-LLM 1.0, PyTorch backend (trtllm-bench throughput --backend pytorch, CUDA graphs "
    "with padding), NVIDIA ModelOpt FP8 / NVFP4 checkpoints",
    method="offline max throughput (all requests queued at once), fixed input/output lengths, total "
    "output tokens/s of the whole tp group",
    caveats="MoE models (attention DP, unstated EP size) and RTX PRO 6000 PP>1 columns not transcribed; "
    "KV-cache dtype not stated (FP8 or FP4); Llama 3.3 70B FP8 ran at TP1 on H200 but TP2 on H100 "
    "(no same-configuration pair); Llama 3.3 70B mapped to the llama3.1-70b preset",
    rows=with_checkpoints(
        column_rows(TABLE_ID, DATA, COLUMNS, workload="llm-serve-offline", metric="output_tokens_per_s"),
        CHECKPOINTS,
    ),
)
