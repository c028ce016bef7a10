"""``llm-train``: one training step of a Llama-style decoder -- the estimator's reference loop.

PyTorch eager + transformers ``LlamaForCausalLM`` built from the preset's config on the device;
loss from ``labels=input_ids`` (transformers' own shift and fp32 cross-entropy);
``torch.optim.AdamW(fused=True)`` over the trainable parameters; ``zero_grad(set_to_none=True)``.

Precision: ``amp_bf16``/``amp_fp16`` = fp32 parameters under autocast (GradScaler for fp16);
``bf16``/``fp16`` = pure half parameters and optimizer state; ``fp32`` strict; ``tf32``.
LoRA: peft ``LoraConfig(r=rank, lora_alpha=2*rank, dropout 0, target_modules)`` on the frozen
base (peft's defaults otherwise: adapters kept in fp32). Gradient checkpointing: transformers'
non-reentrant checkpointing of every decoder layer.

Declared variants (vocabulary ``llm-train``):

- ``loop``: ``loss_only`` (default) keeps only ``model(...).loss``, so the output object and
  its logits are released before backward (the HF Trainer does the same);
  ``keeps_outputs`` is the hand-written loop ``out = model(**batch); out.loss.backward();
  opt.step()``: the output (logits ``B x S x V``) is held through backward and the optimizer
  step, and -- as a ``for`` loop's variable is -- until the next step's forward returns its
  replacement.
- ``optimizer_impl``: ``fused`` (default), ``foreach``, ``forloop`` (``suite.common.adamw``).

Memory: besides the peaks over the timed steps, one more steady-state step is run after them
with the peak statistics reset just before ``optimizer.step()``:
``optimizer_step_peak_allocated_bytes`` is the allocator peak inside the optimizer step
(CUDA only).
"""

from __future__ import annotations

from typing import Any

from service.agent.suite.common import (
    Context,
    OptimizerStepPeak,
    Skip,
    adamw,
    autocast,
    backward_and_step,
    grad_scaler,
    importable,
    measure,
    param_dtype,
    result,
    set_precision_flags,
    tokens,
)
from service.agent.suite.llm_common import build_model, llama_config


def run(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    precision = params["precision"]
    bs = int(params["batch_size"])
    seq = int(params["seq_len"])
    if params.get("sharding", "none") != "none" or int(params.get("gpu_count", 1)) != 1:
        raise Skip("multi-GPU llm-train is not implemented by this agent version")
    if params.get("optimizer", "adamw") != "adamw":
        raise Skip("only the AdamW reference loop is implemented")
    if params.get("finetune", "full") == "qlora":
        raise Skip("QLoRA needs bitsandbytes; not implemented by this agent version")
    if int(params.get("global_batch", bs)) not in (0, bs):
        raise Skip("gradient accumulation (global_batch > batch_size) is not implemented")
    set_precision_flags(ctx, precision)
    dtype = param_dtype(precision)

    config = llama_config(
        ctx, ctx.options["architecture"], attention=params.get("attention", "sdpa"), max_len=seq
    )
    ctx.flags["attention_implementation"] = params.get("attention", "sdpa")
    model = build_model(ctx, config, dtype)
    if params.get("gradient_checkpointing"):
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if params.get("finetune", "full") == "lora":
        peft = importable("peft")
        LoraConfig, get_peft_model = peft.LoraConfig, peft.get_peft_model

        rank = int(params.get("lora_rank") or 16)
        targets = [
            t for t in str(params.get("lora_targets") or "q_proj,k_proj,v_proj,o_proj").split(",") if t
        ]
        model = get_peft_model(
            model, LoraConfig(r=rank, lora_alpha=2 * rank, lora_dropout=0.0, target_modules=targets)
        )
    model.train()
    trainable = [p for p in model.parameters() if p.requires_grad]
    if not trainable:
        raise Skip("no trainable parameters")
    opt = adamw(ctx, trainable, str(params.get("optimizer_impl") or "fused"))
    scaler = grad_scaler(ctx, precision)
    ac = autocast(ctx, precision)
    ids = tokens(ctx, config.vocab_size, bs, seq)
    opt_peak = OptimizerStepPeak(ctx)
    loop = str(params.get("loop") or "loss_only")
    if loop not in ("loss_only", "keeps_outputs"):
        raise Skip(f"loop {loop!r} is not implemented")
    held: dict[str, Any] = {}

    def step() -> None:
        if loop == "keeps_outputs":
            with ac:
                out = model(input_ids=ids, labels=ids, use_cache=False)
            held["out"] = out  # the previous step's output was alive until now, as in a for loop
            backward_and_step(out.loss, opt, scaler, opt_peak)
        else:
            with ac:
                loss = model(input_ids=ids, labels=ids, use_cache=False).loss
            backward_and_step(loss, opt, scaler, opt_peak)

    m = measure(ctx, step)
    opt_peak.arm()
    if opt_peak.armed:
        import torch

        try:
            step()  # the same steady-state step once more; only its optimizer step's peak is read
        except torch.OutOfMemoryError:  # the timed steps ran: keep them, report no optimizer-step peak
            opt_peak.value = None
    return result(
        m,
        metrics={"throughput": bs * seq / m.median_s, "optimizer_step_peak_allocated_bytes": opt_peak.value},
    )
