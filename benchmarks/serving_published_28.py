"""Published figures for issue 28's features, each with its source and setup, and what the
serving model answers for the same setup (``benchmarks/validate_serving.py`` section 6).

A figure is a fit decision (does the model fit on these GPUs, as a deployment guide states),
a memory figure, or a throughput figure. Only figures whose setup states every input the model
needs are scored; the others are listed with what is missing (``pending``), never scored on a
guessed input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from service.core.catalog.models import DecoderSpec, get_model
from service.core.catalog.specs import GpuSpec
from service.core.estimation.memory import InferenceConfig, estimate_inference, weight_bytes
from service.core.estimation.serving import serve_concurrency


@dataclass(frozen=True, slots=True)
class Published:
    feature: str  # "MLA/large MoE", "FP4", "engine sglang", "speculative decoding", "prefix caching"
    claim: str
    source: str
    kind: str  # "fit", "memory_gb_below", "tokens_per_s", "pending"
    value: float | bool | None
    setup: dict[str, Any]
    missing: str = ""


FIGURES: tuple[Published, ...] = (
    Published(
        "MLA/large MoE",
        "DeepSeek-V3 FP8 fits on 8 x H200",
        "https://docs.sglang.io/docs/basic_usage/deepseek_v3.md (recommended settings: FP8 on 8 x H200); "
        "https://docs.vllm.ai/projects/recipes/en/latest/DeepSeek/DeepSeek-V3.html (8xH200 with fp8)",
        "fit",
        True,
        {"model": "deepseek-v3", "gpu": "nvidia-h200-sxm", "tp": 8, "quant": "fp8"},
    ),
    Published(
        "MLA/large MoE",
        "DeepSeek-V3 FP8 needs 2 x 8 x H100 (does not fit on 8)",
        "https://docs.sglang.io/docs/basic_usage/deepseek_v3.md (FP8: 2 x 8 x H100/800/20)",
        "fit",
        False,
        {"model": "deepseek-v3", "gpu": "nvidia-h100-sxm", "tp": 8, "quant": "fp8"},
    ),
    Published(
        "MLA/large MoE",
        "DeepSeek-V3 BF16 needs 2 x 8 x H200 (does not fit on 8)",
        "https://docs.sglang.io/docs/basic_usage/deepseek_v3.md (BF16: 2 x 8 x H200)",
        "fit",
        False,
        {"model": "deepseek-v3", "gpu": "nvidia-h200-sxm", "tp": 8, "quant": "none"},
    ),
    Published(
        "FP4",
        "DeepSeek-R1 NVFP4 serves on 4 x B200",
        "https://docs.vllm.ai/projects/recipes/en/latest/DeepSeek/DeepSeek-V3.html (4xB200 with fp4); "
        "https://docs.sglang.io/docs/basic_usage/deepseek_v3.md (NVFP4: 8, 4 x B200)",
        "fit",
        True,
        {"model": "deepseek-r1", "gpu": "nvidia-b200", "tp": 4, "quant": "nvfp4"},
    ),
    Published(
        "FP4",
        "gpt-oss-120b (MXFP4) fits into a single 80 GB GPU",
        "https://huggingface.co/openai/gpt-oss-120b (model card: fits into a single 80GB GPU, H100)",
        "fit",
        True,
        {"model": "gpt-oss-120b", "gpu": "nvidia-h100-sxm", "tp": 1, "quant": "mxfp4"},
    ),
    Published(
        "FP4",
        "gpt-oss-20b (MXFP4) runs within 16 GB of memory",
        "https://huggingface.co/openai/gpt-oss-20b (model card: runs within 16GB of memory)",
        "memory_gb_below",
        16.0,
        {"model": "gpt-oss-20b", "quant": "mxfp4"},
    ),
    Published(
        "engine sglang",
        "SGLang, Llama-3.1-8B-Instruct, MT-Bench, 1 x H100, no speculation: 158.34 tokens/s",
        "https://docs.sglang.io/advanced_features/speculative_decoding.html (performance highlights)",
        "tokens_per_s",
        158.34,
        {
            "model": "llama3.1-8b",
            "gpu": "nvidia-h100-sxm",
            "engine": "sglang",
            "input_len": 128,
            "output_len": 512,
        },
        "MT-Bench prompt/answer lengths assumed 128 / 512 tokens (the page does not state them)",
    ),
    Published(
        "speculative decoding",
        "SGLang + EAGLE-2, same setup: 244.10 tokens/s",
        "https://docs.sglang.io/advanced_features/speculative_decoding.html",
        "pending",
        244.10,
        {},
        "the acceptance rate (or acceptance length) of the run is not stated",
    ),
    Published(
        "speculative decoding",
        "SGLang + EAGLE-3, same setup: 373.25 tokens/s",
        "https://docs.sglang.io/advanced_features/speculative_decoding.html",
        "pending",
        373.25,
        {},
        "the acceptance rate (or acceptance length) of the run is not stated",
    ),
)


def _cfg(s: dict[str, Any]) -> InferenceConfig:
    m = get_model(s["model"])
    assert isinstance(m, DecoderSpec)
    return InferenceConfig(
        model=m,
        quant_method=s.get("quant", "none"),
        engine=s.get("engine", "vllm"),
        tensor_parallel=s.get("tp", 1),
        input_len=s.get("input_len", 1024),
        output_len=s.get("output_len", 256),
    )


def predict(p: Published, gpus: dict[str, GpuSpec]) -> float | bool | None:
    """The model's answer for the figure's setup (None for a pending figure)."""
    s = p.setup
    if p.kind == "fit":
        gpu = gpus[s["gpu"]]
        mem = estimate_inference(_cfg(s))
        return bool(mem.fits(gpu.fit_memory_bytes or 0))
    if p.kind == "memory_gb_below":
        c = _cfg(s)
        return weight_bytes(c.model, c.weight_format) / 1e9  # the weights alone: the card's claim
    if p.kind == "tokens_per_s":
        return 1.0 / serve_concurrency(_cfg(s), gpus[s["gpu"]]).tpot_s
    return None


def report(gpus: dict[str, GpuSpec], out: dict[str, Any]) -> None:
    print("\n6. issue 28 features: published figures (source, setup) vs the model")
    rows = []
    for p in FIGURES:
        got = predict(p, gpus)
        if p.kind == "fit":
            verdict = "match" if got == p.value else "MISMATCH"
        elif p.kind == "memory_gb_below":
            verdict = "match" if isinstance(got, float) and got < float(p.value or 0) else "MISMATCH"
        elif p.kind == "tokens_per_s" and isinstance(got, float):
            verdict = f"error {got / float(p.value or 1) - 1:+.1%}"
        else:
            verdict = f"pending: {p.missing}"
        shown = f"{got:.1f}" if isinstance(got, float) else str(got)
        print(f"   [{p.feature}] {p.claim}\n      model: {shown}  -> {verdict}\n      source: {p.source}")
        if p.missing and p.kind != "pending":
            print(f"      note: {p.missing}")
        rows.append(
            {"feature": p.feature, "claim": p.claim, "source": p.source, "model": got, "verdict": verdict}
        )
    out["issue28"] = rows
