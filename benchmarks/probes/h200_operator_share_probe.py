"""Operator-class shares of CNN and BERT training steps on one CUDA GPU (issue 27).

Run on the lent H200: ``OUT=... python3 benchmarks/probes/h200_operator_share_probe.py``. Models are
built from configs (torchvision ``resnet50(weights=None)``, transformers ``BertConfig`` at
BERT-large shape): nothing is downloaded. Per case one training step (forward, backward, SGD /
AdamW) is profiled with ``torch.profiler`` after warm-up, and every CUDA kernel is put in one
class by its name:

* ``compute``: GEMM and convolution kernels (cuBLAS/cuBLASLt ``gemm``/``nvjet``/``sm90_xmma``,
  CUTLASS, cuDNN ``conv``/``fprop``/``dgrad``/``wgrad``, flash / fused attention);
* ``memory``: everything else (elementwise, batch/layer norm, softmax, reductions, optimizer,
  copies, fills);

with the synchronised step time (median of timed steps) beside the summed kernel time (the
difference is time the GPU waits on the host). One JSON line per case in
``$OUT/operator-shares.jsonl``.
"""

from __future__ import annotations

import json
import os
import statistics
import time

import torch

OUT = os.environ.get("OUT", ".")
dev = torch.device("cuda")
COMPUTE_KEYS = (
    "gemm",
    "nvjet",
    "xmma",
    "cutlass",
    "conv",
    "fprop",
    "dgrad",
    "wgrad",
    "flash",
    "fmha",
    "sm90_",
    "implicit",
    "winograd",
)


def klass(name: str) -> str:
    n = name.lower()
    light = ("elementwise", "vectorized", "reduce", "norm", "softmax", "copy", "fill")
    if any(k in n for k in light) and not any(k in n for k in ("gemm", "conv", "xmma", "nvjet", "cutlass")):
        return "memory"
    return "compute" if any(k in n for k in COMPUTE_KEYS) else "memory"


def sync() -> None:
    torch.cuda.synchronize()


def profile_step(step, label: str, extra: dict) -> dict:  # type: ignore[no-untyped-def]
    from torch.profiler import ProfilerActivity, profile

    for _ in range(5):
        step()
    sync()
    times = []
    for _ in range(10):
        t = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - t)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        sync()
    by: dict[str, float] = {"compute": 0.0, "memory": 0.0}
    names: dict[str, list[float]] = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            d = e.time_range.elapsed_us() * 1e-6
            by[klass(e.name)] += d
            k = names.setdefault(e.name[:100], [0, 0.0])
            k[0] += 1
            k[1] += d
    top = sorted(names.items(), key=lambda kv: -kv[1][1])[:25]
    rec = {
        "case": label,
        **extra,
        "step_s": statistics.median(times),
        "compute_s": by["compute"],
        "memory_s": by["memory"],
        "top": [[k, v[0], round(v[1], 6), klass(k)] for k, v in top],
    }
    with open(os.path.join(OUT, "operator-shares.jsonl"), "a") as f:
        f.write(json.dumps(rec) + "\n")
    print(
        label,
        {k: (round(v, 5) if isinstance(v, float) else v) for k, v in rec.items() if k != "top"},
        flush=True,
    )
    return rec


def resnet(batch: int, precision: str) -> None:
    import torchvision

    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.benchmark = True
    m = torchvision.models.resnet50(weights=None).to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(batch, 3, 224, 224, device=dev).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (batch,), device=dev)
    lossf = torch.nn.CrossEntropyLoss()

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss = lossf(m(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    profile_step(
        step,
        f"resnet50-train-{precision}-b{batch}",
        {"workload": "resnet50-train", "precision": precision, "batch": batch},
    )

    m.eval()

    @torch.inference_mode()
    def infer() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16"):
            m(x)

    profile_step(
        infer,
        f"resnet50-infer-{precision}-b{batch}",
        {"workload": "resnet50-infer", "precision": precision, "batch": batch},
    )


def bert(batch: int, seq: int, precision: str) -> None:
    from transformers import BertConfig, BertForQuestionAnswering

    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision == "tf32"
    cfg = BertConfig(
        hidden_size=1024,
        num_hidden_layers=24,
        num_attention_heads=16,
        intermediate_size=4096,
        attn_implementation="sdpa",
    )
    m = BertForQuestionAnswering(cfg).to(dev)
    m.train()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-5, fused=True)
    ids = torch.randint(0, cfg.vocab_size, (batch, seq), device=dev)
    sp = torch.randint(0, seq, (batch,), device=dev)

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss = m(input_ids=ids, start_positions=sp, end_positions=sp).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    profile_step(
        step,
        f"bert-large-squad-{precision}-b{batch}-s{seq}",
        {"workload": "bert-large-squad-finetune", "precision": precision, "batch": batch, "seq": seq},
    )


if __name__ == "__main__":
    with open(os.path.join(OUT, "env.json"), "w") as f:
        json.dump(
            {
                "torch": torch.__version__,
                "cuda": torch.version.cuda,
                "cudnn": torch.backends.cudnn.version(),
                "gpu": torch.cuda.get_device_name(),
            },
            f,
        )
    for prec in ("bf16", "tf32"):
        for b in (64, 256):
            resnet(b, prec)
        for b in (8, 32):
            bert(b, 384, prec)
        torch.cuda.empty_cache()
