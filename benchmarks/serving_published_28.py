"""Published figures for issue 28's features, each with its source and setup, and what the
serving model answers for the same setup (``benchmarks/validate_serving.py`` section 6).

A figure is a fit decision (does the model fit on these GPUs, as a deployment guide states),
a memory figure, or a throughput figure. Only figures whose setup states every input the model
needs are scored; the others are listed with what is missing (``pending``), never scored on a
guessed input.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from service.core.catalog.models import DecoderSpec, get_model
from service.core.catalog.specs import GpuSpec
from service.core.estimation.memory import InferenceConfig, estimate_inference, weight_bytes
from service.core.estimation.serving import serve_concurrency
from service.core.estimation.serving_lora import lora_slot_elements


@dataclass(frozen=True, slots=True)
class Published:
    feature: str  # "MLA/large MoE", "FP4", "engine sglang", "speculative decoding", "multi-LoRA", ...
    claim: str
    source: str
    kind: str  # "fit", "memory_gb_below", "tokens_per_s", "lora_adapter_bytes", "kv_prompt_bytes", ...
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
        "DeepSeek-V3 MTP (one drafted token, acceptance 85-90 %): 1.8x the decoding TPS",
        "DeepSeek-V3 Technical Report, arXiv:2412.19437, section 5.4.3 'Multi-Token Prediction Evaluation' "
        "('the acceptance rate of the second token prediction ranges between 85% and 90% ... 1.8 times TPS'), "
        "read 2026-12-04",
        "spec_speedup",
        1.8,
        {
            "model": "deepseek-v3",
            "gpu": "nvidia-h200-sxm",
            "tp": 8,
            "quant": "fp8",
            "engine": "sglang",
            "input_len": 1024,
            "output_len": 1024,
            "batch": 1,
            "method": "mtp",
            "draft_tokens": 1,
            "acceptance_rate": 0.875,
        },
        "the report states neither the GPU nor the batch: 8 x H200 (SGLang's DeepSeek guide), 1 in flight, "
        "1,024 / 1,024 tokens and the range's middle (0.875) assumed; at 32 in flight the model answers 1.36x "
        "(-24 %)",
    ),
    Published(
        "speculative decoding",
        "SGLang DeepSeek-V3 MTP on H200 TP8: decoding 1.8x at batch 1, 1.5x at batch 32",
        "https://docs.sglang.io/docs/basic_usage/deepseek_v3.md (Multi-token Prediction), read 2026-12-04",
        "pending",
        1.8,
        {},
        "the acceptance rate (or acceptance length) of the run is not stated (3 draft steps, top-k 1)",
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
    *(
        Published(
            "speculative decoding",
            f"TensorRT-LLM N-Gram (k={k}, v={v}), Llama-4-Scout FP8 on 8 x B200 TP8, batch {batch}, second turn of "
            f"Magpie conversations (accepted length 1.66): {fig:.2%} end-to-end speed-up",
            "NVIDIA TensorRT-LLM tech blog 7 'N-Gram Speculative Decoding in TensorRT LLM', "
            "https://github.com/NVIDIA/TensorRT-LLM/blob/main/docs/source/blogs/tech_blog/"
            "blog7_NGram_performance_Analysis_And_Auto_Enablement.md (setup: 8 x B200, Llama-4-Scout-17B-16E FP8, "
            "TP 8; AL table 'k v AL Turn2'; 'k = 3, v = 5 delivers 96.13% of speed-up with single batch and 63.99% "
            "... with batch size 4. With batch size 32 and N-Gram k = 5, v = 3, the speed up is 33.06%'), "
            "read 2026-12-04",
            "spec_speedup",
            1.0 + fig,
            {
                "model": "llama4-scout",
                "gpu": "nvidia-b200",
                "tp": 8,
                "quant": "fp8",
                "engine": "tensorrt-llm",
                "input_len": 1024,
                "output_len": 512,
                "batch": batch,
                "method": "ngram",
                "draft_tokens": v,
                "accepted_length": 1.66,
            },
            f"mean accepted length 1.66 (the blog's table, k={k} v={v}, turn 2) converted to a per-token acceptance "
            f"with tau = (1 - a^(v+1)) / (1 - a), v = {v} drafted tokens; the blog states no prompt/answer lengths "
            "(1,024 / 512 assumed) and its speed-up is end-to-end runtime, scored here as decode tokens/s (prefill "
            "is a small share at these lengths); the blog's 'k' (n-gram match size) is not an input of the model"
            + (
                "; a speed-up above the accepted length (1.96 > 1.66) is more than any verify step that costs "
                "time can give"
                if 1.0 + fig > 1.66
                else ""
            ),
        )
        for k, v, batch, fig in ((3, 5, 1, 0.9613), (3, 5, 4, 0.6399), (5, 3, 32, 0.3306))
    ),
)


PREFIX_FIGURES: tuple[Published, ...] = (
    Published(
        "prefix caching",
        "TensorRT-LLM KV cache early reuse: system-prompt TTFT up to 5x faster (H100)",
        "https://developer.nvidia.com/blog/5x-faster-time-to-first-token-with-nvidia-tensorrt-llm-kv-cache-early-reuse/ "
        "('can significantly accelerate inference for use cases requiring system prompts by up to 5x'), "
        "read 2026-12-04",
        "pending",
        5.0,
        {},
        "the text read states neither the model nor the system-prompt / prompt lengths nor the concurrency "
        "(the setup is in the figures only); an 'up to' figure",
    ),
    Published(
        "prefix caching",
        "SGLang HiCache + Mooncake, DeepSeek-R1-671B, PD-disaggregated: cache hits cut TTFT by 84 % vs recompute",
        "https://lmsys.org/blog/2025-09-10-sglang-hicache (Ant Group quote), read 2026-12-04",
        "pending",
        1.0 / (1.0 - 0.84),
        {},
        "neither the GPU, the prompt lengths nor the share of each prompt that hit is stated (in-house online "
        "requests)",
    ),
)
"""Prefix caching: the TGI v3 runs (``PREFIX_TGI_FIGURES``) and the vLLM PR threads
(``PREFIX_VLLM_FIGURES``) are scored; the H200 probe (section 7) measures the prefix-cache term
itself."""


LORA_FIGURES: tuple[Published, ...] = (
    Published(
        "multi-LoRA",
        "Llama-2-7B LoRA r=16 on up/gate/down_proj: adapter_model.safetensors 92.8 MB (fp32, as PEFT saves it)",
        "https://huggingface.co/kaitchup/Llama-2-7B-oasstguanaco-adapter-1e (adapter_config.json: r 16, "
        "target_modules up_proj, gate_proj, down_proj; file listing: 92.8 MB), read 2026-12-04",
        "lora_adapter_bytes",
        92.8e6,
        {"model": "llama2-7b", "rank": 16, "targets": ("up_proj", "gate_proj", "down_proj")},
    ),
    Published(
        "multi-LoRA",
        "Llama-2-70B-chat LongLoRA r=8 on q/k/v/o_proj: adapter_model.bin 131 MB (fp32)",
        "https://huggingface.co/Yukang/Llama-2-70b-chat-longlora-32k (adapter_config.json: r 8, target_modules "
        "q_proj, k_proj, v_proj, o_proj; adapter_model.bin 131 MB; embeddings/norms are in trainable_params.bin), "
        "read 2026-12-04",
        "lora_adapter_bytes",
        131e6,
        {"model": "llama2-70b", "rank": 8, "targets": ("q_proj", "k_proj", "v_proj", "o_proj")},
    ),
    Published(
        "multi-LoRA",
        "Llama-2-7B LoRA r=256 on all 7 linears: adapter_model.bin 2,558,687,629 bytes (fp32)",
        "https://huggingface.co/lemonilia/LimaRP-Llama2-7B-v3-EXPERIMENT commit 5f1fe90 ('8-bit LoRA': "
        "adapter_config.json r 256, target_modules gate/k/up/o/v/down/q_proj; LFS pointer size 2558687629), "
        "read 2026-12-04",
        "lora_adapter_bytes",
        2558687629.0,
        {
            "model": "llama2-7b",
            "rank": 256,
            "targets": ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"),
        },
    ),
)
"""Multi-LoRA: the published adapter files check the slot arithmetic ``r (in + out)`` per targeted
linear (what an engine's LoRA slot holds per module, in 16-bit there, fp32 in these files). No
published multi-LoRA serving table states every input the time model needs (GPU, engine,
lengths, adapters in flight): the time terms are unvalidated."""


MOONCAKE = (
    "https://github.com/kvcache-ai/Mooncake README (Transfer Engine highlights: 'With 40 GB of data (equivalent "
    "to the size of the KVCache generated by 128k tokens in the LLaMA3-70B model), Mooncake Transfer Engine "
    "delivers up to 87 GB/s and 190 GB/s of bandwidth in 4x200 Gbps and 8x400 Gbps RoCE networks'), read 2026-12-04"
)

DISAGG_FIGURES: tuple[Published, ...] = (
    Published(
        "disaggregation",
        "KV cache of 128k tokens of LLaMA3-70B: 40 GB (the payload a disaggregated transfer moves)",
        MOONCAKE,
        "kv_prompt_bytes",
        40 * 2**30,
        {"model": "llama3-70b", "gpu": "nvidia-h100-sxm", "tp": 8, "tokens": 131072, "ranks": 8},
        "'40 GB' read as GiB (42.9e9 B): the README's figure is the KV size of 128k tokens, which is 40 GiB",
    ),
    Published(
        "disaggregation",
        "A 16K-token prompt of a 70B model: 640 MB of KV cache for one GPU out of eight",
        "KVDirect paper, page 4, as quoted in https://github.com/TensorDirect/KVDirect/issues/2, read 2026-12-04",
        "kv_prompt_bytes",
        640 * 2**20,
        {"model": "llama3-70b", "gpu": "nvidia-h100-sxm", "tp": 8, "tokens": 16384, "ranks": 1},
        "'640 MB' read as MiB (16384 x 40 KiB per GPU at TP 8)",
    ),
    Published(
        "disaggregation",
        "KV transfer over 8 x 400 Gbps RoCE per node: 190 GB/s (Mooncake Transfer Engine, 40 GB)",
        MOONCAKE,
        "transfer_gb_per_s",
        190.0,
        {"model": "llama3-70b", "gpu": "nvidia-h100-sxm", "tp": 8, "tokens": 131072, "network_gbps": 3200.0},
    ),
    Published(
        "disaggregation",
        "Disaggregated prefill does not improve throughput (1 prefill + 1 decode GPU vs 2 replicas)",
        "https://docs.vllm.ai/en/latest/features/disagg_prefill/ ('Disaggregated prefill DOES NOT improve "
        "throughput'), read 2026-12-04",
        "disagg_not_faster",
        True,
        {"model": "llama3.1-8b", "gpu": "nvidia-h100-sxm", "tp": 1, "input_len": 2048, "output_len": 256},
        "a direction, not a figure: the setup (Llama-3.1-8B, H100, 2,048 / 256 tokens, 32 in flight per "
        "decode replica) is ours",
    ),
    Published(
        "disaggregation",
        "KV transfer over 4 x 200 Gbps RoCE per node: 87 GB/s (Mooncake Transfer Engine, 40 GB)",
        MOONCAKE,
        "transfer_gb_per_s",
        87.0,
        {"model": "llama3-70b", "gpu": "nvidia-h100-sxm", "tp": 8, "tokens": 131072, "network_gbps": 800.0},
    ),
)
"""Disaggregation: the KV payload a prompt moves and the rate the network model moves it at
(``serving_disagg.kv_transfer_s``: the node's NICs at the engine's link efficiency, fitted on
TP all-reduces). No published disaggregated serving run found states every input the pools need
(GPU, engine, lengths, rate, pool sizes and link): end-to-end TTFT/TPOT are unvalidated."""


def _throughput_figures() -> tuple[Published, ...]:
    """The TensorRT-LLM perf-overview and InferenceX throughput rows
    (``benchmarks/serving_published_28_throughput.py``: sources and selection rules)."""
    from benchmarks.serving_published_28_throughput import (
        INFERENCEX,
        PERF_OVERVIEW,
        inferencex_rows,
        perf_overview_rows,
    )

    offline = tuple(
        Published(f, claim, PERF_OVERVIEW, "offline_tokens_per_gpu", v, s, note)
        for f, claim, v, s, note in perf_overview_rows()
    )
    fixed = tuple(
        Published(f, claim, INFERENCEX.format(run=s["run"]), "concurrency_tokens_per_gpu", v, s, note)
        for f, claim, v, s, note in inferencex_rows()
    )
    return offline + fixed


THROUGHPUT_FIGURES: tuple[Published, ...] = _throughput_figures()
"""MLA / large MoE and FP4 throughput: every row the two selection rules give, good or bad."""


# --------------------------------------------------------------------------------------------
# spec28: speculative decoding with a stated acceptance length (Spec-Bench) and prefix caching
# runs with and without the cache (TGI v3). Nothing here was fitted: all held out.
# --------------------------------------------------------------------------------------------

SPEC_BENCH = (
    "Spec-Bench leaderboard, https://github.com/hemingkx/Spec-Bench/blob/main/Leaderboard.md (commit 09244ff, "
    "'Leaderboard on A100': a single A100 80GB, greedy, FP16, batch size 1; speed-up 'Overall' and '#Mean "
    "Accepted Tokens' per decoding step); PLD settings from evaluation/inference_pld.py "
    "(draft_num_candidate_tokens=10), read 2026-12-04"
)

SPEC_BENCH_FIGURES: tuple[Published, ...] = tuple(
    Published(
        "speculative decoding",
        f"Spec-Bench, {name} on 1 x A100 80GB, batch 1, {label} (mean accepted {tau:.2f}): {fig:.2f}x",
        SPEC_BENCH,
        "spec_speedup",
        fig,
        {
            "model": model,
            "gpu": "nvidia-a100-sxm4-80gb",
            "engine": "vllm",
            "input_len": 256,
            "output_len": 512,
            "batch": 1,
            "method": method,
            "draft_tokens": k,
            "accepted_length": tau,
        },
        f"{name} (LLaMA-1 architecture) modelled as the {model} shape; the runs are Spec-Bench's own PyTorch "
        "loops (not a serving engine), scored as a ratio through the continuous-batching class: at batch 1 "
        "both steps stream the weights, so the loop's per-step host cost largely cancels; prompt/answer "
        "lengths (256 / 512) assumed (Spec-Bench's six tasks, answers up to 1,024 tokens)"
        + (
            f"; the accepted length is converted with a chain of {k} drafts (EAGLE-1 drafts a tree of depth "
            f"{k}: more tokens verified and a host-side tree build per step that the chain does not have)"
            if method == "eagle"
            else f"; PLD drafts up to {k} prompt tokens per step on the host (method ngram)"
        ),
    )
    for name, model, method, label, k, tau, fig in (
        ("Vicuna-7B-v1.3", "llama2-7b", "ngram", "PLD (prompt lookup)", 10, 1.73, 1.59),
        ("Vicuna-13B-v1.3", "llama2-13b", "ngram", "PLD (prompt lookup)", 10, 1.68, 1.48),
        ("Vicuna-7B-v1.3", "llama2-7b", "eagle", "EAGLE", 5, 3.61, 2.29),
        ("Vicuna-13B-v1.3", "llama2-13b", "eagle", "EAGLE", 5, 3.64, 2.34),
    )
)

TGI_V3 = (
    "https://github.com/huggingface/text-generation-inference/blob/main/docs/source/conceptual/chunking.md (commit 042791f) "
    "('TGI v3 overview', Raw results: '2nd run' vs '1st run', TGI time in s; 'we benchmarked engines with prefix "
    "caching on, so we are reporting the results of the 2nd run'); the long test is load_tests/long.js (10 "
    "virtual users, max_tokens 50) on govreport reports ('20 requests totalling 200k prompt tokens'), read "
    "2026-12-04"
)

PREFIX_TGI_FIGURES: tuple[Published, ...] = (
    Published(
        "prefix caching",
        "TGI v3, Llama-3.1-70B on 8 x H100, long test (20 x ~10k-token prompts, 50 tokens out, 10 in flight): "
        "1st run 12.1 s, 2nd run (prompts cached) 2.0 s: 6.05x",
        TGI_V3,
        "prefix_run_speedup",
        12.1 / 2.0,
        {
            "model": "llama3.1-70b",
            "gpu": "nvidia-h100-sxm",
            "tp": 8,
            "input_len": 10000,
            "output_len": 50,
            "batch": 10,
            "hit_rate": 0.99,
        },
        "TGI is not an engine of the model: scored with the continuous-batching (vllm) class; the second run "
        "replays the same prompts, so all but the chat template's last tokens hit (0.99 assumed); the ratio of "
        "the two runs' times is scored as the ratio of the steady-state request rates (20 requests, 10 in "
        "flight); the model's first run is 11.9 s (12.1 s published), its second 1.3 s (2.0 s published)",
    ),
    Published(
        "prefix caching",
        "TGI v3, Llama-3.1-8B on 4 x L4, long test: 1st run 47 s, 2nd run 3.2 s: 14.7x",
        TGI_V3,
        "prefix_run_speedup",
        47.0 / 3.2,
        {
            "model": "llama3.1-8b",
            "gpu": "nvidia-l4",
            "tp": 4,
            "input_len": 10000,
            "output_len": 50,
            "batch": 10,
            "hit_rate": 0.99,
        },
        "as above (TP 4 over PCIe); the first run on 4 x L4 carries a start-up cost the cache does not remove: "
        "the small test on the same GPUs (200 short prompts, nothing long to cache) takes 13 s first and "
        "4.8 s second; the model's first run is 26 s (47 s published), its second 3.7 s (3.2 s published)",
    ),
    Published(
        "prefix caching",
        "TGI v3, Llama-3.1-8B on 1 x L4, long test (10 requests): 1st run 49.8 s, 2nd run 53 s (no gain)",
        TGI_V3,
        "pending",
        49.8 / 53.0,
        {},
        "the cache did not hold the prompts (10 x ~10k tokens beside 16 GB of weights on a 24 GB GPU: the "
        "page's 'constrained kv-cache' caveat): the hit rate is a cache-capacity outcome the model does not "
        "derive (it takes the hit rate as an input)",
    ),
    Published(
        "prefix caching",
        "vLLM (--enable-prefix-caching) in the same runs: 8 x H100 70B long test 28.3 s -> 27.5 s, 4 x L4 "
        "50.3 s -> 12.5 s",
        TGI_V3,
        "pending",
        28.3 / 27.5,
        {},
        "the page does not say how much of each prompt vLLM's cache served in the second run (its 8 x H100 "
        "run gained 3 %, its 4 x L4 run 4x): no hit rate to score through",
    ),
)
"""Prefix caching, published: the TGI v3 runs are, beside the vLLM PR threads
(``PREFIX_VLLM_FIGURES``), the only published figures found (2026-12-04) that state GPU, model, prompt and output lengths, concurrency and the time with the cache cold
and warm; the hit rate of the warm run follows from replaying the same prompts. Both scored
ratios miss 20 % in opposite directions (+52 % on 8 x H100, -52 % on 4 x L4), while the
absolute times of three of the four runs lie within 35 %: see the notes."""


VLLM_1983 = (
    "https://github.com/vllm-project/vllm/pull/1983 ('[WIP] Prefix prompt cache', sleepcoo, 2023-12-08: 'For each "
    "request, the prefix length is 200, the input length is 30, and the output length is 50. model : llama 13B, "
    "A100 80G'; table Load (QPS) | Method | Requests/s | Average Latency per Req | First Token Time), read 2026-12-04"
)

VLLM_9668 = (
    "https://github.com/vllm-project/vllm/pull/9668 ('[V1] Prefix caching', comaniac, 2024-10-24: 'Model: "
    "neuralmagic/Meta-Llama-3-8B-Instruct-FP8, GPU: L40S'; benchmark_prefix_caching.py --num-prompts 200 "
    "--repeat-count 2 --input-length-range 256:512 on ShareGPT; 'this PR w/o cache' 17829.40 input tok/s, "
    "483.28 output tok/s, 8.54 s; 'this PR w. cache (49% hit rate)' 32149.17, 871.43, 4.86 s), read 2026-12-04"
)

_PR1983_TABLE = (  # QPS, metric, prefix cache, base (the PR's table, every cell pair)
    (10, "requests_per_s", 9.83, 9.80),
    (10, "latency_s", 1.97, 2.87),
    (10, "ttft_s", 0.29, 0.45),
    (15, "requests_per_s", 14.30, 13.24),
    (15, "latency_s", 2.98, 8.65),
    (15, "ttft_s", 0.39, 1.02),
    (25, "requests_per_s", 19.81, 14.08),
    (25, "latency_s", 6.46, 13.67),
    (25, "ttft_s", 0.84, 4.74),
)
_METRIC = {
    "requests_per_s": "requests/s",
    "latency_s": "average latency per request",
    "ttft_s": "first-token time",
}

PREFIX_VLLM_FIGURES: tuple[Published, ...] = (
    *(
        Published(
            "prefix caching",
            f"vLLM prefix cache (PR 1983), Llama-13B on 1 x A100 80G, 200-token shared prefix + 30 + 50 out, "
            f"{qps} QPS: {_METRIC[metric]} {cached:g} with the cache vs {base:g} without ({cached / base:.2f}x)",
            VLLM_1983,
            "prefix_rate_ratio",
            cached / base,
            {
                "model": "llama2-13b",
                "gpu": "nvidia-a100-sxm4-80gb",
                "input_len": 230,
                "output_len": 50,
                "hit_rate": 200 / 230,
                "qps": float(qps),
                "metric": metric,
            },
            "every cell pair of the PR's table is scored (the rule was fixed before any error was computed); "
            "'Llama 13B' modelled as the llama2-13b shape, 'A100 80G' as the SXM4 part, vLLM of December 2023 "
            "as the vllm class; requests/s is the offered rate while the model answers stable, else the "
            "model's capacity (every request queued, what an overloaded open-loop run reaches); latency is "
            "TTFT + 49 TPOT (means); a run the model answers as overloaded has no finite latency: a miss; "
            "the absolute scale is the 2023 engine's, not the model's (at 10 QPS the model answers a TTFT of "
            "0.08 s / 0.04 s without / with the cache, published 0.45 s / 0.29 s, latency 1.58 s / 1.09 s, "
            "published 2.87 s / 1.97 s; capacity 21.8 / 48.2 requests/s, published runs saturate at about 14 "
            "and 20): 15 QPS is past the engine's capacity without the cache but 70 % of the model's, and at "
            "25 QPS the model's cached run is not saturated",
        )
        for qps, metric, cached, base in _PR1983_TABLE
    ),
    Published(
        "prefix caching",
        "vLLM V1 prefix caching (PR 9668), Llama-3-8B-Instruct FP8 on 1 x L40S, 400 offline requests (200 "
        "ShareGPT prompts x 2, ~381 tokens in, ~10 out), 49 % hit rate: 8.54 s -> 4.86 s (1.76x)",
        VLLM_9668,
        "prefix_offline_speedup",
        8.54 / 4.86,
        {
            "model": "llama3-8b",
            "gpu": "nvidia-l40s",
            "quant": "fp8",
            "input_len": 381,
            "output_len": 10,
            "hit_rate": 0.49,
        },
        "the mean lengths follow from the table (input tok/s x time / 400 = 381, output 10.3); the hit rate is "
        "the run's (token-weighted, the model's definition); the ratio of the two runs' times is scored as the "
        "ratio of offline requests/s (every request queued); the model's runs take 6.60 s and 3.73 s (-23 %, "
        "-23 %)",
    ),
)
"""Prefix caching, vLLM PR threads (2026-12-04): the two threads found that state GPU, model,
lengths, the share of each prompt cached and the figure both with and without the cache. Every
cell pair of PR 1983's table is scored (rule fixed before the errors were computed); nothing was
fitted: all held out. PR 46938 (Qwen2.5-7B, 512-token shared prefix): the thread text read names no GPU
and no run without the cache: not used."""


def _prefix_rate_ratio(s: dict[str, Any], gpu: GpuSpec) -> float:
    """A metric with the cache over without at an offered rate of ``qps`` (``inf`` when the
    model answers either run as overloaded for a latency)."""
    from dataclasses import replace

    from service.core.estimation.serving import offline_throughput, serve_at_rate

    c = _cfg(s)
    runs = (replace(c, prefix_cache_hit_rate=s["hit_rate"]), c)
    vals = []
    for cfg in runs:
        r = serve_at_rate(cfg, gpu, s["qps"])
        if s["metric"] == "requests_per_s":
            vals.append(s["qps"] if r.stable else offline_throughput(cfg, gpu).requests_per_s)
        elif not r.stable:
            vals.append(math.inf)
        elif s["metric"] == "ttft_s":
            vals.append(r.ttft_mean_s)
        else:
            vals.append(r.ttft_mean_s + (s["output_len"] - 1) * r.tpot_mean_s)
    if math.isinf(vals[0]) or math.isinf(vals[1]):
        return math.inf
    return vals[0] / vals[1]


def _prefix_offline_speedup(s: dict[str, Any], gpu: GpuSpec) -> float:
    """Offline requests/s with a share ``hit_rate`` of each prompt cached over none."""
    from dataclasses import replace

    from service.core.estimation.serving import offline_throughput

    c = _cfg(s)
    warm = replace(c, prefix_cache_hit_rate=s["hit_rate"])
    return offline_throughput(warm, gpu).requests_per_s / offline_throughput(c, gpu).requests_per_s


def _prefix_run_speedup(s: dict[str, Any], gpu: GpuSpec) -> float:
    """Requests/s of a replica with a share ``hit_rate`` of each prompt cached over none, at a
    concurrency of ``batch`` (the time ratio of two runs of the same requests)."""
    from dataclasses import replace

    c = replace(_cfg(s), batch_size=s["batch"])
    warm = replace(c, prefix_cache_hit_rate=s["hit_rate"])
    return serve_concurrency(warm, gpu).requests_per_s / serve_concurrency(c, gpu).requests_per_s


def _kv_deployment(s: dict[str, Any], gpus: dict[str, GpuSpec]) -> Any:
    from service.core.estimation.serving_engines import deployment

    m = get_model(s["model"])
    assert isinstance(m, DecoderSpec)
    c = InferenceConfig(model=m, engine="vllm", tensor_parallel=s["tp"], input_len=s["tokens"], output_len=1)
    return deployment(c, gpus[s["gpu"]])


def _predict_disagg(p: Published, gpus: dict[str, GpuSpec]) -> float:
    """The KV bytes a prompt moves (``ranks`` of the TP group), or the network rate achieved."""
    from service.core.estimation.serving import CONTINUOUS_EFFICIENCIES
    from service.core.estimation.serving_disagg import kv_transfer_s
    from service.core.estimation.serving_disagg_layout import Disaggregation

    s = p.setup
    if p.kind == "disagg_not_faster":
        return _disagg_throughput_ratio(s, gpus)
    d = _kv_deployment(s, gpus)
    if p.kind == "kv_prompt_bytes":
        return float(s["tokens"] * d.kv_per_token * s["ranks"])
    dis = Disaggregation(s["tp"], s["tp"], gpus_per_node=s["tp"], network_gbps_per_node=s["network_gbps"])
    t = kv_transfer_s(d, dis, CONTINUOUS_EFFICIENCIES, float(s["tokens"]))
    return s["tokens"] * d.kv_per_token * s["tp"] / t / 1e9


def _disagg_throughput_ratio(s: dict[str, Any], gpus: dict[str, GpuSpec]) -> float:
    """Output tokens/s of 1 prefill + 1 decode GPU over 2 aggregated replicas, 32 in flight each."""
    from dataclasses import replace

    from service.core.estimation.serving import CONTINUOUS_EFFICIENCIES, deployment
    from service.core.estimation.serving_disagg import disagg_concurrency
    from service.core.estimation.serving_disagg_layout import Disaggregation

    c = replace(_cfg(s), batch_size=32)
    gpu = gpus[s["gpu"]]
    agg = 2 * serve_concurrency(c, gpu).output_tokens_per_s
    d = deployment(c, gpu)
    i, o = float(s["input_len"]), float(s["output_len"])
    dis = disagg_concurrency(d, CONTINUOUS_EFFICIENCIES, Disaggregation(1, 1), 32.0, i, o)
    return dis.requests_per_s * o / agg


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
    if p.kind in ("kv_prompt_bytes", "transfer_gb_per_s", "disagg_not_faster"):
        return _predict_disagg(p, gpus)
    if p.kind == "lora_adapter_bytes":
        m = get_model(s["model"])
        assert isinstance(m, DecoderSpec)
        return lora_slot_elements(m, s["rank"], 1, s["targets"]) * 4.0
    if p.kind == "tokens_per_s":
        return 1.0 / serve_concurrency(_cfg(s), gpus[s["gpu"]]).tpot_s
    if p.kind == "spec_speedup":
        return _spec_speedup(s, gpus[s["gpu"]])
    if p.kind in ("offline_tokens_per_gpu", "concurrency_tokens_per_gpu"):
        return _tokens_per_gpu(p, gpus)
    if p.kind == "prefix_run_speedup":
        return _prefix_run_speedup(s, gpus[s["gpu"]])
    if p.kind == "prefix_rate_ratio":
        return _prefix_rate_ratio(s, gpus[s["gpu"]])
    if p.kind == "prefix_offline_speedup":
        return _prefix_offline_speedup(s, gpus[s["gpu"]])
    return None


def _tokens_per_gpu(p: Published, gpus: dict[str, GpuSpec]) -> float | None:
    """Output tokens/s per GPU of one replica over ``tp`` GPUs: every request queued at once
    (``offline_throughput``, trtllm-bench throughput) or ``concurrency`` clients
    (``serve_concurrency``); None when the catalog lacks a figure the time model needs."""
    from service.core.errors import MissingFigure
    from service.core.estimation.estimate_inputs import KV_BYTES_PER_ELEMENT
    from service.core.estimation.serving import offline_throughput

    s = p.setup
    m = get_model(s["model"])
    assert isinstance(m, DecoderSpec)
    c = InferenceConfig(
        model=m,
        quant_method=s["quant"],
        engine=s["engine"],
        tensor_parallel=s["tp"],
        input_len=s["input_len"],
        output_len=s["output_len"],
        batch_size=s.get("concurrency", 1),
        expert_parallel=s["ep"],
        kv_cache_dtype=s["kv"],
        kv_cache_bytes_per_element=KV_BYTES_PER_ELEMENT.get(s["kv"], 0.0),
    )
    gpu = gpus[s["gpu"]]
    try:
        pt = offline_throughput(c, gpu) if p.kind == "offline_tokens_per_gpu" else serve_concurrency(c, gpu)
    except MissingFigure:
        return None
    return pt.output_tokens_per_s / s["tp"]


def _spec_speedup(s: dict[str, Any], gpu: GpuSpec) -> float:
    """Decoding tokens/s with speculation over without, at the same concurrency."""
    from dataclasses import replace

    c = replace(_cfg(s), batch_size=s["batch"])
    k = s["draft_tokens"]
    alpha = (
        s["acceptance_rate"] if "acceptance_rate" in s else acceptance_from_length(s["accepted_length"], k)
    )
    spec = replace(c, speculative=s["method"], draft_tokens=k, acceptance_rate=alpha)
    return serve_concurrency(c, gpu).tpot_s / serve_concurrency(spec, gpu).tpot_s


def acceptance_from_length(tau: float, k: int) -> float:
    """The per-token acceptance ``a`` whose chain of ``k`` drafts emits ``tau`` tokens per step on
    average, ``tau = (1 - a^(k+1)) / (1 - a)`` (``accepted_per_step``), solved by bisection: papers
    and blogs state the mean accepted length, the model takes the acceptance rate."""
    from service.core.estimation.serving_features import accepted_per_step

    if not 1.0 <= tau <= k + 1:
        raise ValueError(f"accepted length {tau} outside [1, {k + 1}] for {k} drafted tokens")
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if accepted_per_step(k, mid) < tau else (lo, mid)
    return (lo + hi) / 2


SCORED = (
    "tokens_per_s",
    "lora_adapter_bytes",
    "kv_prompt_bytes",
    "transfer_gb_per_s",
    "spec_speedup",
    "offline_tokens_per_gpu",
    "concurrency_tokens_per_gpu",
    "prefix_run_speedup",
    "prefix_rate_ratio",
    "prefix_offline_speedup",
)
"""Kinds scored as a relative error (the issue's target: within 20 %)."""


ALL_FIGURES: tuple[Published, ...] = (
    *FIGURES,
    *THROUGHPUT_FIGURES,
    *SPEC_BENCH_FIGURES,
    *PREFIX_FIGURES,
    *PREFIX_TGI_FIGURES,
    *PREFIX_VLLM_FIGURES,
    *LORA_FIGURES,
    *DISAGG_FIGURES,
)
"""Every figure section 6 prints, in order."""


def report(gpus: dict[str, GpuSpec], out: dict[str, Any]) -> None:
    print("\n6. issue 28 features: published figures (source, setup) vs the model")
    rows = []
    for p in ALL_FIGURES:
        got = predict(p, gpus)
        if p.kind == "fit":
            verdict = "match" if got == p.value else "MISMATCH"
        elif p.kind == "memory_gb_below":
            verdict = "match" if isinstance(got, float) and got < float(p.value or 0) else "MISMATCH"
        elif p.kind == "disagg_not_faster" and isinstance(got, float):
            verdict = f"{'match' if got <= 1.0 else 'MISMATCH'} (throughput ratio {got:.2f})"
        elif p.kind in SCORED and isinstance(got, float):
            verdict = f"error {got / float(p.value or 1) - 1:+.1%}"
        elif p.kind in SCORED:
            verdict = (
                f"pending: {p.setup.get('gpu')} lacks a catalog figure the time model needs (bandwidth, peak)"
            )
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
    out["issue28_by_feature"] = _summary(rows)
    out["issue28_tpot_offsets"] = _offsets(gpus)


def _offsets(gpus: dict[str, GpuSpec]) -> dict[str, list[float]]:
    """Measured minus modelled TPOT of the InferenceX rows, per platform (ms): what a fixed
    per-step cost the model lacks would have to be."""
    from benchmarks.serving_published_28_throughput import tpot_offsets

    by: dict[str, list[float]] = {}
    for name, _conc, measured, model in tpot_offsets(gpus):
        by.setdefault(name, []).append(round((measured - model) * 1e3, 1))
    print("   InferenceX DeepSeek-R1 rows, measured - modelled TPOT per decode step (ms, by concurrency):")
    for name, ms in by.items():
        print(f"      {name}: {', '.join(f'{v:+.1f}' for v in ms)}")
    return by


def _summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per feature: figures scored as a relative error, how many lie within the issue's 20 %,
    the errors, the fit/memory/direction checks matched, and how many are pending (printed, and
    the JSON summary)."""
    by: dict[str, dict[str, Any]] = {}
    for r in rows:
        f = by.setdefault(
            r["feature"],
            {"scored": 0, "within_20pct": 0, "errors": [], "pending": 0, "checks": 0, "matched": 0},
        )
        v = str(r["verdict"])
        if v.startswith("error "):
            err = float(v.removeprefix("error ").rstrip("%")) / 100.0
            f["scored"] += 1
            f["within_20pct"] += abs(err) <= 0.20
            f["errors"].append(round(err, 3))
        elif v.startswith("pending"):
            f["pending"] += 1
        else:  # a fit decision, a memory bound or a direction: match / MISMATCH
            f["checks"] += 1
            f["matched"] += v.startswith("match")
    print("   per feature (relative-error figures; the target is >= 3 within 20 %):")
    for name, f in by.items():
        errs = ", ".join(f"{e:+.0%}" for e in f["errors"]) or "-"
        print(
            f"      {name}: {f['within_20pct']}/{f['scored']} within 20 % ({errs}); "
            f"checks matched {f['matched']}/{f['checks']}; pending {f['pending']}"
        )
    return by
