"""TensorRT-LLM v1.1 "Perf Overview": max-throughput tokens/s per GPU on B200, GB200, H200, H100, RTX PRO 6000.

Source: ``docs/source/developer-guide/perf-overview.md`` (the page moved from
``docs/source/performance/``) in NVIDIA/TensorRT-LLM at commit
``03e27c7d5ff0c6e89f8328838c0a8e64f1b34f9d``; a second stored version at
``585c756579dc4d01f21fc13c2f604cdb461ac4f0`` has the same cells in every table (it differs in prose:
``--config`` for ``--extra_llm_api_options``, a shorter table of contents). The page names no
version for its numbers. Version evidence: NVIDIA/TensorRT-LLM pull request #9960 "[None][chore]
Final mass integration of release/1.1" (merged; reviewed 2025-12-12), whose review thread on
``docs/source/developer-guide/perf-overview.md`` shows this page's "LLaMA v3.3 70B - RTX 6000 Pro
Blackwell Server Edition" table being added from release/1.1 digit for digit ("| 1000/1000 | 1,724 |
1,901 |", "| 32768/1024 | | 67 |"). The v1.0 page (``trtllm_perf_v1_0``) has different numbers and
sequence lengths; the 1.2 update (pull request #12098, 2026-03-11) adds B300 / GB300, which this page
lacks. Date: December 2025 (the release/1.1 integration into main; the 1.1 tag date is not taken
from a stored source).

Stack: TensorRT-LLM 1.1 with the PyTorch backend (no engine build). Dense models: ``trtllm-bench
--tp $tp_size --pp $pp_size --model $model_name throughput --dataset $dataset_file --backend
pytorch`` with an ``llm_options.yml`` of CUDA graphs only (``enable_padding: true``, batch sizes
1 .. 8192); ``--kv_cache_free_gpu_mem_fraction 0.95`` "in many cases", 0.90 or lower on OOM.
Checkpoints: ``nvidia/Llama-3.3-70B-Instruct-FP4`` (FP4 = NVFP4) and
``nvidia/Llama-3.3-70B-Instruct-FP8``.

Method: offline maximum throughput ("a local inference client is fed requests at an high rate / no
delay between messages"; "all requests are queued in rapid succession"), synthetic prompts of
exactly ``input_len`` tokens and exactly ``output_len`` output tokens (``prepare_dataset.py
token-norm-dist`` with stdev 0); 3,000 requests at 1024/1024, 1,500 at 8192/1024 and 1024/8192,
1,000 at 32768/1024 (1000/1000 is not in the page's request table). Metric: "Output Throughput per
GPU (tokens/sec/GPU)", trtllm-bench's "Per GPU Output Throughput" -- the tp group's output tokens/s
divided by its GPUs (``output_tokens_per_s_per_gpu``, unlike the group totals of the v0.x / v1.0
tables).

GPUs: the page's hardware list names "H100 SXM 80GB (DGX H100)", "H200 SXM 141GB (DGX H200)",
"B200 180GB (DGX B200)", "GB200 192GB (GB200 NVL72)" and "RTX 6000 Pro Blackwell Server Edition";
the column headers say B200 / GB200 / H200 / H100 with "TPn (FP4|FP8)"; the RTX PRO 6000 table is
separate, with "N GPUs TPa,PPb" columns.

Transcribed: the only dense model, LLaMA v3.3 70B, with pure tensor parallelism -- B200 TP1 FP4,
GB200 TP1 FP4, H200 TP2 FP8, H100 TP2 FP8 and the RTX PRO 6000 "1 GPUs TP1,PP1 (FP4)" column: 20
cells. Its rows carry the catalog preset ``llama3.1-70b`` (Llama 3.3 70B has Llama 3.1 70B's
architecture, as in the v1.0 table) and say so in their note.

Caveats: skipped -- every MoE model (DeepSeek R1 0528, GPT-OSS 120B / 20B, Llama 4 Maverick, Qwen3
235B A22B, Qwen3 30B A3B: their ``llm_options.yml`` enable attention DP and the runs use ``--ep``;
several columns are "DEPn"), and the RTX PRO 6000 "2 GPUs TP1,PP2" column of LLaMA v3.3 70B (PP > 1).
KV-cache dtype is not stated for the dense runs (their ``llm_options.yml`` sets none; only the
GPT-OSS and DeepSeek options set ``kv_cache_config: dtype: fp8``), so it is ``None``. Empty cells
are omitted (H100 TP2 has three).
"""

