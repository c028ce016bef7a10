"""The serving features a plan was sized with, as each engine's server takes them: multi-LoRA
(the adapter slots and rank the memory and TPOT counted), speculative decoding (the method and
draft tokens the TPOT counted) and a stated memory setting (the KV cache the concurrency was
sized on). Without them the deployed server is not the one that was sized: it cannot serve the
adapters, decodes at the speed without speculation, or holds fewer sequences (or none: DeepSeek-R1
FP8 on four B200s runs under SGLang only above its own 0.855)."""

from __future__ import annotations

import json

from service.core.deploy.plan import FILL, DeployOption, DeployPlan, ServingFeatures

__all__ = ["feature_args", "feature_fill_ins"]

VLLM_SPECULATIVE: dict[str, str] = {"eagle": "eagle", "mtp": "deepseek_mtp", "ngram": "ngram"}
"""vLLM ``--speculative-config`` methods (its speculative decoding docs)."""

SGLANG_SPECULATIVE: dict[str, str] = {"eagle": "EAGLE", "mtp": "NEXTN", "ngram": "NGRAM"}
"""SGLang ``--speculative-algorithm`` choices (its server arguments)."""


def lora_rank(f: ServingFeatures) -> int:
    """The largest adapter rank the engine must admit: vLLM takes a power of two from 8."""
    r = 8
    while r < f.lora_rank:
        r *= 2
    return r


MEMORY_FLAG: dict[str, str] = {
    "vllm": "--gpu-memory-utilization",
    "sglang": "--mem-fraction-static",
    "tensorrt-llm": "--kv_cache_free_gpu_memory_fraction",
}
"""Each server's flag for its memory setting (vLLM and SGLang server arguments, ``trtllm-serve``)."""


def feature_args(plan: DeployPlan, o: DeployOption) -> list[str]:
    """The option's engine's flags for the plan's LoRA slots, speculative decoding and memory
    setting."""
    f = plan.features
    engine = o.engine or "vllm"
    memory = (
        [MEMORY_FLAG[engine], f"{f.memory_fraction:g}"] if f.memory_fraction and engine in MEMORY_FLAG else []
    )
    if engine == "sglang":
        return _sglang(f) + memory
    if engine == "vllm":
        return _vllm(f) + memory
    if engine == "tensorrt-llm" and (f.lora_adapters or f.speculative):
        return ["--extra_llm_api_options", FILL, *memory]  # lora_config / speculative_config: a fill-in
    return memory  # TGI is not sized for them


def _vllm(f: ServingFeatures) -> list[str]:
    out: list[str] = []
    if f.lora_adapters:
        out += ["--enable-lora", "--max-loras", str(f.max_loras), "--max-lora-rank", str(lora_rank(f))]
    method = VLLM_SPECULATIVE.get(f.speculative or "")
    if method:
        config: dict[str, object] = {"method": method, "num_speculative_tokens": f.draft_tokens}
        if method == "eagle":
            config["model"] = FILL
        if method == "ngram":
            config["prompt_lookup_max"] = 4
        out += ["--speculative-config", json.dumps(config, separators=(",", ":"))]
    return out


def _sglang(f: ServingFeatures) -> list[str]:
    out: list[str] = []
    if f.lora_adapters:
        out += [
            "--enable-lora",
            "--max-loras-per-batch",
            str(f.max_loras),
            "--max-lora-rank",
            str(f.lora_rank),
        ]
    algorithm = SGLANG_SPECULATIVE.get(f.speculative or "")
    if algorithm:
        out += ["--speculative-algorithm", algorithm]
        if algorithm == "EAGLE":
            out += ["--speculative-draft-model-path", FILL]
        if algorithm != "NGRAM":
            out += ["--speculative-num-steps", str(f.draft_tokens), "--speculative-eagle-topk", "1"]
        out += ["--speculative-num-draft-tokens", str(f.draft_tokens + 1)]
    return out


def feature_fill_ins(plan: DeployPlan, o: DeployOption) -> list[tuple[str, str]]:
    """(name, what) of what the features need from the user."""
    f, out = plan.features, []
    if f.lora_adapters:
        out.append(
            (
                "LORA_ADAPTERS",
                f"the {f.lora_adapters} adapters (rank {f.lora_rank}): vLLM --lora-modules name=path ..., "
                "SGLang --lora-paths name=path ..., or loaded at run time",
            )
        )
    if f.speculative == "eagle":
        out.append(
            ("DRAFT_MODEL", "the EAGLE draft head trained for this model (the FILL-IN in the command)")
        )
    if o.engine == "tensorrt-llm" and (f.lora_adapters or f.speculative):
        out.append(
            (
                "EXTRA_LLM_API_OPTIONS",
                "a YAML file for trtllm-serve --extra_llm_api_options with the plan's lora_config / "
                f"speculative_config ({f.speculative or 'none'}, {f.draft_tokens} draft tokens)",
            )
        )
    return out
