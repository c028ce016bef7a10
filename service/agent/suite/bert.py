"""``bert-large-train`` / ``bert-large-infer``: BERT-Large masked LM on synthetic tokens.

Built from ``BertConfig`` (24 layers, hidden 1024, 16 heads, FFN 4096, vocabulary 30522,
512 positions; SDPA attention) -- no download. The model is ``BertForMaskedLM`` in both
workloads (the shape ``service.core.catalog.models`` counts for ``bert-large``).

Training: 15% of positions carry labels (the rest -100), fused AdamW. Inference: ``eval()``
under ``torch.inference_mode()``, the full forward with the MLM head (logits ``B x S x V``),
no labels, as ``resnet50-infer`` does for ResNet-50. Precision: ``amp_*`` autocast over fp32
parameters (GradScaler for fp16 training); ``bf16``/``fp16`` pure half parameters;
``fp32`` strict; ``tf32``.
"""

from __future__ import annotations

from typing import Any

from service.agent.suite.common import (
    Context,
    autocast,
    backward_and_step,
    fused_adamw,
    grad_scaler,
    importable,
    measure,
    param_dtype,
    result,
    set_precision_flags,
    tokens,
)


def run(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    import torch

    transformers = importable("transformers")
    BertConfig, BertForMaskedLM = transformers.BertConfig, transformers.BertForMaskedLM

    workload = ctx.options.get("workload", "bert-large-train")
    precision = params["precision"]
    bs = int(params["batch_size"])
    seq = int(params["seq_len"])
    set_precision_flags(ctx, precision)
    pdtype = param_dtype(precision)
    if ctx.smoke:
        cfg = BertConfig(
            vocab_size=512,
            hidden_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=128,
            max_position_embeddings=max(512, seq),
            attn_implementation="sdpa",
        )
    else:
        cfg = BertConfig(
            vocab_size=30522,
            hidden_size=1024,
            num_hidden_layers=24,
            num_attention_heads=16,
            intermediate_size=4096,
            max_position_embeddings=max(512, seq),
            attn_implementation="sdpa",
        )
    with torch.device(ctx.device):
        model = BertForMaskedLM(cfg).to(dtype=pdtype)
    ids = tokens(ctx, cfg.vocab_size, bs, seq)
    ac = autocast(ctx, precision)

    if workload == "bert-large-infer":
        model.eval()

        def step() -> None:
            with torch.inference_mode(), ac:
                model(input_ids=ids)

    else:
        model.train()
        labels = ids.clone()
        labels[torch.rand(bs, seq, device=ctx.device) >= 0.15] = -100
        opt = fused_adamw(ctx, model.parameters())
        scaler = grad_scaler(ctx, precision)

        def step() -> None:
            with ac:
                loss = model(input_ids=ids, labels=labels).loss
            backward_and_step(loss, opt, scaler)

    m = measure(ctx, step)
    return result(m, metrics={"throughput": bs / m.median_s})
