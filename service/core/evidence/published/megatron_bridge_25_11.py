"""NeMo / Megatron-Bridge pre-training performance, NeMo 25.11 container (GB300, GB200, B200, H100).

Source: ``docs/performance-summary.md`` in NVIDIA-NeMo/Megatron-Bridge at commit
``00b7660be0254ac6f95f44164ddd0c3e9cc798ed``, section "25.11 NeMo Container / Pre-Training
Performance" (published as the NeMo Framework "Performance Summary",
https://docs.nvidia.com/nemo-framework/user-guide/latest/performance/performance-summary.html).
Date: the 25.11 NeMo container (2025-11); the stored copy carries no commit date.

Stack: NeMo Framework container 25.11 (Megatron-Bridge / Megatron-Core, Transformer Engine), the
performance recipes of ``scripts/performance`` in that repository. One container for every system.

Method: multi-GPU pre-training (8 to 1,024 GPUs, clearly labelled by ``gpu_count``), tokens/s per
GPU and model TFLOP/s per GPU as published. Each system uses its own tuned parallel layout and
micro-batch (kept per row: ``batch_size`` is the micro-batch MBS, ``tp`` / ``pp`` the tensor /
pipeline sizes, the rest -- GBS, CP, VP, EP, gradient-accumulation steps, FSDP -- is in the note).
Precision "FP8-CS" is FP8 with current (per-tensor) scaling (``fp8``); "FP8-MX" is MXFP8 block
scaling (``mxfp8``), given in parentheses for some Blackwell rows; "BF16" is ``bf16``.

Rows kept: the dense Llama models (Llama 3 8B / 70B, Llama 3.1 405B) and the MoE models GPT-OSS
120B and Qwen3-30B-A3B. Left out: DeepSeek-V3 (MLA attention, refused by the estimator) and
Qwen3-235B-A22B (the DGX-H100 row is missing a cell, so its columns cannot be assigned).

GPUs: "DGX-H100" (H100 SXM5, ``nvidia-h100-sxm``), "DGX-B200" (``nvidia-b200``), "DGX-GB200" and
"DGX-GB300" (Grace-Blackwell; not in the catalog, slug ``None``).

Caveats: layouts differ per system (e.g. Llama 3 8B uses FSDP with MBS 1 on H100, DDP with MBS 2 on
Blackwell), so cross-GPU ratios include recipe tuning; MoE rows "force-balance the token
distribution among experts" (page note).
"""

from __future__ import annotations

from typing import Final

from service.core.evidence.published.schema import PublishedRow, PublishedTable, SourceFile

TABLE_ID: Final = "nemo-megatron-bridge-pretrain-25.11"

SYSTEMS: Final[dict[str, tuple[str, str | None]]] = {
    "DGX-GB300": ("GB300", None),
    "DGX-GB200": ("GB200", None),
    "DGX-B200": ("B200", "nvidia-b200"),
    "DGX-H100": ("H100 SXM5", "nvidia-h100-sxm"),
}
MODELS: Final[dict[str, str]] = {
    "LLAMA3_8B": "llama3-8b",
    "LLAMA3_70B": "llama3-70b",
    "LLAMA3.1_405B": "llama3.1-405b",
    "GPT OSS 120B": "openai/gpt-oss-120b",
    "Qwen3_30B_a3B": "Qwen/Qwen3-30B-A3B",
}
PRECISION: Final[dict[str, str]] = {"FP8-CS": "fp8", "FP8-MX": "mxfp8", "BF16": "bf16"}

