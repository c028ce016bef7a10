"""Physics probe (issue 25, QLoRA; run on one CUDA GPU): what bitsandbytes' real NF4 path costs
against a bf16 frozen base, per linear and per training step.

bitsandbytes (``bnb.matmul_4bit`` -> ``MatMul4Bit``) dequantizes every frozen NF4 weight to a
16-bit buffer before each GEMM -- forward, the input-gradient GEMM in backward, and again in a
checkpointed layer's recompute -- with double-quantised absmax dequantised first. This probe
measures, on random weights built from a config (nothing downloaded):

* ``dequant``: one ``dequantize_4bit`` per shape: GPU time (events over repeats), host time per
  call (issued behind a ``torch.cuda._sleep`` so the GPU never waits), kernels per call;
* ``linear``: one frozen linear's forward + input-gradient backward, bf16 ``F.linear`` against
  ``bnb.matmul_4bit``, at 512 / 2048 / 8192 tokens: GPU-synchronised time and host issue time;
* ``step``: a Llama-2-7B-shape model (random init), peft LoRA r16 on q/k/v/o, pure bf16, fused
  AdamW, ``loss.backward()``: the bf16 base against the same model with every decoder linear
  replaced by ``bnb.nn.Linear4bit`` (NF4, double quant), +/- non-reentrant checkpointing.

Wheels (bitsandbytes, peft, accelerate, psutil) are unpacked from ``.whl/`` (git-ignored, carried
to the device). One JSON line per case on stdout and in ``$OUT/qlora.jsonl``.
"""

import glob
import json
import os
import sys
import time
import zipfile

T0 = time.time()
PK = "/tmp/qlora_pk"
os.makedirs(PK, exist_ok=True)
for whl in glob.glob(".whl/*.whl"):
    with zipfile.ZipFile(whl) as z:
        z.extractall(PK)
sys.path.insert(0, PK)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

OUT = open(os.path.join(os.environ.get("OUT", "."), "qlora.jsonl"), "a")  # noqa: SIM115 (kept open: every line flushed)


def emit(d):
    d["t_s"] = round(time.time() - T0, 2)
    line = json.dumps(d)
    print(line, flush=True)
    OUT.write(line + "\n")
    OUT.flush()


import bitsandbytes as bnb  # noqa: E402
import bitsandbytes.functional as BF  # noqa: E402

dev = torch.device("cuda:0")
emit(
    {
        "section": "env",
        "torch": torch.__version__,
        "bnb": bnb.__version__,
        "gpu": torch.cuda.get_device_name(0),
    }
)


def gpu_time(fn, reps=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(reps):
        fn()
    b.record()
    torch.cuda.synchronize()
    return a.elapsed_time(b) / 1e3 / reps


def host_time(fn, reps=20):
    """Seconds per call the host spends issuing ``fn`` while the GPU is busy (never waiting)."""
    fn()
    torch.cuda.synchronize()
    torch.cuda._sleep(int(5e8))  # ~0.25 s of GPU spin on an H200 clock: the queue never drains
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    dt = (time.perf_counter() - t) / reps
    torch.cuda.synchronize()
    return dt


def kernels(fn):
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sum(1 for e in prof.events() if e.device_type.name == "CUDA")


def quant(w):
    return BF.quantize_4bit(w, quant_type="nf4", compress_statistics=True)


# ---- per-shape dequantisation and per-linear fwd+bwd
def probe_linear(x, w, q, qs, gy):
    """One frozen linear at ``x``'s tokens: bf16 ``F.linear`` against ``bnb.matmul_4bit``."""

    def bf16_fb():
        F.linear(x, w).backward(gy)

    def nf4_fb():
        bnb.matmul_4bit(x, q.t(), quant_state=qs).backward(gy)

    def bf16_f():  # forward with autograd recording (the training path), no backward
        F.linear(x, w)

    def nf4_f():
        bnb.matmul_4bit(x, q.t(), quant_state=qs)

    return {"bf16_fb_gpu_s": gpu_time(bf16_fb), "nf4_fb_gpu_s": gpu_time(nf4_fb),
            "bf16_fb_host_s": host_time(bf16_fb), "nf4_fb_host_s": host_time(nf4_fb),
            "bf16_f_gpu_s": gpu_time(bf16_f), "nf4_f_gpu_s": gpu_time(nf4_f),
            "bf16_f_host_s": host_time(bf16_f), "nf4_f_host_s": host_time(nf4_f),
            "nf4_f_kernels": kernels(nf4_f), "nf4_fb_kernels": kernels(nf4_fb),
            "bf16_fb_kernels": kernels(bf16_fb)}  # fmt: skip


def probe_shape(o, i):
    w = torch.randn(o, i, device=dev, dtype=torch.bfloat16) * 0.02
    q, qs = quant(w)

    def deq():
        return BF.dequantize_4bit(q, qs)

    err = (deq().float() - w.float()).abs().max().item()
    g = gpu_time(deq, 50)
    emit({"section": "dequant", "shape": [o, i], "gpu_s": g, "host_s": host_time(deq, 50), "kernels": kernels(deq),
          "gb_per_s_at_2_77B": o * i * 2.77 / g / 1e9, "max_abs_err": err})  # fmt: skip
    if time.time() - T0 > 150:
        return
    for T in (512, 2048, 8192):
        x = torch.randn(T, i, device=dev, dtype=torch.bfloat16, requires_grad=True)
        gy = torch.randn(T, o, device=dev, dtype=torch.bfloat16)
        emit({"section": "linear", "shape": [o, i], "T": T, **probe_linear(x, w, q, qs, gy)})


for o, i in ((4096, 4096), (11008, 4096), (4096, 11008), (1024, 4096), (2048, 2048), (768, 768)):
    try:
        probe_shape(o, i)
    except Exception as ex:  # one shape failing must not lose the rest
        emit({"section": "dequant", "shape": [o, i], "error": repr(ex)[:300]})
torch.cuda.empty_cache()

# ---- whole steps: Llama-2-7B shape, peft LoRA vs QLoRA
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

CFG = dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=32,
           intermediate_size=11008, vocab_size=32000, max_position_embeddings=4096,
           tie_word_embeddings=False)  # fmt: skip
