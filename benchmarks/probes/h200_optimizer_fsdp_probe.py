"""Physics probe (issues 11/19; run on one CUDA GPU): optimizer-step temporaries by implementation, FSDP2 one-rank
layout (autocast vs MixedPrecisionPolicy), loop keeps_outputs. Prints one JSON line per case."""

import contextlib
import json
import os
import time

import torch
import torch.distributed as dist
from transformers import LlamaConfig, LlamaForCausalLM

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29533")
dist.init_process_group("nccl", rank=0, world_size=1)
dev = torch.device("cuda:0")
torch.cuda.set_device(dev)

SHAPES = {
    "350m": dict(
        hidden_size=1024,
        num_hidden_layers=24,
        num_attention_heads=16,
        num_key_value_heads=16,
        intermediate_size=2816,
        vocab_size=32000,
    ),
    "1b128k": dict(
        hidden_size=2048,
        num_hidden_layers=16,
        num_attention_heads=32,
        num_key_value_heads=8,
        intermediate_size=8192,
        vocab_size=128256,
        rope_theta=500000.0,
    ),
}


def build(shape, sharding, mp):
    cfg = LlamaConfig(
        **SHAPES[shape], max_position_embeddings=4096, tie_word_embeddings=False, attn_implementation="sdpa"
    )
    with torch.device(dev):
        model = LlamaForCausalLM(cfg)
    if sharding == "fsdp":
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        kw = {}
        if mp == "policy":
            kw["mp_policy"] = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        for layer in model.model.layers:
            fully_shard(layer, **kw)
        fully_shard(model, **kw)
    return model


def run(shape, sharding, mp, impl, loop, b, s, ckpt):
    torch.cuda.empty_cache()
    model = build(shape, sharding, mp)
    if ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    params = [p for p in model.parameters() if p.requires_grad]
    P = sum(p.numel() for p in params)
    kw = (
        {"fused": True}
        if impl == "fused"
        else ({"foreach": True, "fused": False} if impl == "foreach" else {"foreach": False, "fused": False})
    )
    opt = torch.optim.AdamW(params, lr=1e-5, **kw)
    ids = torch.randint(0, SHAPES[shape]["vocab_size"], (b, s), device=dev)
    use_ac = mp == "autocast"
    held = {}
    rec = {}

    def step(probe=False):
        ac = torch.autocast("cuda", dtype=torch.bfloat16) if use_ac else contextlib.nullcontext()
        with ac:
            out = model(input_ids=ids, labels=ids, use_cache=False)
        if loop == "keeps":
            held["out"] = out
            loss = out.loss
        else:
            loss = out.loss
            del out
        loss.backward()
        del loss
        if probe:
            torch.cuda.synchronize()
            rec["before_step"] = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
        opt.step()
        if probe:
            torch.cuda.synchronize()
            rec["step_peak"] = torch.cuda.max_memory_allocated()
            rec["after_step"] = torch.cuda.memory_allocated()
        opt.zero_grad(set_to_none=True)

    try:
        for _ in range(2):
            step()
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        for _ in range(2):
            step()
        torch.cuda.synchronize()
        dt = (time.perf_counter() - t0) / 2
        rec["peak"] = torch.cuda.max_memory_allocated()
        step(probe=True)
        status = "ok"
    except torch.OutOfMemoryError:
        status = "oom"
        dt = None
    print(
        json.dumps(
            dict(
                shape=shape,
                sharding=sharding,
                mp=mp,
                impl=impl,
                loop=loop,
                b=b,
                s=s,
                ckpt=ckpt,
                P=P,
                status=status,
                step_s=dt,
                **rec,
            )
        ),
        flush=True,
    )
    torch.cuda.empty_cache()


cases = []
for shape in ("350m", "1b128k"):
    for impl in ("fused", "foreach", "forloop"):
        cases.append((shape, "none", "autocast", impl, "loss", 4, 1024, False))
        cases.append((shape, "fsdp", "autocast", impl, "loss", 4, 1024, False))
        cases.append((shape, "fsdp", "policy", impl, "loss", 4, 1024, False))
    cases.append((shape, "none", "autocast", "fused", "keeps", 4, 1024, False))
    cases.append((shape, "none", "autocast", "fused", "loss", 4, 1024, True))
    cases.append((shape, "fsdp", "autocast", "fused", "loss", 4, 1024, True))
    cases.append((shape, "fsdp", "policy", "fused", "loss", 4, 1024, True))
    cases.append((shape, "none", "autocast", "fused", "keeps", 4, 1024, True))
for c in cases:
    run(*c)
dist.destroy_process_group()