# system | model | #GPUs | precision | GBS | MBS | seq | FSDP | TP | PP | CP | VP | EP | GA |
# tokens/s/GPU | model TFLOP/s/GPU -- verbatim cells of the page; "a (b)" = FP8-CS (FP8-MX)
DATA: Final = """
DGX-GB300|LLAMA3_8B|8|FP8-CS (FP8-MX)|128|2|8192|0|1|1|1|n/a|1|8|37556 (36108)|1933 (1858)
DGX-GB300|LLAMA3_70B|64|FP8-CS|256|2|8192|1|1|1|1|1|1|2|4520|2030
DGX-GB300|LLAMA3.1_405B|256|FP8-CS|1536|1|8192|0|2|8|2|4|1|192|999|2522
DGX-GB300|GPT OSS 120B|64|BF16|1280|2|8192|0|1|1|1|1|64|10|18347|565
DGX-GB300|Qwen3_30B_a3B|8|FP8-MX|512|4|4096|0|1|1|1|1|8|16|28934|666
DGX-GB200|LLAMA3_8B|8|FP8-CS (FP8-MX)|128|2|8192|0|1|1|1|n/a|1|8|31508 (29789)|1622 (1533)
DGX-GB200|LLAMA3_70B|64|FP8-CS|256|2|8192|1|1|1|1|1|1|2|4312|1937
DGX-GB200|LLAMA3.1_405B|256|FP8-CS|1536|1|8192|0|4|16|1|4|1|384|813|2053
DGX-GB200|GPT OSS 120B|64|BF16|1280|1|8192|0|1|1|1|1|64|20|15876|488
DGX-GB200|Qwen3_30B_a3B|8|FP8-MX|512|4|4096|0|1|1|1|1|8|16|23766|547
DGX-B200|LLAMA3_8B|8|FP8-CS (FP8-MX)|128|2|8192|0|1|1|1|n/a|1|8|30624 (29521)|1576 (1519)
DGX-B200|LLAMA3.1_405B|128|FP8-CS (FP8-MX)|64|1|8192|0|4|8|2|8|1|32|661 (624)|1667 (1576)
DGX-B200|GPT OSS 120B|64|BF16|512|4|4096|0|1|1|1|1|8|2|8213|223
DGX-B200|Qwen3_30B_a3B|8|FP8-MX|512|1|4096|0|1|1|1|1|8|64|9299|214
DGX-H100|LLAMA3_8B|8|FP8-CS|128|1|8192|1|1|1|1|n/a|1|16|14451|744
DGX-H100|LLAMA3_70B|64|FP8-CS|128|1|8192|0|4|8|1|5|1|64|1602|719
DGX-H100|LLAMA3.1_405B|1024|FP8-CS|512|1|8192|0|8|8|2|8|1|64|292|737
DGX-H100|GPT OSS 120B|64|BF16|512|4|4096|0|1|4|1|1|8|2|5630|153
DGX-H100|Qwen3_30B_a3B|16|FP8-CS|512|2|4096|0|1|2|1|24|8|32|5275|121
"""


def _split(cell: str) -> list[str]:
    """'37556 (36108)' -> ['37556', '36108']; 'FP8-CS (FP8-MX)' -> ['FP8-CS', 'FP8-MX']."""
    return [p.strip(" ()") for p in cell.split("(")]


def _rows() -> tuple[PublishedRow, ...]:
    rows: list[PublishedRow] = []
    for line in DATA.strip().splitlines():
        (system, model, n, prec, gbs, mbs, seq, fsdp, tp, pp, cp, vp, ep, ga, tok, tflops) = line.split("|")
        name, slug = SYSTEMS[system]
        precs, toks, flops = _split(prec), _split(tok), _split(tflops)
        if not (len(precs) == len(toks) == len(flops)):
            raise ValueError(f"precision / value count mismatch: {line!r}")
        config = f"{system}; GBS {gbs}, MBS {mbs}, FSDP {fsdp}, TP {tp}, PP {pp}, CP {cp}, VP {vp}, EP {ep}, GA {ga}"
        for p, t, f in zip(precs, toks, flops, strict=True):
            for metric, value in (("tokens_per_s_per_gpu", t), ("model_tflops_per_gpu", f)):
                rows.append(
                    PublishedRow(
                        table_id=TABLE_ID,
                        gpu_name=name,
                        slug=slug,
                        workload="llm-pretrain",
                        model=MODELS[model],
                        precision=PRECISION[p],
                        metric=metric,
                        value=float(value),
                        gpu_count=int(n),
                        batch_size=int(mbs),
                        seq_len=int(seq),
                        tp=int(tp),
                        pp=int(pp),
                        note=f"{config}; published precision {p}",
                    )
                )
    return tuple(rows)


TABLE: Final = PublishedTable(
    id=TABLE_ID,
    title="NeMo Framework performance summary: pre-training, NeMo 25.11 container",
    kind="training",
    publisher="NVIDIA",
    url="https://github.com/NVIDIA-NeMo/Megatron-Bridge/blob/00b7660be0254ac6f95f44164ddd0c3e9cc798ed/"
    "docs/performance-summary.md",
    files=(
        SourceFile(
            "NVIDIA-NeMo/Megatron-Bridge",
            "docs/performance-summary.md",
            "00b7660be0254ac6f95f44164ddd0c3e9cc798ed",
        ),
    ),
    date="2025-11",
    date_note="section '25.11 NeMo Container' (container release month); no commit date in the stored copy",
    engine="nemo 25.11 (megatron-core)",
    stack="NeMo Framework container 25.11 (Megatron-Bridge, Megatron-Core, Transformer Engine)",
    method="multi-GPU pre-training with per-system tuned layouts; tokens/s/GPU and model TFLOP/s/GPU",
    caveats="multi-GPU only (8..1024 GPUs); layouts and micro-batches differ per system; GB200/GB300 not "
    "in the catalog; DeepSeek-V3 and Qwen3-235B rows left out",
    rows=_rows(),
)
