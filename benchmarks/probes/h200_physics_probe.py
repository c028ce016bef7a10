# ruff: noqa: F821, B023
# (closures over names the script deletes afterwards, and loop variables bound per iteration on purpose)
"""Physics probe for issue 25 (run on one CUDA GPU; the H200 lent to the project).

One JSON line per measurement in ``$OUT/physics-probe.jsonl``; per-kernel profiler summaries
(for the cross-GPU issue 27, not read by the estimator) in ``$OUT/ops-profile.jsonl``.

Sections, in order, each skipped when the time budget is spent:

1. ``ceiling``: device-to-device copy bandwidth and an 8192^3 bf16 GEMM rate.
2. ``dequant``: a 4-bit NF4 dequantisation kernel written in **Triton** (bitsandbytes is not
   installed there; this kernel does what ``bnb.functional.dequantize_4bit`` does: packed
   nibbles, an fp32 absmax per block of 64, a 16-entry code table, bf16 out) and a pure-torch one,
   timed per weight matrix, beside the bf16 GEMM of that matrix at several token counts.
3. ``small-step``: HF ``LlamaForCausalLM`` at the catalog's gt-llama-110m / gt-llama-350m
   shapes, amp_bf16 autocast, fused AdamW, b x s in {4, 8} x {512, 1024, 2048}, with and
   without gradient checkpointing: the synchronised step (as the agent times it), the step with
   no synchronisation between steps, the host time to issue forward / backward / optimizer, and
   per phase the CUDA kernels launched and their summed duration (torch profiler).
4. ``moe``: a Mixtral-layout model (8 experts, top-2, transformers' eager expert loop and, when
   this transformers has it, the grouped-GEMM experts) and its dense twin (same active FLOPs per
   token): training step and batch-1 prefill.
5. ``prefill``: batch-1 prefill (``logits_to_keep=1``, ``inference_mode``) of a Llama-3-8B
   shape (random bf16 weights) at prompt lengths 512 to 32k.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
import traceback

import torch

OUT = os.environ.get("OUT", ".")
T0 = time.perf_counter()
BUDGET_S = float(os.environ.get("PROBE_BUDGET_S", "430"))
dev = torch.device("cuda:0")
REC = open(os.path.join(OUT, "physics-probe.jsonl"), "a")  # noqa: SIM115
OPS = open(os.path.join(OUT, "ops-profile.jsonl"), "a")  # noqa: SIM115


def left() -> float:
    return BUDGET_S - (time.perf_counter() - T0)


def emit(rec: dict, f=REC) -> None:  # type: ignore[no-untyped-def]
    rec["t_s"] = round(time.perf_counter() - T0, 2)
    f.write(json.dumps(rec) + "\n")
    f.flush()
    print(json.dumps(rec)[:300], flush=True)


def sync() -> None:
    torch.cuda.synchronize()


def bench(fn, min_s: float = 0.3, max_n: int = 50, warm: int = 2) -> float:  # type: ignore[no-untyped-def]
    for _ in range(warm):
        fn()
    sync()
    ts = []
    start = time.perf_counter()
    while len(ts) < 3 or (time.perf_counter() - start < min_s and len(ts) < max_n):
        t = time.perf_counter()
        fn()
        sync()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


# ---------------------------------------------------------------------------------------- 1
def ceilings() -> None:
    x = torch.empty(2 * 2**30, dtype=torch.uint8, device=dev)
    y = torch.empty_like(x)
    t = bench(lambda: y.copy_(x), 0.3)
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    g = bench(lambda: a @ b, 0.5)
    emit(
        {
            "section": "ceiling",
            "gpu": torch.cuda.get_device_name(0),
            "torch": torch.__version__,
            "copy_gb_per_s": 2 * x.numel() / t / 1e9,
            "gemm_bf16_tflops": 2 * 8192**3 / g / 1e12,
        }
    )
    del x, y, a, b
    torch.cuda.empty_cache()


# ---------------------------------------------------------------------------------------- 2
NF4 = [
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
    -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
    0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
    0.7229568362236023, 1.0,
]  # fmt: skip


def dequant_section() -> None:
    import triton
    import triton.language as tl

    @triton.jit
    def dq_kernel(packed, absmax, code, out, n_packed, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n_packed
        b = tl.load(packed + offs, mask=mask, other=0).to(tl.int32)
        scale = tl.load(absmax + offs // 32, mask=mask, other=0.0)
        hi = tl.load(code + ((b >> 4) & 15)) * scale
        lo = tl.load(code + (b & 15)) * scale
        tl.store(out + 2 * offs, hi.to(tl.bfloat16), mask=mask)
        tl.store(out + 2 * offs + 1, lo.to(tl.bfloat16), mask=mask)

    code = torch.tensor(NF4, device=dev, dtype=torch.float32)
    for out_f, in_f in ((4096, 4096), (14336, 4096), (4096, 14336)):
        n = out_f * in_f
        packed = torch.randint(0, 256, (n // 2,), device=dev, dtype=torch.uint8)
        absmax = torch.rand(n // 64, device=dev, dtype=torch.float32) + 0.5
        w = torch.empty(n, device=dev, dtype=torch.bfloat16)

        def triton_dq() -> None:
            dq_kernel[(triton.cdiv(n // 2, 1024),)](packed, absmax, code, w, n // 2, BLOCK=1024)

        def torch_dq() -> torch.Tensor:
            hi = code[(packed >> 4).long()]
            lo = code[(packed & 15).long()]
            v = torch.stack((hi, lo), dim=1).reshape(-1, 64) * absmax[:, None]
            return v.to(torch.bfloat16).reshape(-1)

        t_pt = bench(torch_dq, 0.2)
        ref = torch_dq()
        t_tr = bench(triton_dq, 0.2)
        sync()
        err = float((w.float() - ref.float()).abs().max())
        wb = w.view(out_f, in_f)
        moved = n / 2 + n / 64 * 4 + 2 * n
        rec = {
            "section": "dequant",
            "kernel": "triton nf4 (bitsandbytes not installed; same format: nibbles, fp32 absmax/64, code table)",
            "shape": [out_f, in_f],
            "triton_dequant_s": t_tr,
            "triton_gb_per_s": moved / t_tr / 1e9,
            "torch_dequant_s": t_pt,
            "max_abs_err_vs_torch": err,
        }
        for tokens in (1, 256, 2048, 8192):
            x = torch.randn(tokens, in_f, device=dev, dtype=torch.bfloat16)
            rec[f"matmul_s_T{tokens}"] = bench(lambda x=x: x @ wb.t(), 0.15)

            def both(x: torch.Tensor = x) -> torch.Tensor:
                triton_dq()
                return x @ wb.t()

            rec[f"dequant_matmul_s_T{tokens}"] = bench(both, 0.15)
        emit(rec)
        del packed, absmax, w, ref
        torch.cuda.empty_cache()


# ---------------------------------------------------------------------------------------- 3
SHAPES = {
    "gt-llama-110m": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "num_key_value_heads": 12, "intermediate_size": 2048},
    "gt-llama-350m": {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 16, "intermediate_size": 2816},
}  # fmt: skip


def llama(shape: dict, vocab: int = 32000, dtype=torch.float32, max_len: int = 4096):  # type: ignore[no-untyped-def]
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=vocab,
        max_position_embeddings=max_len,
        tie_word_embeddings=False,
        attn_implementation="sdpa",
        use_cache=False,
        head_dim=shape["hidden_size"] // shape["num_attention_heads"],
        **shape,
    )
    with torch.device(dev):
        return LlamaForCausalLM._from_config(cfg, dtype=dtype)


def phase_profile(fn, label: str, extra: dict) -> tuple[int, float]:  # type: ignore[no-untyped-def]
    """Kernels launched by ``fn`` and their summed duration (s); per-kernel totals to OPS."""
    from torch.profiler import ProfilerActivity, profile

    sync()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        out = fn()
        sync()
    n = 0
    total = 0.0
    names: dict[str, list[float]] = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            n += 1
            d = e.time_range.elapsed_us() * 1e-6
            total += d
            k = names.setdefault(e.name[:120], [0, 0.0])
            k[0] += 1
            k[1] += d
    top = sorted(names.items(), key=lambda kv: -kv[1][1])[:40]
    emit({"section": "ops", "phase": label, **extra, "kernels": n, "kernel_s": total,
          "top": [[k, v[0], v[1]] for k, v in top]}, OPS)  # fmt: skip
    return n, total, out  # type: ignore[return-value]


def train_case(model, b: int, s: int, vocab: int, extra: dict, ckpt: bool) -> dict:  # type: ignore[no-untyped-def]
    if ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
    ids = torch.randint(0, vocab, (b, s), device=dev)

    def fwd() -> torch.Tensor:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return model(input_ids=ids, labels=ids, use_cache=False).loss

    def step() -> None:
        fwd().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    sync()
    rec = dict(extra, b=b, s=s, ckpt=ckpt)
    rec["step_sync_s"] = bench(step, 0.6, 40, warm=0)
    k = 8
    sync()
    t = time.perf_counter()
    for _ in range(k):
        step()
    sync()
    rec["step_nosync_s"] = (time.perf_counter() - t) / k
    hf, hb, ho = [], [], []
    for _ in range(5):
        sync()
        t0 = time.perf_counter()
        loss = fwd()
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=True)
        t3 = time.perf_counter()
        sync()
        hf.append(t1 - t0)
        hb.append(t2 - t1)
        ho.append(t3 - t2)
    rec["host_fwd_s"], rec["host_bwd_s"], rec["host_opt_s"] = (statistics.median(x) for x in (hf, hb, ho))
    tag = dict(extra, b=b, s=s, ckpt=ckpt)
    n, g, loss = phase_profile(fwd, "forward", tag)
    rec["kernels_fwd"], rec["gpu_fwd_s"] = n, g
    n, g, _ = phase_profile(loss.backward, "backward", tag)
    rec["kernels_bwd"], rec["gpu_bwd_s"] = n, g
    n, g, _ = phase_profile(opt.step, "optimizer", tag)
    rec["kernels_opt"], rec["gpu_opt_s"] = n, g
    opt.zero_grad(set_to_none=True)
    rec["peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
    del opt
    return rec


def small_steps() -> None:
    for name, shape in SHAPES.items():
        for ckpt in (False, True):
            model = llama(shape)
            for b, s in ((4, 512), (8, 512), (4, 1024), (8, 1024), (4, 2048), (8, 2048)):
                if left() < 200:
                    emit({"section": "small-step", "skipped": f"{name} b{b} s{s} ckpt={ckpt}: budget"})
                    continue
                try:
                    torch.cuda.reset_peak_memory_stats()
                    rec = train_case(model, b, s, 32000, {"section": "small-step", "model": name}, ckpt)
                    emit(rec)
                except Exception:
                    emit(
                        {
                            "section": "small-step",
                            "model": name,
                            "b": b,
                            "s": s,
                            "error": traceback.format_exc()[-800:],
                        }
                    )
            del model
            torch.cuda.empty_cache()


# ---------------------------------------------------------------------------------------- 4
MOE = {
    "model_type": "mixtral",
    "architectures": ["MixtralForCausalLM"],
    "hidden_size": 1024,
    "intermediate_size": 3584,
    "num_hidden_layers": 8,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "head_dim": 64,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
    "vocab_size": 32000,
    "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-5,
    "rope_theta": 1e6,
    "tie_word_embeddings": False,
    "sliding_window": None,
}


def moe_section() -> None:
    from transformers import MistralConfig, MistralForCausalLM, MixtralConfig, MixtralForCausalLM

    keys = {k: v for k, v in MOE.items() if k not in ("model_type", "architectures")}
    dense_cfg = dict(keys)
    for k in ("num_local_experts", "num_experts_per_tok"):
        dense_cfg.pop(k)
    dense_cfg["intermediate_size"] = 2 * MOE["intermediate_size"]  # top-2: the same FLOPs per token
    variants = [("mixtral-eager", "eager"), ("mixtral-grouped_mm", "grouped_mm"), ("dense-twin", None)]
    for label, impl in variants:
        if left() < 110:
            emit({"section": "moe", "skipped": label})
            continue
        try:
            if impl is None:
                cfg = MistralConfig(attn_implementation="sdpa", use_cache=False, **dense_cfg)
                with torch.device(dev):
                    model = MistralForCausalLM._from_config(cfg, dtype=torch.float32)
            else:
                cfg = MixtralConfig(attn_implementation="sdpa", use_cache=False, **keys)
                with torch.device(dev):  # transformers 5.x may default to grouped_mm: say which
                    try:
                        model = MixtralForCausalLM._from_config(
                            cfg, dtype=torch.float32, experts_implementation=impl
                        )
                    except (TypeError, ValueError) as exc:
                        if impl != "eager":
                            raise
                        emit(
                            {
                                "section": "moe",
                                "note": f"experts_implementation not accepted ({exc}); default used",
                            }
                        )
                        model = MixtralForCausalLM._from_config(cfg, dtype=torch.float32)
            extra = {"section": "moe", "variant": label, "config": MOE if impl else dense_cfg,
                     "experts_implementation": getattr(model.config, "_experts_implementation", None)}  # fmt: skip
            for b, s in ((4, 1024), (4, 2048)):
                torch.cuda.reset_peak_memory_stats()
                emit(train_case(model, b, s, MOE["vocab_size"], dict(extra, kind="train"), False))
            model.eval()
            model.to(torch.bfloat16)
            for s in (1024, 4096, 16384):
                ids = torch.randint(0, MOE["vocab_size"], (1, s), device=dev)
                with torch.inference_mode():
                    t = bench(
                        lambda ids=ids: model(input_ids=ids, use_cache=False, logits_to_keep=1), 0.3, 20
                    )
                emit(dict(extra, kind="prefill", b=1, s=s, ttft_s=t))
            del model
            torch.cuda.empty_cache()
        except Exception:
            emit({"section": "moe", "variant": label, "error": traceback.format_exc()[-1200:]})


# ---------------------------------------------------------------------------------------- 5
def prefill_section() -> None:
    shape = {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
             "intermediate_size": 14336}  # fmt: skip
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=128256, max_position_embeddings=131072, rope_theta=500000.0, tie_word_embeddings=False,
                      attn_implementation="sdpa", use_cache=True, head_dim=128, **shape)  # fmt: skip
    with torch.device(dev):
        model = LlamaForCausalLM._from_config(cfg, dtype=torch.bfloat16)
    model.eval()
    for s in (512, 2048, 8192, 32768):
        if left() < 15:
            emit({"section": "prefill", "skipped": s})
            continue
        ids = torch.randint(0, 128256, (1, s), device=dev)
        with torch.inference_mode():
            t = bench(lambda ids=ids: model(input_ids=ids, use_cache=True, logits_to_keep=1), 0.5, 10, warm=1)
        emit({"section": "prefill", "model": "llama3-8b shape, random bf16 weights", "b": 1, "s": s, "ttft_s": t,
              "engine": "hf-transformers forward, use_cache, logits_to_keep=1, SDPA"})  # fmt: skip
    del model
    torch.cuda.empty_cache()


def main() -> None:
    for name, fn in (
        ("ceiling", ceilings),
        ("dequant", dequant_section),
        ("small-step", small_steps),
        ("moe", moe_section),
        ("prefill", prefill_section),
    ):
        if left() < 10:
            emit({"section": name, "skipped": "budget"})
            continue
        try:
            fn()
        except Exception:
            emit({"section": name, "error": traceback.format_exc()[-1500:]})
    emit({"section": "done", "elapsed_s": time.perf_counter() - T0})


if __name__ == "__main__":
    print(sys.version, torch.__version__, flush=True)
    main()
