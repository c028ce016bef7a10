"""A fixed cost per MoE layer per iteration of a continuous-batching engine (issue 28): the part
of an MoE layer that the byte and FLOP terms of
:func:`~service.core.estimation.serving_engines.iteration_s` do not see.

Physics. Besides streaming the touched experts' weights and running their GEMMs (both in the
iteration already), every MoE layer of every iteration runs a chain of dependent kernels whose
duration does not shrink with the batch at decode sizes: the router GEMM (``h x E``), top-k and
softmax (grouped top-k for DeepSeek-V3), the permute that sorts tokens by expert and builds the
per-expert offsets, activation quantisation (FP8 block scales), two grouped GEMMs over the
experts (each a launch over ``E`` problems), the activation, and the unpermute / finalize that
sums the ``k`` weighted outputs and the shared expert. Each kernel costs at least a few µs even
inside a CUDA graph, so a priori some tens of µs per MoE layer, the same on every GPU (launch and
synchronisation latency, not datasheet throughput). Under expert parallelism the dispatch and
combine all-to-alls add two link latencies per MoE layer on top (``serving_ep``; they reuse the
fitted all-reduce latency ``allreduce_s``).

The constant. :data:`MOE_LAYER_S` is the one fitted figure: chosen on the five SemiAnalysis
InferenceX DeepSeek-R1 FP8 rows on 8 x H200 with TensorRT-LLM (TP8, 1024/1024, concurrency
4-64; ``benchmarks/serving_published_28_throughput.py``), named as the fit subset before the
other rows were scored with it, minimising the squared log error of output tokens/s per GPU on
a 5 µs grid: 145 µs. That is about three times the kernel count above: it also holds whatever
else these engines spend per layer on these models that the byte and FLOP terms miss (on
DeepSeek-R1, 58 of 61 layers are MoE, so MLA's extra small kernels -- latent projections, the
RoPE split, the absorbed BMMs -- cannot be told apart from the MoE ones). In-sample and held-out
figures: ``benchmarks/fit_moe_floor.py`` (which refits it) and ``benchmarks/validate_serving.py``
section 6.

It is GPU-independent (an additive latency), so it never makes a GPU with a higher peak or
bandwidth slower than one with a lower; dense models pay nothing. Engine versions differ: the
InferenceX history shows the same MI355X SGLang setup at 25.0, 22.5 and 10.6 ms TPOT over three
months, so the constant describes the engine versions of the fit rows (TensorRT-LLM of late
2025), not a law. The hf-transformers path has its own eager per-expert kernel count
(``serving.MOE_EAGER_INFER_KERNELS``) and does not use this.
"""

from __future__ import annotations

from service.core.catalog.decoder import DecoderSpec

__all__ = ["MOE_LAYER_S", "moe_floor_s"]

MOE_LAYER_S = 145e-6
"""Seconds per MoE layer per iteration, the same on every GPU and engine (module docstring:
fitted on the InferenceX H200 TensorRT-LLM DeepSeek-R1 rows, in-sample MAPE 1.2 %)."""


def moe_floor_s(m: DecoderSpec) -> float:
    """The fixed MoE cost of one iteration of ``m``: :data:`MOE_LAYER_S` per MoE layer (0 for a
    dense model)."""
    return MOE_LAYER_S * m.moe_layers if m.is_moe else 0.0
