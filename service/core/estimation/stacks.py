"""Training stacks: what an optimised software stack changes in the step-time model (issue 25).

The reference loop (``hf-eager``) is a Hugging Face transformers model run by eager PyTorch.
Other stacks run the same arithmetic with fewer bytes moved and fewer kernels launched; each
effect below is a factor on a term of :func:`service.core.estimation.step_model._step` and
changes step time only (memory stays the reference loop's, stated in the answer, except that a
vocab-parallel loss keeps each tensor-parallel rank's logits to its shard, ``vocab_parallel_loss``):

* ``ew_traffic``: elementwise bytes (norms, RoPE, SwiGLU, residual adds, casts) relative to
  eager PyTorch, which reads and writes every intermediate;
* ``loss_traffic``: bytes of the LM head's loss (eager: fp32 logits copy, ``log_softmax``
  saved, its gradient; a fused cross-entropy streams the logits once);
* ``cast_traffic``: per-micro-step autocast weight casts (a stack holding bf16 weights with
  fp32 master copies in its optimizer casts once per step, in the optimizer);
* ``launches``: kernels launched per layer relative to eager;
* ``overlap``: fraction of gradient communication hidden behind the backward;
* ``mm``: GEMM efficiency relative to the calibrated eager GEMMs (fitted, see below).

Sources: ``compiled`` (``torch.compile``, inductor, no CUDA graphs) fuses chains of pointwise
kernels and norms into one kernel each, about halving elementwise traffic and leaving about a
third of the launches (structure only: no published result that states this stack is in the
repository, so its factors are spec, not fitted). Checked held out on the lent H200
(``data/probes/h200-compiled-2026-12-04.jsonl``: ``torch.compile`` against eager on 350M, 1.1B
and 3B Llama shapes, 2k-16k tokens per step): the modelled speed-up is within 7.8 % (worst
14 %) of the measured 0.43-0.83x; peak memory fell 15-28 % under compile, which the estimator
does not credit (memory stays the eager loop's: conservative). ``megatron`` (Megatron-Core / NeMo /
Transformer Engine and stacks like TinyLlama's lit-gpt with fused RMSNorm, rotary, SwiGLU and
cross-entropy kernels from flash-attn, FSDP) fuses each of those into one pass and overlaps
gradient reduce-scatter with the backward; its GEMM factor ``mm`` is fitted on the one
published pre-training result in hand that states this stack and runs in 16-bit:
TinyLlama-1.1B on 16 x A100-40GB at 24,000 tokens/s/GPU (TinyLlama repository README,
"fused kernels, FSDP, flash-attention"), see :data:`MEGATRON_MM_FIT`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["STACK_EFFECTS", "StackEffect", "stack_note"]


@dataclass(frozen=True, slots=True)
class StackEffect:
    """Factors a stack applies to the eager step model's terms (module docstring)."""

    ew_traffic: float = 1.0
    loss_traffic: float = 1.0
    cast_traffic: float = 1.0
    launches: float = 1.0
    overlap: float = 0.0
    mm: float = 1.0
    vocab_parallel_loss: bool = False
    """Under tensor parallelism, whether the loss runs on each rank's vocabulary shard
    (Megatron-Core's vocab-parallel cross-entropy) rather than on the whole vocabulary's logits:
    transformers' tensor-parallel plan gathers the LM head's output onto every rank
    (``LlamaForCausalLM._tp_plan = {"lm_head": "colwise_rep"}``) and its loss upcasts all of it."""
    defaults: tuple[str, ...] = ()
    """Inputs whose default the stack changes, as the answer states them."""
    source: str = "spec"


MEGATRON_MM_FIT = 1.13
"""GEMM efficiency of a fused pre-training stack relative to the calibrated eager loop: the one
factor fitted, on TinyLlama-1.1B pre-training on 16 x A100-40GB (24,000 tokens/s/GPU, taken as
micro-batch 8 x 2048, global batch 1,024 sequences, FSDP over 2 nodes, bf16; TinyLlama README),
with the other factors held at their structural values and the efficiencies the H200 fit
transfers to the A100 (estimator 1.7.0: eager 17.8k tokens/s/GPU; megatron at 1.0: 22.0k; at
1.13: 24.0k). In-sample on one point: it reproduces that figure by construction; nothing here
validates it out of sample (the NeMo 25.11 rows in ``core/evidence/published`` are FP8, which
the training estimator does not model)."""

STACK_EFFECTS: Mapping[str, StackEffect] = {
    "hf-eager": StackEffect(source="reference loop"),
    "compiled": StackEffect(
        ew_traffic=0.5,
        loss_traffic=0.6,
        launches=0.35,
        source="spec: inductor fusion of pointwise chains and norms (structure only, not fitted)",
    ),
    "megatron": StackEffect(
        ew_traffic=0.35,
        loss_traffic=0.25,
        cast_traffic=0.0,
        launches=0.3,
        overlap=0.95,
        mm=MEGATRON_MM_FIT,
        vocab_parallel_loss=True,
        defaults=(
            "attention: flash attention (fused kernel) whatever attention says",
            "autocast weight casts: none per micro-step (bf16 weights, fp32 master copies in the optimizer)",
            "gradient reduce-scatter overlapped with the backward (95 %)",
        ),
        source="fitted: GEMM factor on TinyLlama-1.1B, 16 x A100-40GB, 24k tokens/s/GPU (TinyLlama README)",
    ),
}


def stack_note(stack: str) -> str:
    """The sentence an answer carries about the stack it assumed."""
    eff = STACK_EFFECTS[stack]
    if stack == "hf-eager":
        return "stack hf-eager: a Hugging Face transformers model in eager PyTorch (the reference loop)"
    return (
        f"stack {stack}: elementwise traffic x{eff.ew_traffic:g}, loss traffic x{eff.loss_traffic:g}, "
        f"kernel launches x{eff.launches:g}, GEMMs x{eff.mm:g} of the eager loop's ({eff.source}); "
        "memory is the reference loop's"
        + (", with logits sharded by vocabulary under tensor parallelism" if eff.vocab_parallel_loss else "")
    )
