"""Verify-step attention probe for issue 28 (run on one CUDA GPU; the H200 lent to the project).

``h200_engine_step_probe.py`` found that verifying ``t - 1`` drafted tokens (``t`` new tokens per
sequence over a KV cache) costs 1.3-3.7x a decode step at batch 8-64, where the serving model
says 1.0-2.2x. This probe takes the step apart on the same Llama-3-8B shape (32 query heads, 8
KV heads, head dim 128, 32 layers, bf16) to say which part costs what:

1. ``attn``: attention alone over 32 layers' KV caches (separate buffers, so that nothing is
   served from L2 across layers), b in {1, 8, 32, 64}, ctx in {1024, 4096}, t in {1, 2, 4, 8,
   16, 32}, two ways:
   - ``unpacked``: PyTorch's flash kernel as the engine-step probe called it (``q [b, 32, t,
     128]``, ``enable_gqa``, lower-right causal for t > 1). FlashAttention-2 packs the 4 query
     heads of a KV head into one tile only when ``t == 1`` (``seqlenq_ngroups_swapped``);
     otherwise each query head is its own tile that reads its KV head's whole cache.
   - ``packed``: the same kernel with the 4 query heads of each KV head folded into the query
     length (``q [b, 8, 4 t, 128]``, no mask: the lower-right mask only removes the last ``t - 1``
     keys of some rows, no cost), what FlashAttention-3's ``pack_gqa``, FlashInfer's batch
     prefill/decode kernels (``group_size`` folded into the query tile) and TensorRT-LLM's XQA do.
   Per case: the median time of the 32 layers over 10 repetitions after 2 warm-ups (CUDA
   events), the KV bytes read once, the attention FLOPs, and the kernels launched (torch
   profiler, names and summed time).
One JSON line per case in ``$OUT/verify-attention-probe.jsonl``.

    PROBE_BUDGET_S=200 python3 benchmarks/probes/h200_verify_attention_probe.py

The record ``data/probes/h200-verify-attention-2026-12-04.jsonl`` was made by a compact copy of
this file's ``attn`` section passed inline to the lent H200 (whose copy of the tree is the
lead's checkout, without this file): the same cases, shapes, timing and profiler calls, no
``env`` line and no budget (it ran in about 35 s; torch 2.11.0+cu130).
"""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Callable

import torch
import torch.nn.functional as F
from probe_common import DEV, SMOKE, Probe, sync, timed

DT = torch.float32 if SMOKE else torch.bfloat16
PROBE = Probe("verify-attention-probe.jsonl", 200)
left, emit = PROBE.left, PROBE.emit
NH, NKV, HD, LAYERS = (4, 2, 16, 2) if SMOKE else (32, 8, 128, 32)
G = NH // NKV
CTXS = (64,) if SMOKE else (1024, 4096)
BATCHES = (1, 2) if SMOKE else (1, 8, 32, 64)
TS = (1, 2, 4) if SMOKE else (1, 2, 4, 8, 16, 32)


def kernels(fn: Callable[[], object]) -> dict[str, list[float]]:
    """Kernel name -> [count, summed seconds] of one run of ``fn``."""
    if SMOKE:
        return {}
    from torch.profiler import ProfilerActivity, profile

    sync()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        sync()
    out: dict[str, list[float]] = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            k = out.setdefault(e.name[:90], [0, 0.0])
            k[0] += 1
            k[1] += e.time_range.elapsed_us() * 1e-6
    return out


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, packed: bool) -> torch.Tensor:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.bias import causal_lower_right

    b, _, t, _ = q.shape
    backends = [SDPBackend.MATH] if SMOKE else [SDPBackend.FLASH_ATTENTION]
    with sdpa_kernel(backends):
        if packed:  # query head h uses KV head h // G: fold the G heads of a KV head into the length
            qp = q.reshape(b, NKV, G * t, HD)
            return F.scaled_dot_product_attention(qp, k, v).reshape(b, NH, t, HD)
        mask = None if t == 1 else causal_lower_right(t, k.shape[2])
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)


def attn_section() -> None:
    for ctx in CTXS:
        for b in BATCHES:
            if left() < 25:
                emit({"section": "attn", "skipped": [b, ctx]})
                continue
            kv = [
                (
                    torch.randn(b, NKV, ctx + max(TS), HD, device=DEV, dtype=DT),
                    torch.randn(b, NKV, ctx + max(TS), HD, device=DEV, dtype=DT),
                )
                for _ in range(LAYERS)
            ]
            for t in TS:
                q = torch.randn(b, NH, t, HD, device=DEV, dtype=DT)
                for packed in (False, True):

                    def run(
                        q: torch.Tensor = q,
                        t: int = t,
                        packed: bool = packed,
                        kv: list[tuple[torch.Tensor, torch.Tensor]] = kv,
                        ctx: int = ctx,
                    ) -> None:
                        for k, v in kv:
                            _attend(q, k[:, :, : ctx + t], v[:, :, : ctx + t], packed)

                    s = timed(run)
                    ks = kernels(run)
                    emit({"section": "attn", "b": b, "ctx": ctx, "t": t,
                          "mode": "packed" if packed else "unpacked", "s": s,
                          "kv_bytes": 2 * b * NKV * (ctx + t) * HD * 2 * LAYERS,
                          "flops": 4 * b * NH * t * (ctx + t) * HD * LAYERS,
                          "kernels": ks})  # fmt: skip
            del kv
            torch.cuda.empty_cache()


def main() -> None:
    for name, fn in (("attn", attn_section),):
        if left() < 5:
            emit({"section": name, "skipped": "budget"})
            continue
        try:
            fn()
        except Exception:
            emit({"section": name, "error": traceback.format_exc()[-1500:]})
    emit({"section": "done", "elapsed_s": time.perf_counter() - PROBE.t0})


if __name__ == "__main__":
    emit({"section": "env", "python": sys.version.split()[0], "torch": torch.__version__,
          "gpu": "cpu smoke" if SMOKE else torch.cuda.get_device_name(0)})  # fmt: skip
    main()