from __future__ import annotations

from typing import Final

from service.core.evidence.published._columns import Column, column_rows, with_checkpoints
from service.core.evidence.published.schema import PublishedTable, SourceFile

TABLE_ID: Final = "trtllm-perf-overview-v1.1"
PATH: Final = "docs/source/developer-guide/perf-overview.md"
COMMIT: Final = "03e27c7d5ff0c6e89f8328838c0a8e64f1b34f9d"
COMMIT_SAME_CELLS: Final = "585c756579dc4d01f21fc13c2f604cdb461ac4f0"

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

# model tp input_len output_len | B200 TP1 FP4 | GB200 TP1 FP4 | H200 TP2 FP8 | H100 TP2 FP8 |
# RTX PRO 6000 Server TP1 FP4   (output tokens/s per GPU; "-" = empty cell or not run at that tp)
DATA: Final = """
llama3.1-70b 1 1000 1000 6920 7769 - - 1724
llama3.1-70b 1 1024 1024 6842 7751 - - 1708
llama3.1-70b 1 1024 8192 3242 3805 - - -
llama3.1-70b 1 8192 1024 1362 1491 - - 296
llama3.1-70b 1 32768 1024 274 302 - - -
llama3.1-70b 2 1000 1000 - - 2587 2209 -
llama3.1-70b 2 1024 1024 - - 2582 - -
llama3.1-70b 2 1024 8192 - - 2009 - -
llama3.1-70b 2 8192 1024 - - 537 398 -
llama3.1-70b 2 32768 1024 - - 120 - -
"""

# (preset, precision) -> the checkpoint the page lists for LLaMA v3.3 70B
CHECKPOINTS: Final[dict[tuple[str, str], str]] = {
    ("llama3.1-70b", "fp4"): "nvidia/Llama-3.3-70B-Instruct-FP4",
    ("llama3.1-70b", "fp8"): "nvidia/Llama-3.3-70B-Instruct-FP8",
}


TABLE: Final = PublishedTable(
    id=TABLE_ID,
    title="TensorRT-LLM Perf Overview, throughput per GPU (v1.1)",
    kind="serving",
    publisher="NVIDIA",
    url=f"https://github.com/NVIDIA/TensorRT-LLM/blob/{COMMIT}/{PATH}",
    files=(
        SourceFile("NVIDIA/TensorRT-LLM", PATH, COMMIT),
        SourceFile("NVIDIA/TensorRT-LLM", PATH, COMMIT_SAME_CELLS),
    ),
    date="2025-12",
    date_note="release/1.1 final mass integration into main (NVIDIA/TensorRT-LLM PR #9960, reviewed "
    "2025-12-12), whose review thread quotes this page's RTX 6000 Pro table; the page names no "
    "version for its data",
    engine="tensorrt-llm 1.1",
    stack="TensorRT-LLM 1.1, PyTorch backend (trtllm-bench throughput --backend pytorch, CUDA graphs "
    "with padding), NVIDIA ModelOpt FP8 / NVFP4 checkpoints",
    method="offline max throughput (all requests queued at once), fixed input/output lengths, output "
    "tokens/s per GPU of the tp group",
    caveats="version pinned by the release/1.1 integration PR, not by the page; MoE models (attention "
    "DP / EP) and the RTX PRO 6000 PP2 column not transcribed; KV-cache dtype not stated; H200/H100 "
    "ran at TP2 and B200/GB200/RTX at TP1 (no FP4-FP8 same-tp pair); Llama 3.3 70B mapped to the "
    "llama3.1-70b preset",
    rows=with_checkpoints(
        column_rows(
            TABLE_ID, DATA, COLUMNS, workload="llm-serve-offline", metric="output_tokens_per_s_per_gpu"
        ),
        CHECKPOINTS,
    ),
)
