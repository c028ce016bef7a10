"""Attention-kernel and matmul-ceiling probe for issue 27 (run on one CUDA GPU; the H200 lent to
the project).

The cross-GPU transfer carries the H200's fitted attention efficiency to other architectures by
their GEMM factor. FlashAttention-2, PyTorch's ``flash`` SDPA backend, reaches a much smaller
share of the dense peak on Hopper than on Ampere (Dao 2023, arXiv 2307.08691: up to 230 TFLOP/s
on an A100, 73 % of 312; up to 335 on an H100, 34 % of 989), so the kernel each stack runs is
part of the answer. This probe says which kernel PyTorch's SDPA runs on this GPU by default and
what each backend reaches:

1. ``attn``: causal self-attention, bf16, 32 heads of 128 (and 64), 16,384 tokens per call
   (batch x sequence), sequence 1,024-16,384, forward and forward + backward, for the default
   SDPA dispatch and each backend forced (``flash``, ``cudnn``, ``efficient``); FLOPs counted as
   the FlashAttention papers do (forward ``4 b h s^2 d / 2`` causal, backward 2.5x forward); the
   default's kernels named by the torch profiler.
2. ``mm``: bf16 matmul at the shapes the maximum-achievable-matmul table of stas00/ml-engineering
   reports as best for the H100 SXM (6144x17920x2816) and GH200 (11264x19712x1536), and 8192^3,
   each held for 2 s (clocks settle at the power cap) -- the same footing as that table's A100
   (267.9 TFLOP/s, 85.9 %) and H100 (792.1, 80.1 %) rows.

One JSON line per case in ``$OUT/attention-kernel-probe.jsonl``.

    PROBE_BUDGET_S=150 python3 benchmarks/probes/h200_attention_kernel_probe.py
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable

import torch
import torch.nn.functional as F
from probe_common import DEV, SMOKE, Probe, sync, timed

DT = torch.float32 if SMOKE else torch.bfloat16
PROBE = Probe("attention-kernel-probe.jsonl", 150)
left, emit = PROBE.left, PROBE.emit
TOKENS = 256 if SMOKE else 16384
SEQS = (64, 128) if SMOKE else (1024, 2048, 4096, 8192, 16384)
HEADS = 4 if SMOKE else 32


def backends() -> dict[str, list[object]]:
    from torch.nn.attention import SDPBackend

    return {
        "flash": [SDPBackend.FLASH_ATTENTION],
        "cudnn": [SDPBackend.CUDNN_ATTENTION],
        "efficient": [SDPBackend.EFFICIENT_ATTENTION],
    }


def kernels(fn: Callable[[], object]) -> list[str]:
    """The CUDA kernels one call of ``fn`` launches (torch profiler), longest first."""
    if SMOKE:
        return []
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        sync()
    evs = [e for e in prof.key_averages() if e.device_type.name == "CUDA"]
    evs.sort(key=lambda e: -e.device_time_total)
    return [e.key[:120] for e in evs[:4]]


def attn_case(seq: int, hd: int, backend: str) -> None:
    from torch.nn.attention import sdpa_kernel

    b = max(1, TOKENS // seq)
    q, k, v = (torch.randn(b, HEADS, seq, hd, device=DEV, dtype=DT, requires_grad=True) for _ in range(3))
    g = torch.randn(b, HEADS, seq, hd, device=DEV, dtype=DT)

    def fwd() -> object:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def fwd_bwd() -> object:
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        o.backward(g)
        return o

    flops_fwd = 4.0 * b * HEADS * seq * seq * hd / 2.0
    rec: dict[str, object] = {"case": "attn", "backend": backend, "seq": seq, "head_dim": hd, "batch": b}
    try:
        if backend == "default":
            tf, tb = timed(fwd), timed(fwd_bwd)
            rec["kernels"] = kernels(fwd_bwd)
        else:
            with sdpa_kernel(backends()[backend]):  # type: ignore[arg-type]
                tf, tb = timed(fwd), timed(fwd_bwd)
        rec.update(
            fwd_s=tf,
            fwd_bwd_s=tb,
            fwd_tflops=flops_fwd / tf / 1e12,
            fwd_bwd_tflops=3.5 * flops_fwd / tb / 1e12,
        )
    except Exception as exc:  # a backend that does not run this shape is a finding, not a failure
        rec["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    emit(rec)


def mm_case(m: int, n: int, k: int, hold_s: float = 2.0) -> None:
    a = torch.randn(m, k, device=DEV, dtype=DT)
    b = torch.randn(k, n, device=DEV, dtype=DT)
    a @ b
    sync()
    n_calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < (0.01 if SMOKE else hold_s):  # settle at the power cap
        for _ in range(10):
            a @ b
        sync()
        n_calls += 10
    t = timed(lambda: a @ b, reps=20)
    emit(
        {
            "case": "mm",
            "shape": [m, n, k],
            "s": t,
            "tflops": 2.0 * m * n * k / t / 1e12,
            "warm_calls": n_calls,
        }
    )


def main() -> None:
    emit(
        {
            "case": "env",
            "torch": torch.__version__,
            "device": torch.cuda.get_device_name() if not SMOKE else "cpu",
        }
    )
    shapes = [(64, 64, 64)] if SMOKE else [(6144, 17920, 2816), (11264, 19712, 1536), (8192, 8192, 8192)]
    for m, n, k in shapes:
        if left() > 10:
            mm_case(m, n, k)
    for hd in (128, 64):
        for seq in SEQS:
            for backend in ("default", "flash", "cudnn", "efficient"):
                if left() < 5:
                    return
                try:
                    attn_case(seq, hd if not SMOKE else 16, backend)
                except Exception:
                    traceback.print_exc()
                torch.cuda.empty_cache() if not SMOKE else None


if __name__ == "__main__":
    main()