NAMES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def build(nf4):
    cfg = LlamaConfig(**CFG, attn_implementation="sdpa")
    torch.manual_seed(0)
    with torch.device(dev):
        m = LlamaForCausalLM(cfg).to(torch.bfloat16)
    if nf4:
        for layer in m.model.layers:
            for parent in (layer.self_attn, layer.mlp):
                for name in NAMES:
                    old = getattr(parent, name, None)
                    if old is None:
                        continue
                    new = bnb.nn.Linear4bit(old.in_features, old.out_features, bias=False,
                                            compute_dtype=torch.bfloat16, compress_statistics=True,
                                            quant_type="nf4", device="meta")  # fmt: skip
                    p = bnb.nn.Params4bit(old.weight.data, requires_grad=False, compress_statistics=True,
                                          quant_type="nf4")  # fmt: skip
                    new.weight = p.to(dev)
                    setattr(parent, name, new)
                    del old
        torch.cuda.empty_cache()
    m.config.use_cache = False
    if nf4:
        m.is_loaded_in_4bit = True  # what from_pretrained sets: peft then wraps bnb's Linear4bit
    try:
        from peft import LoraConfig, get_peft_model

        pm = get_peft_model(m, LoraConfig(r=16, lora_alpha=32, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
                                          lora_dropout=0.0, task_type="CAUSAL_LM"))  # fmt: skip
        q0 = m.model.layers[0].self_attn.q_proj
        emit({"section": "peft", "variant": "qlora" if nf4 else "lora", "wrapper": type(q0).__module__})
    except Exception as ex:  # peft unusable here: the same adapters by hand (fp32, as peft's default)
        emit({"section": "peft", "error": repr(ex)[:300]})
        for p in m.parameters():
            p.requires_grad_(False)
        for layer in m.model.layers:
            for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
                setattr(layer.self_attn, name, Lora(getattr(layer.self_attn, name)))
        m.get_base_model = lambda: m
        pm = m
    pm.train()
    return pm


class Lora(torch.nn.Module):
    def __init__(self, base, r=16):
        super().__init__()
        self.base = base
        self.a = torch.nn.Linear(base.in_features, r, bias=False, device=dev)
        self.b = torch.nn.Linear(r, base.out_features, bias=False, device=dev)
        torch.nn.init.zeros_(self.b.weight)

    def forward(self, x):
        return self.base(x) + self.b(self.a(x.float())).to(x.dtype) * 2.0


def run_steps(pm, b, s, ckpt, steps=5):
    base = pm.get_base_model()
    if ckpt:
        base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    else:
        base.gradient_checkpointing_disable()
    params = [p for p in pm.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-4, fused=True)
    ids = torch.randint(0, 32000, (b, s), device=dev)
    times, issue_f, issue_b = [], [], []
    for k in range(2 + steps):
        torch.cuda.synchronize()
        t = time.perf_counter()
        loss = pm(input_ids=ids, labels=ids).loss
        tf = time.perf_counter()
        loss.backward()
        tb = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        if k >= 2:
            times.append(time.perf_counter() - t)
            issue_f.append(tf - t)
            issue_b.append(tb - tf)
    times.sort()
    return {"step_s": times[len(times) // 2], "step_min_s": times[0], "issue_fwd_s": sorted(issue_f)[len(issue_f) // 2],
            "issue_bwd_s": sorted(issue_b)[len(issue_b) // 2], "peak_gib": torch.cuda.max_memory_allocated() / 2**30}  # fmt: skip


CASES = (
    (1, 2048, False),
    (1, 2048, True),
    (1, 512, False),
    (4, 2048, False),
    (4, 2048, True),
    (1, 512, True),
)
for variant in ("lora", "qlora"):
    if time.time() - T0 > 380:
        emit({"section": "step", "variant": variant, "skipped": "time"})
        continue
    try:
        pm = build(variant == "qlora")
        emit({"section": "built", "variant": variant, "alloc_gib": torch.cuda.memory_allocated() / 2**30})
        for b, s, ckpt in CASES:
            if time.time() - T0 > 420:
                break
            torch.cuda.reset_peak_memory_stats()
            try:
                emit(
                    {
                        "section": "step",
                        "variant": variant,
                        "b": b,
                        "s": s,
                        "ckpt": ckpt,
                        **run_steps(pm, b, s, ckpt),
                    }
                )
            except Exception as ex:
                emit(
                    {
                        "section": "step",
                        "variant": variant,
                        "b": b,
                        "s": s,
                        "ckpt": ckpt,
                        "error": repr(ex)[:300],
                    }
                )
        del pm
        torch.cuda.empty_cache()
    except Exception as ex:
        emit({"section": "step", "variant": variant, "error": repr(ex)[:300]})
emit({"section": "done"})
