"""Engine-like step probe for issue 28 (run on one CUDA GPU; the H200 lent to the project).

``h200_serving_features_probe.py`` runs transformers, whose ``DynamicCache`` copies the whole KV
cache every step and whose attention leaves the flash kernel with a cache and more than one new
token; neither is what a serving engine does. This probe is a minimal Llama-3-8B forward written
the way an engine runs it: random bf16 weights, a KV cache allocated once (new K/V written in
place), the flash kernel forced for attention (``sdpa_kernel(FLASH_ATTENTION)``, native GQA,
lower-right causal for more than one new token), RMSNorm, RoPE, SwiGLU and the LM head on the
new tokens only. No CUDA graphs: the summed CUDA-kernel time of one run is reported beside the
synchronised wall time, and is the figure to compare.

One JSON line per case in ``$OUT/engine-step-probe.jsonl``:

1. ``verify``: ``t`` new tokens per sequence over ``ctx`` cached ones, batch ``b`` (``t = 1``:
   a decode step; ``t = k + 1``: verifying ``k`` drafted tokens). b in {1, 8, 32, 64}, ctx in
   {1024, 4096}, t in {1, 2, 4, 8}.
2. ``draft``: the decode step of one layer plus the LM head (an EAGLE-class head).
3. ``prefix``: batch-1 prefill of ``p`` tokens with a share ``h`` already cached: p in
   {2048, 8192, 32768}, h in {0, 0.5, 0.9}.
"""

from __future__ import annotations

import os
import sys
import time
import traceback

import torch
import torch.nn.functional as F
from probe_common import DEV, SMOKE, Probe, kernel_s, wall_s

DT = torch.float32 if SMOKE else torch.bfloat16
ATTENTION = os.environ.get("PROBE_ATTENTION", "flash")
"""``flash``: PyTorch's flash kernel with native GQA (FlashAttention-2 packs a KV head's query
heads into one tile only for one new token); ``packed``: for up to ``PACK_MAX`` new tokens the
query heads of each KV head are folded into the query length, as FlashAttention-3's
``pack_gqa``, FlashInfer and TensorRT-LLM's XQA do (``h200_verify_attention_probe.py``)."""
PACK_MAX = 64
PROBE = Probe(
    "engine-step-probe.jsonl" if ATTENTION == "flash" else f"engine-step-probe-{ATTENTION}.jsonl", 400
)
left, emit = PROBE.left, PROBE.emit
H, NH, NKV, HD, FF, VOCAB, LAYERS = (
    (64, 4, 2, 16, 128, 512, 2) if SMOKE else (4096, 32, 8, 128, 14336, 128256, 32)
)
CTXS = (64, 128) if SMOKE else (1024, 4096)
BATCHES = (1, 2) if SMOKE else (1, 8, 32, 64)
TS = (1, 2, 4, 8)
PROMPTS = (128, 256) if SMOKE else (2048, 8192, 32768)


def _w(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, device=DEV, dtype=DT) * 0.02


