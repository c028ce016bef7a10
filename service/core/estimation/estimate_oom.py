"""What a training answer that does not fit says: that it would run out of memory, and the cheap
alternatives the caller did not rule out that would fit; and what one that fits with less room
than its largest allocation says (:func:`service.core.estimation.estimate.estimate`)."""

from __future__ import annotations

from dataclasses import replace

from service.core.catalog.decoder import DecoderSpec
from service.core.estimation.estimate_answers import MemoryAnswer, Notice
from service.core.estimation.memory import MemoryEstimate, TrainConfig, estimate_training
from service.core.estimation.memory_training import loss_vocab

__all__ = ["does_not_fit", "largest_request_bytes", "tight_for_largest_request", "what_if"]


def does_not_fit(memory: MemoryAnswer, usable: int) -> Notice:
    """A training step that runs out of memory still gets a time (what it would take where it
    fitted, for comparison): the reader is told it would not run."""
    need = round(memory.estimate.fit_bytes / 2**30, 1)
    have = round(usable / 2**30, 1)
    if memory.estimate.fit_bytes <= usable:  # the measurement ran out of memory, not the model
        return Notice(
            "does_not_fit",
            f"it ran out of memory where this configuration was measured, though the model's upper end is "
            f"{need} GiB per GPU of the {have} GiB usable; the time is what it would take if it fitted",
            {"modelled_gib": need, "usable_gib": have},
        )
    return Notice(
        "does_not_fit",
        f"the configuration needs {need} GiB per GPU at the band's upper end, over the {have} GiB "
        "usable: it runs out of memory; the time is what it would take if it fitted",
        {"needed_gib": need, "usable_gib": have},
    )


def what_if(c: TrainConfig, mem: MemoryEstimate, usable: int) -> list[Notice]:
    """Cheap alternatives the caller did not rule out, for a training job that does not fit:
    FSDP's mixed-precision policy instead of autocast over FSDP shards (which keeps every bf16
    weight cast, unsharded, until autocast exits) and the fused AdamW instead of foreach/forloop
    when the optimizer step is the peak."""
    out: list[Notice] = []
    if c.sharding == "fsdp" and c.mixed_precision == "autocast" and c.precision.startswith("amp_"):
        alt = estimate_training(replace(c, mixed_precision="fsdp_policy"))
        if alt.fits(usable):
            out.append(
                Notice(
                    "try_fsdp_mixed_precision_policy",
                    (
                        "with FSDP MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32) instead of torch.autocast, "
                        f"{alt.fit_bytes / 2**30:.1f} GiB per GPU at the band's upper end: it fits "
                        "(autocast keeps the whole model's bf16 weight casts until it exits; the policy casts one "
                        "gathered layer at a time)"
                    ),
                    {"needed_gib": round(alt.fit_bytes / 2**30, 1)},
                )
            )
    if (
        mem.peak_phase == "optimizer-step"
        and c.optimizer == "adamw"
        and c.optimizer_impl != "fused"
        and c.sharding not in ("zero1", "zero2", "zero3")
    ):
        # fused AdamW changes only the optimizer step: drop its temporaries
        temp = mem.components.get("optimizer_step_temporaries", 0)
        alt_peak = max(
            [v for k, v in mem.phases.items() if k != "optimizer-step"]
            + [mem.phases["optimizer-step"] - temp]
        )
        if mem.fits_with_peak(alt_peak, usable):
            out.append(
                Notice(
                    "try_fused_optimizer",
                    (
                        f"the {c.optimizer_impl} AdamW step is the peak ({temp / 2**30:.1f} GiB of step temporaries); "
                        "torch.optim.AdamW(..., fused=True) (HF Trainer: optim='adamw_torch_fused') needs "
                        f"{(mem.upper_scale * alt_peak + mem.upper_fixed) / 2**30:.1f} GiB at the band's upper end and fits"
                    ),
                    {
                        "impl": c.optimizer_impl,
                        "temporaries_gib": round(temp / 2**30, 1),
                        "needed_gib": round((mem.upper_scale * alt_peak + mem.upper_fixed) / 2**30, 1),
                    },
                )
            )
    return out


def largest_request_bytes(c: TrainConfig) -> float:
    """The step's largest single allocation: the logits the loss upcasts to fp32 (4 B x batch x
    sequence x the vocabulary a rank's loss holds; transformers' ``ForCausalLMLoss``), one block
    the caching allocator must find whole. Zero for encoders and CNNs (a layer's activations)."""
    m = c.model
    if not isinstance(m, DecoderSpec):
        return 0.0
    return 4.0 * c.batch_size * c.seq_len * loss_vocab(m, c, m.vocab_size / c.tensor_parallel)


def tight_for_largest_request(c: TrainConfig, memory: MemoryAnswer) -> list[Notice]:
    """A step that fits with less room past the band's upper end than its largest allocation: the
    caching allocator needs that block whole, and whether a free one exists depends on how the
    step fragmented the pool. Measured on the H100 SXM (``data/benchmarks/h100-sxm-2026-12-07*``):
    the two runs the memory model said fit and that ran out of memory failed on exactly this
    request (15.66 and 7.83 GiB) with 15.2 and 11.8 GiB reserved but unallocated, failed so again
    when re-run, and ran with ``expandable_segments`` (peak 68.9 and 71.8 GiB;
    ``data/probes/h100-allocator-2026-12-07-*``); the rule flags
    both, and 4 of the 276 committed runs that ran (all on the H100; a warning, not a refusal --
    whether the block is found depends on the allocation history, which no input states)."""
    request = largest_request_bytes(c)
    if not memory.fits or request <= memory.headroom_bytes:
        return []
    need, room = round(request / 2**30, 1), round(max(memory.headroom_bytes, 0) / 2**30, 1)
    return [
        Notice(
            "tight_for_largest_request",
            f"fits, but the loss's fp32 logits are one {need} GiB allocation and only {room} GiB is left "
            "at the band's upper end: the allocator needs that block whole, and a fragmented pool may not "
            "have it (out of memory with the rest free); PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
            "avoids that, a smaller micro-batch shrinks the block",
            {"request_gib": need, "headroom_gib": room},
        )
    ]
