"""Physics probe (issue 11, launch-bound steps; run on one CUDA GPU): kernels launched per decoder layer in forward,
backward and checkpoint recompute, and host time per launched kernel in each phase, for the
HF Llama layer under autocast (transformers 5.x, torch eager). One JSON line per case."""

import json
import time

import torch
from torch.profiler import ProfilerActivity, profile
from transformers import LlamaConfig, LlamaForCausalLM

dev = torch.device("cuda:0")


def build(L, ckpt):
    cfg = LlamaConfig(
        hidden_size=768,
        num_hidden_layers=L,
        num_attention_heads=12,
        num_key_value_heads=12,
        intermediate_size=2048,
        vocab_size=32000,
        max_position_embeddings=4096,
        tie_word_embeddings=False,
        attn_implementation="sdpa",
    )
    with torch.device(dev):
        m = LlamaForCausalLM(cfg)
    if ckpt:
        m.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    m.train()
    return m


def kernels(m, ids, opt):
    def fwd():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return m(input_ids=ids, labels=ids, use_cache=False).loss

    out = {}
    for name in ("fwd", "bwd", "opt"):
        loss = fwd() if name != "fwd" else None
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            if name == "fwd":
                loss = fwd()
            elif name == "bwd":
                loss.backward()
            else:
                loss.backward()
        torch.cuda.synchronize()
        n = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
        out[name] = n
        if name == "opt":
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                opt.step()
            torch.cuda.synchronize()
            out["opt"] = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
        opt.zero_grad(set_to_none=True)
    return out


def host_times(m, ids, opt, reps=20):
    """Wall time of issuing forward / backward on a tiny input (GPU far ahead: host-bound)."""

    def fwd():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return m(input_ids=ids, labels=ids, use_cache=False).loss

    for _ in range(3):
        fwd().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    tf = tb = to = 0.0
    for _ in range(reps):
        t0 = time.perf_counter()
        loss = fwd()
        t1 = time.perf_counter()
        loss.backward()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        t3 = time.perf_counter()
        tf += t1 - t0
        tb += t2 - t1
        to += t3 - t2
    return tf / reps, tb / reps, to / reps


def step_time(m, ids, opt, reps=10):
    def st():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = m(input_ids=ids, labels=ids, use_cache=False).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):
        st()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        st()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / reps


for L in (6, 12):
    for ckpt in (False, True):
        m = build(L, ckpt)
        opt = torch.optim.AdamW(m.parameters(), lr=1e-5, fused=True)
        ids = torch.randint(0, 32000, (1, 32), device=dev)
        k = kernels(m, ids, opt)
        tf, tb, to = host_times(m, ids, opt)
        rec = dict(L=L, ckpt=ckpt, kernels=k, host_fwd_s=tf, fwd_bwd_sync_s=tb, opt_s=to)
        for b, s in ((1, 32), (2, 512), (8, 512), (32, 512)):
            ids2 = torch.randint(0, 32000, (b, s), device=dev)
            rec[f"step_b{b}_s{s}"] = step_time(m, ids2, opt)
        print(json.dumps(rec), flush=True)
        del m, opt
        torch.cuda.empty_cache()
