"""Serving-features probe for issue 28 (run on one CUDA GPU; the H200 lent to the project).

What prefix caching and speculative decoding change is the GPU work of one step; this probe
measures that work on a Llama-3-8B shape (random bf16 weights, SDPA, transformers'
``DynamicCache``), one JSON line per measurement in ``$OUT/serving-features-probe.jsonl``.
Every case gives the synchronised wall time (eager transformers: host launches included) and
the summed CUDA kernel time of one profiled repetition (the GPU work a CUDA-graph engine such as
vLLM runs, without host gaps).

Sections, each skipped when the time budget is spent:

1. ``verify``: one forward of ``t`` new tokens per sequence over a KV cache of ``ctx`` tokens,
   batch ``b``: ``t = 1`` is a decode step, ``t = k + 1`` the verification of ``k`` drafted
   tokens. b in {1, 8, 32}, ctx in {1024, 4096}, t in {1, 2, 3, 4, 6, 8}.
2. ``draft``: the same decode step for a one-layer model of the same width with the LM head (an
   EAGLE-class draft head's work): its share of the target's decode step.
3. ``lora``: the decode step (ctx 1024) with LoRA adapters on q/k/v/o of every layer, applied
   per sequence as a gathered batched matmul (``x @ A[idx] @ B[idx]``, what Punica's BGMV kernel
   does, in plain torch: not that kernel): b in {1, 8, 32}, distinct adapters in the batch
   n in {1, min(b, 8)}, rank r in {8, 64}; the same step without adapters beside it.
4. ``prefix``: batch-1 prefill of a ``p``-token prompt of which a share ``h`` is already in the
   KV cache (the prefix computed outside the timing, the cache cropped back after each run):
   p in {2048, 8192, 32768}, h in {0, 0.5, 0.9}.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from typing import Any

import torch
from probe_common import DEV, SMOKE, Probe, kernel_s, wall_s

PROBE = Probe(f"serving-features-probe-{os.environ.get('PROBE_ATTENTION', 'sdpa')}.jsonl", 420)
left, emit = PROBE.left, PROBE.emit
SHAPE = {"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
         "intermediate_size": 14336, "head_dim": 128}  # fmt: skip
VOCAB = 128256
if SMOKE:
    SHAPE = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
             "head_dim": 16}  # fmt: skip
    VOCAB = 512
LAYERS = 2 if SMOKE else 32
CTXS = (64, 128) if SMOKE else (1024, 4096)
BATCHES = (1, 2) if SMOKE else (1, 8, 32)
PROMPTS = (128, 256) if SMOKE else (2048, 8192, 32768)


ATTENTION = os.environ.get("PROBE_ATTENTION", "sdpa")
"""``sdpa``: transformers' own SDPA path (with a KV cache and more than one new token it builds
a mask and leaves the flash kernel); ``lower_right``: SDPA with a lower-right causal bias and
native GQA (``torch.nn.attention.bias.causal_lower_right``, ``enable_gqa``), which lets PyTorch
take the flash kernel as a serving engine's flash/paged attention does."""


def lower_right_attention(
    module: Any, query: Any, key: Any, value: Any, attention_mask: Any, scaling: Any = None, **_: Any
) -> tuple[Any, None]:
    """query ``[b, heads, q, d]``, key/value ``[b, kv_heads, kv, d]`` (the cache included): each
    new token sees every cached one and the new ones before it."""
    from torch.nn.attention.bias import causal_lower_right

    bias = causal_lower_right(query.shape[-2], key.shape[-2])
    out = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=bias, scale=scaling, enable_gqa=True
    )
    return out.transpose(1, 2).contiguous(), None


def register_attention() -> None:
    from transformers import AttentionInterface

    AttentionInterface.register("lower_right", lower_right_attention)
    try:  # no mask is built for it (the bias above replaces it)
        from transformers import AttentionMaskInterface

        AttentionMaskInterface.register("lower_right", lambda *a, **k: None)
    except ImportError:
        pass


def llama(layers: int, max_len: int) -> Any:
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=VOCAB, max_position_embeddings=max_len, rope_theta=500000.0,
                      tie_word_embeddings=False, attn_implementation=ATTENTION, use_cache=True,
                      num_hidden_layers=layers, **SHAPE)  # fmt: skip
    with torch.device(DEV):
        model = LlamaForCausalLM._from_config(cfg, dtype=torch.bfloat16)
    return model.eval()


def cache_of(model: Any, b: int, ctx: int) -> Any:
    """A DynamicCache holding ``ctx`` tokens of ``b`` sequences (filled by a real prefill)."""
    from transformers import DynamicCache

    cache = DynamicCache(config=model.config)
    with torch.inference_mode():
        for i in range(0, ctx, 4096):  # chunks: the prefill's activations stay small
            n = min(4096, ctx - i)
            ids = torch.randint(0, VOCAB, (b, n), device=DEV)
            model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1)
    return cache


def trim(cache: Any, keep: int) -> None:
    """Cut every layer of ``cache`` back to its first ``keep`` tokens (slicing the layers' key and
    value tensors: ``DynamicCache.crop`` changed meaning between transformers releases)."""
    for layer in cache.layers:
        layer.keys = layer.keys[..., :keep, :]
        layer.values = layer.values[..., :keep, :]


def step_case(model: Any, cache: Any, b: int, ctx: int, t: int) -> tuple[float, int, float]:
    """One forward of ``t`` new tokens per sequence after ``ctx`` cached ones, the cache cropped
    back to ``ctx`` after each run (so every run sees the same context)."""
    ids = torch.randint(0, VOCAB, (b, t), device=DEV)

    def fwd() -> None:
        with torch.inference_mode():
            model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=t)
        trim(cache, ctx)

    w = wall_s(fwd)
    n, k = kernel_s(fwd)
    return w, n, k