class Model:
    """Random-weight Llama-3-8B-shape decoder with a KV cache of ``b x max_len`` allocated once."""

    def __init__(self, layers: int, b: int, max_len: int) -> None:
        self.layers = [
            {
                "qkv": _w((NH + 2 * NKV) * HD, H),
                "o": _w(H, NH * HD),
                "gu": _w(2 * FF, H),
                "d": _w(H, FF),
                "n1": torch.ones(H, device=DEV, dtype=DT),
                "n2": torch.ones(H, device=DEV, dtype=DT),
            }
            for _ in range(layers)
        ]
        self.emb = _w(VOCAB, H)
        self.head = _w(VOCAB, H)
        self.norm = torch.ones(H, device=DEV, dtype=DT)
        self.k = [torch.zeros(b, NKV, max_len, HD, device=DEV, dtype=DT) for _ in range(layers)]
        self.v = [torch.zeros(b, NKV, max_len, HD, device=DEV, dtype=DT) for _ in range(layers)]
        inv = 1.0 / (500000.0 ** (torch.arange(0, HD, 2, device=DEV, dtype=torch.float32) / HD))
        ang = torch.outer(torch.arange(max_len, device=DEV, dtype=torch.float32), inv)
        self.cos, self.sin = ang.cos().to(DT), ang.sin().to(DT)

    def _rope(self, x: torch.Tensor, start: int) -> torch.Tensor:
        t = x.shape[2]
        cos, sin = self.cos[start : start + t], self.sin[start : start + t]
        x1, x2 = x[..., : HD // 2], x[..., HD // 2 :]
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)

    def _attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        from torch.nn.attention.bias import causal_lower_right

        b, nh, t, hd = q.shape
        if ATTENTION == "packed" and 1 < t <= PACK_MAX:  # no mask: it drops t - 1 keys of some rows
            qp = q.reshape(b, NKV, (nh // NKV) * t, hd)
            if SMOKE:
                return F.scaled_dot_product_attention(qp, k, v).reshape(b, nh, t, hd)
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                return F.scaled_dot_product_attention(qp, k, v).reshape(b, nh, t, hd)
        mask = None if t == 1 else causal_lower_right(t, k.shape[2])
        if SMOKE:
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)

    def forward(self, ids: torch.Tensor, start: int, logits: int = 0) -> torch.Tensor:
        """New tokens ``ids [b, t]`` at positions ``start..start+t-1``; logits of the last
        ``logits`` of them (all when 0: verification scores every drafted token)."""
        b, t = ids.shape
        x = self.emb[ids]
        for i, p in enumerate(self.layers):
            y = F.rms_norm(x, (H,), p["n1"])
            qkv = (y @ p["qkv"].T).view(b, t, NH + 2 * NKV, HD).transpose(1, 2)
            q, k, v = qkv[:, :NH], qkv[:, NH : NH + NKV], qkv[:, NH + NKV :]
            q, k = self._rope(q, start), self._rope(k, start)
            self.k[i][:b, :, start : start + t] = k
            self.v[i][:b, :, start : start + t] = v
            a = self._attend(q, self.k[i][:b, :, : start + t], self.v[i][:b, :, : start + t])
            x = x + a.transpose(1, 2).reshape(b, t, NH * HD) @ p["o"].T
            y = F.rms_norm(x, (H,), p["n2"])
            g, u = (y @ p["gu"].T).chunk(2, dim=-1)
            x = x + (F.silu(g) * u) @ p["d"].T
        x = x[:, -logits:] if logits else x
        return F.rms_norm(x, (H,), self.norm) @ self.head.T

    def fill(self, b: int, ctx: int) -> None:
        """Write ``ctx`` tokens of K/V for ``b`` sequences (a real prefill, in 4k chunks)."""
        with torch.inference_mode():
            for s in range(0, ctx, 4096):
                n = min(4096, ctx - s)
                self.forward(torch.randint(0, VOCAB, (b, n), device=DEV), s, logits=1)


def case(m: Model, b: int, ctx: int, t: int) -> tuple[float, int, float]:
    ids = torch.randint(0, VOCAB, (b, t), device=DEV)

    def step() -> None:
        with torch.inference_mode():
            m.forward(ids, ctx)

    w = wall_s(step)
    n, k = kernel_s(step)
    return w, n, k


def verify_section() -> None:
    for ctx in CTXS:
        for b in BATCHES:
            if left() < 20:
                emit({"section": "verify", "skipped": [b, ctx]})
                continue
            m = Model(LAYERS, b, ctx + max(TS))
            m.fill(b, ctx)
            for t in TS:
                w, n, k = case(m, b, ctx, t)
                emit(
                    {
                        "section": "verify",
                        "b": b,
                        "ctx": ctx,
                        "t": t,
                        "wall_s": w,
                        "kernels": n,
                        "kernel_s": k,
                    }
                )
            del m
            torch.cuda.empty_cache()
            if left() > 20:
                d = Model(1, b, ctx + 1)
                d.fill(b, ctx)
                w, n, k = case(d, b, ctx, 1)
                emit(
                    {"section": "draft", "b": b, "ctx": ctx, "t": 1, "wall_s": w, "kernels": n, "kernel_s": k}
                )
                del d
                torch.cuda.empty_cache()


def prefix_section() -> None:
    for p in PROMPTS:
        m = Model(LAYERS, 1, p)
        for h in (0.0, 0.5, 0.9):
            if left() < 20:
                emit({"section": "prefix", "skipped": [p, h]})
                continue
            cached = round(p * h)
            if cached:
                m.fill(1, cached)
            ids = torch.randint(0, VOCAB, (1, p - cached), device=DEV)

            def prefill(cached: int = cached, ids: torch.Tensor = ids, m: Model = m) -> None:
                with torch.inference_mode():
                    m.forward(ids, cached, logits=1)

            w = wall_s(prefill, 0.5, 10)
            n, k = kernel_s(prefill)
            emit({"section": "prefix", "b": 1, "prompt": p, "hit_rate": h, "cached_tokens": cached, "wall_s": w,
                  "kernels": n, "kernel_s": k})  # fmt: skip
        del m
        torch.cuda.empty_cache()


def main() -> None:
    for name, fn in (("verify", verify_section), ("prefix", prefix_section)):
        if left() < 10:
            emit({"section": name, "skipped": "budget"})
            continue
        try:
            fn()
        except Exception:
            emit({"section": name, "error": traceback.format_exc()[-1500:]})
    emit({"section": "done", "elapsed_s": time.perf_counter() - PROBE.t0})


if __name__ == "__main__":
    emit({"section": "env", "python": sys.version.split()[0], "torch": torch.__version__, "attention": ATTENTION,
          "gpu": "cpu smoke" if SMOKE else torch.cuda.get_device_name(0)})  # fmt: skip
    main()
