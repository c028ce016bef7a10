"""``llm-infer``: prefill + greedy decode with a KV cache, engine "hf-transformers"; other
engines (``vllm``, ...) through a plug-in (:func:`engine_plugin`).

A manual loop over ``LlamaForCausalLM`` (what ``generate`` does, minus sampling and stopping
logic): prefill the batch of ``input_len`` random tokens with ``logits_to_keep=1`` and take the
argmax (TTFT = prefill + first token), then ``output_len - 1`` decode steps through the
transformers ``DynamicCache`` (TPOT = each step's time). One short warm-up generation, then
``repeats`` timed generations (default 3). TTFT percentiles are over the generations; TPOT
percentiles over every decode step of every generation. Output tokens/s = batch * output_len /
median generation time. All sequences of a batch have the same length (no padding).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from service.agent.suite.common import (
    Context,
    Skip,
    autocast,
    param_dtype,
    peak_memory,
    percentile,
    reset_peak,
    set_precision_flags,
    tokens,
)
from service.agent.suite.llm_common import build_model, llama_config

ENGINE_PLUGIN_GROUP = "gpu_advisor.llm_infer_engines"


def engine_plugin(name: str) -> Callable[[Context, dict[str, Any]], dict[str, Any]] | None:
    """The ``llm-infer`` runner for serving engine ``name`` (the workload's ``engine`` parameter,
    e.g. ``vllm``), or None. An operator with the engine installed registers a callable under
    the entry-point group :data:`ENGINE_PLUGIN_GROUP` with that name; it is called as
    ``runner(ctx, params)`` and returns the same result dict as :func:`run` (``status``, the
    ``ttft_ms_*`` / ``tpot_ms_*`` / ``output_tokens_per_s`` metrics, ``step_time_s``, peak memory
    -- ``batch_size`` requests in flight, ``input_len`` / ``output_len`` tokens each), plus
    ``extra.engine_version``. Its results are the engine's ``measured`` cells; the service never
    mixes them into the eager (hf-transformers) calibration."""
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENGINE_PLUGIN_GROUP):
        if ep.name == name:
            runner = ep.load()
            return runner if callable(runner) else None
    return None


def run(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    import torch

    precision = params["precision"]
    if params.get("quant_method", "none") != "none":
        raise Skip(f"quant_method {params['quant_method']} is not implemented by this agent version")
    engine = params.get("engine", "hf-transformers")
    if engine != "hf-transformers":
        plugin = engine_plugin(engine)
        if plugin is None:
            raise Skip(
                f"engine {engine} is not available: install a plug-in registering it under the "
                f"'{ENGINE_PLUGIN_GROUP}' entry-point group; this agent runs hf-transformers"
            )
        return plugin(ctx, params)
    bs = int(params["batch_size"])
    n_in = int(params["input_len"])
    n_out = int(params["output_len"])
    set_precision_flags(ctx, precision)
    dtype = param_dtype(precision)
    config = llama_config(
        ctx, ctx.options["architecture"], attention=params.get("attention", "sdpa"), max_len=n_in + n_out
    )
    config.use_cache = True
    model = build_model(ctx, config, dtype)
    model.eval()
    prompt = tokens(ctx, config.vocab_size, bs, n_in)
    ac = autocast(ctx, precision)

    def generate(out_len: int) -> tuple[float, list[float], float]:
        with torch.inference_mode(), ac:
            ctx.sync()
            t0 = time.perf_counter()
            out = model(input_ids=prompt, use_cache=True, logits_to_keep=1)
            nxt = out.logits[:, -1].argmax(-1, keepdim=True)
            past = out.past_key_values
            ctx.sync()
            ttft = time.perf_counter() - t0
            steps: list[float] = []
            for _ in range(out_len - 1):
                t1 = time.perf_counter()
                out = model(input_ids=nxt, past_key_values=past, use_cache=True)
                nxt = out.logits[:, -1].argmax(-1, keepdim=True)
                past = out.past_key_values
                ctx.sync()
                steps.append(time.perf_counter() - t1)
            total = time.perf_counter() - t0
            del out, past, nxt
        return ttft, steps, total

    generate(min(n_out, 4))
    reset_peak(ctx)
    e0 = ctx.energy_mj()
    ttfts: list[float] = []
    tpots: list[float] = []
    totals: list[float] = []
    for _ in range(ctx.repeats):
        ttft, steps, total = generate(n_out)
        ttfts.append(ttft)
        tpots.extend(steps)
        totals.append(total)
    e1 = ctx.energy_mj()
    alloc, reserved = peak_memory(ctx)
    if not tpots:
        raise Skip("output_len must be >= 2 to measure TPOT")
    median_total = statistics.median(totals)
    metrics = {
        "ttft_ms_p50": percentile(ttfts, 50) * 1e3,
        "ttft_ms_p99": percentile(ttfts, 99) * 1e3,
        "tpot_ms_p50": percentile(tpots, 50) * 1e3,
        "tpot_ms_p99": percentile(tpots, 99) * 1e3,
        "output_tokens_per_s": bs * n_out / median_total,
    }
    out: dict[str, Any] = {
        "status": "ok",
        "metrics": metrics,
        "step_time_s": median_total,
        "repeats": len(totals),
        "peak_allocated_bytes": alloc,
        "peak_reserved_bytes": reserved,
        "nvml_used_bytes": ctx.nvml_used_bytes(),
    }
    if e0 is not None and e1 is not None and e1 >= e0:
        out["extra"] = {"energy_per_generation_j": (e1 - e0) / 1000.0 / len(totals)}
    return out