def verify_section() -> None:
    model = llama(LAYERS, 8192)
    for ctx in CTXS:
        for b in BATCHES:
            if left() < 20:
                emit({"section": "verify", "skipped": [b, ctx]})
                continue
            cache = cache_of(model, b, ctx)
            for t in (1, 2, 3, 4, 6, 8):
                w, n, k = step_case(model, cache, b, ctx, t)
                emit({"section": "verify", "model": "llama3-8b shape, random bf16 weights", "b": b,
                      "ctx": ctx, "t": t, "wall_s": w, "kernels": n, "kernel_s": k})  # fmt: skip
            del cache
            torch.cuda.empty_cache()
    del model
    torch.cuda.empty_cache()


def draft_section() -> None:
    head = llama(1, 8192)
    for ctx in CTXS:
        for b in BATCHES:
            if left() < 10:
                emit({"section": "draft", "skipped": [b, ctx]})
                continue
            cache = cache_of(head, b, ctx)
            w, n, k = step_case(head, cache, b, ctx, 1)
            emit({"section": "draft", "model": "one llama3-8b-shape layer + LM head (EAGLE-class head)",
                  "b": b, "ctx": ctx, "t": 1, "wall_s": w, "kernels": n, "kernel_s": k})  # fmt: skip
            del cache
    del head
    torch.cuda.empty_cache()


def add_lora(model: Any, n: int, r: int, b: int) -> list[Any]:
    """Forward hooks adding ``x @ A[idx] @ B[idx]`` on q/k/v/o of every layer, sequence ``i`` of
    the batch using adapter ``i % n`` (weights random bf16, kept on the GPU like resident
    adapters)."""
    idx = torch.arange(b, device=DEV) % n
    hooks = []
    for layer in model.model.layers:
        for proj in (
            layer.self_attn.q_proj,
            layer.self_attn.k_proj,
            layer.self_attn.v_proj,
            layer.self_attn.o_proj,
        ):
            a = torch.randn(n, proj.in_features, r, device=DEV, dtype=torch.bfloat16) * 0.01
            bb = torch.randn(n, r, proj.out_features, device=DEV, dtype=torch.bfloat16) * 0.01

            def hook(_m: Any, inp: Any, out: Any, a: Any = a, bb: Any = bb) -> Any:
                x = inp[0]
                return out + torch.bmm(torch.bmm(x, a[idx]), bb[idx])

            hooks.append(proj.register_forward_hook(hook))
    return hooks


def lora_section() -> None:
    model = llama(LAYERS, 8192)
    ctx = CTXS[0]
    for b in BATCHES:
        if left() < 20:
            emit({"section": "lora", "skipped": b})
            continue
        cache = cache_of(model, b, ctx)
        w, n, k = step_case(model, cache, b, ctx, 1)
        emit({"section": "lora", "b": b, "ctx": ctx, "adapters": 0, "rank": 0, "wall_s": w, "kernels": n,
              "kernel_s": k})  # fmt: skip
        for adapters in sorted({1, min(b, 8)}):
            for r in (8, 64):
                hooks = add_lora(model, adapters, r, b)
                w, n, k = step_case(model, cache, b, ctx, 1)
                for h in hooks:
                    h.remove()
                emit({"section": "lora", "b": b, "ctx": ctx, "adapters": adapters, "rank": r, "targets": "q,k,v,o",
                      "impl": "torch gather + bmm (BGMV-like), not Punica's kernel", "wall_s": w, "kernels": n,
                      "kernel_s": k})  # fmt: skip
        del cache
        torch.cuda.empty_cache()
    del model
    torch.cuda.empty_cache()


def prefix_case(model: Any, p: int, h: float) -> dict[str, Any]:
    cached = round(p * h)
    cache = cache_of(model, 1, cached) if cached else None
    ids = torch.randint(0, VOCAB, (1, p - cached), device=DEV)

    def prefill() -> None:
        from transformers import DynamicCache

        c = cache if cache is not None else DynamicCache(config=model.config)
        with torch.inference_mode():
            model(input_ids=ids, past_key_values=c, use_cache=True, logits_to_keep=1)
        if cache is not None:
            trim(cache, cached)

    w = wall_s(prefill, 0.5, 10)
    n, k = kernel_s(prefill)
    return {"section": "prefix", "model": "llama3-8b shape, random bf16 weights", "b": 1, "prompt": p,
            "hit_rate": h, "cached_tokens": cached, "wall_s": w, "kernels": n, "kernel_s": k}  # fmt: skip


def prefix_section() -> None:
    model = llama(LAYERS, 40960)
    for p in PROMPTS:
        for h in (0.0, 0.5, 0.9):
            if left() < 20:
                emit({"section": "prefix", "skipped": [p, h]})
                continue
            emit(prefix_case(model, p, h))
            torch.cuda.empty_cache()
    del model
    torch.cuda.empty_cache()


def main() -> None:
    for name, fn in (
        ("verify", verify_section),
        ("draft", draft_section),
        ("lora", lora_section),
        ("prefix", prefix_section),
    ):
        if left() < 10:
            emit({"section": name, "skipped": "budget"})
            continue
        try:
            fn()
        except Exception:
            emit({"section": name, "error": traceback.format_exc()[-1500:]})
    emit({"section": "done", "elapsed_s": time.perf_counter() - PROBE.t0})


if __name__ == "__main__":
    import transformers

    if ATTENTION == "lower_right":
        register_attention()
    emit({"section": "env", "attention": ATTENTION, "python": sys.version.split()[0], "torch": torch.__version__,
          "transformers": transformers.__version__, "gpu": "cpu smoke" if SMOKE else torch.cuda.get_device_name(0)})  # fmt: skip
    main()
