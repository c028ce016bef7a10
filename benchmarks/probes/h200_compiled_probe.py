"""``stack: compiled`` probe for issue 25 (run on one CUDA GPU; the H200 lent to the project).

The training estimator's ``compiled`` stack (``service/core/estimation/stacks.py``) has
structural factors no measurement backs. This probe trains the same random-weight Llama-shape
models eagerly and under ``torch.compile`` (inductor defaults, no CUDA graphs), in the
reference loop the estimator models for ``amp_bf16``: fp32 weights, bf16 autocast, SDPA,
fused AdamW, ``labels=ids`` (transformers' loss), no gradient checkpointing. One JSON line per
step configuration in ``$OUT/compiled-probe.jsonl``: synchronised step time (median), summed
CUDA-kernel time and kernel count of one profiled step, compile time, peak allocated memory.
"""

from __future__ import annotations

import statistics
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

import torch
from probe_common import DEV, SMOKE, Probe, kernel_s, sync

PROBE = Probe("compiled-probe.jsonl", 450)
left, emit = PROBE.left, PROBE.emit
# catalog shapes (service/core/catalog/models): hidden, layers, heads, kv heads, head dim, ffn, vocab
SHAPES = {
    "gt-llama-350m": (1024, 24, 16, 16, 64, 2816, 32000),
    "tinyllama-1.1b": (2048, 22, 32, 4, 64, 5632, 32000),
    "gt-llama-3b": (3072, 28, 24, 8, 128, 8192, 128256),
    "smoke-tiny": (64, 2, 4, 2, 16, 128, 512),
}
CASES = (
    [("smoke-tiny", 2, 64)]
    if SMOKE
    else [
        ("gt-llama-350m", 8, 1024),
        ("gt-llama-350m", 4, 512),
        ("tinyllama-1.1b", 8, 2048),
        ("gt-llama-3b", 4, 2048),
    ]
)


def median_s(fn: Callable[[], Any], n: int = 6) -> float:
    ts = []
    for _ in range(n):
        sync()
        t = time.perf_counter()
        fn()
        sync()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def build(name: str) -> Any:
    from transformers import LlamaConfig, LlamaForCausalLM

    h, layers, heads, kv, hd, ffn, vocab = SHAPES[name]
    cfg = LlamaConfig(hidden_size=h, num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv,
                      head_dim=hd, intermediate_size=ffn, vocab_size=vocab, max_position_embeddings=4096,
                      tie_word_embeddings=False, attn_implementation="sdpa", use_cache=False)  # fmt: skip
    with torch.device(DEV):
        return LlamaForCausalLM._from_config(cfg, dtype=torch.float32)


def run_case(name: str, b: int, s: int, compiled: bool) -> dict[str, Any]:
    model = build(name).train()
    fwd_model = torch.compile(model) if compiled else model
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=not SMOKE)
    ids = torch.randint(0, SHAPES[name][6], (b, s), device=DEV)

    def step() -> None:
        with torch.autocast(DEV.type, dtype=torch.bfloat16):
            loss = fwd_model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    if not SMOKE:
        torch.cuda.reset_peak_memory_stats()
    t = time.perf_counter()
    step()
    sync()
    first_s = time.perf_counter() - t
    for _ in range(2):
        step()
    rec = {"section": "train", "model": name, "b": b, "s": s, "stack": "compiled" if compiled else "hf-eager",
           "first_step_s": first_s, "step_s": median_s(step)}  # fmt: skip
    rec["kernels"], rec["kernel_s"] = kernel_s(step)
    rec["peak_allocated_bytes"] = 0 if SMOKE else torch.cuda.max_memory_allocated()
    return rec  # the model, optimizer and step are freed with this frame


def main() -> None:
    for name, b, s in CASES:
        for compiled in (False, True):
            if left() < (90 if compiled else 20):
                emit(
                    {
                        "section": "train",
                        "model": name,
                        "b": b,
                        "s": s,
                        "compiled": compiled,
                        "skipped": "budget",
                    }
                )
                continue
            try:
                emit(run_case(name, b, s, compiled))
            except Exception:
                emit({"section": "train", "model": name, "b": b, "s": s, "compiled": compiled,
                      "error": traceback.format_exc()[-1500:]})  # fmt: skip
            torch._dynamo.reset()
            if not SMOKE:
                torch.cuda.empty_cache()
    emit({"section": "done", "elapsed_s": time.perf_counter() - PROBE.t0})


if __name__ == "__main__":
    import transformers

    emit({"section": "env", "python": sys.version.split()[0], "torch": torch.__version__,
          "transformers": transformers.__version__,
          "gpu": "cpu smoke" if SMOKE else torch.cuda.get_device_name(0)})  # fmt: skip
    main()
