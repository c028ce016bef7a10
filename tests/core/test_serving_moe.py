"""The fixed MoE cost per layer per iteration (``serving_moe``): an MoE step pays it at every
batch, a dense step does not move, and it never makes a faster GPU slower."""

from __future__ import annotations

import math
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from service.catalog.loader import load_shipped
from service.core.catalog.models import DecoderSpec, get_model
from service.core.catalog.specs import gpu_spec_from_doc
from service.core.estimation.memory import InferenceConfig
from service.core.estimation.serving import CONTINUOUS_EFFICIENCIES, serve_concurrency
from service.core.estimation.serving_engines import deployment, iteration_s
from service.core.estimation.serving_moe import MOE_LAYER_S

CATALOG = {d["slug"]: gpu_spec_from_doc(d) for d in load_shipped().gpus}
E = CONTINUOUS_EFFICIENCIES


def _m(name: str) -> DecoderSpec:
    m = get_model(name)
    assert isinstance(m, DecoderSpec)
    return m


def _cfg(model: str, tp: int, ep: bool = False, quant: str = "fp8", **kw: object) -> InferenceConfig:
    return InferenceConfig(
        model=_m(model),
        quant_method=quant,
        engine="tensorrt-llm",
        tensor_parallel=tp,
        expert_parallel=ep,
        input_len=1024,
        output_len=1024,
        **kw,  # type: ignore[arg-type]
    )


MOE = [
    ("deepseek-r1", 8, False),
    ("deepseek-r1", 8, True),
    ("qwen3-235b-a22b", 4, True),
    ("mixtral-8x7b", 2, False),
]


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(MOE),
    st.floats(min_value=1.0, max_value=512.0),
    st.floats(min_value=1.0, max_value=32768.0),
)
def test_an_moe_decode_step_costs_at_least_the_per_layer_dispatch_floor(moe, n: float, ctx: float) -> None:  # type: ignore[no-untyped-def]
    name, tp, ep = moe
    d = deployment(_cfg(name, tp, ep), CATALOG["nvidia-h200-sxm"])
    floor = MOE_LAYER_S * d.model.moe_layers
    assert d.moe_floor_s == floor > 0
    step = iteration_s(d, E, n, ctx)
    latency = E.step_s + floor + (d.ep_a2a_count * E.allreduce_s if ep else 0.0)
    assert step >= latency
    # the floor is a fixed latency: the same at every batch and context, on top of the rest
    without = iteration_s(replace(d, moe_floor_s=0.0), E, n, ctx)
    assert abs(step - without - floor) <= 1e-12


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(("llama3.1-8b", "llama3.1-70b", "qwen2.5-7b")), st.floats(min_value=1.0, max_value=512.0)
)
def test_a_dense_step_is_unchanged(name: str, n: float) -> None:
    """A dense model has no MoE floor, and its step is the rest of the iteration alone."""
    d = deployment(_cfg(name, 2), CATALOG["nvidia-h200-sxm"])
    assert d.moe_floor_s == 0.0
    with_floor = iteration_s(replace(d, moe_floor_s=MOE_LAYER_S), E, n, 2048.0)
    assert math.isclose(iteration_s(d, E, n, 2048.0), with_floor - MOE_LAYER_S, rel_tol=1e-12)


def test_the_floor_never_makes_a_faster_gpu_slower() -> None:
    """B200 has more bandwidth and peak than H200: it stays at least as fast at every
    concurrency, DeepSeek-R1 FP8 on 8 GPUs (the floor is the same on both)."""
    for conc in (1, 4, 16, 64, 256):
        c = _cfg("deepseek-r1", 8, batch_size=conc)
        h200 = serve_concurrency(c, CATALOG["nvidia-h200-sxm"])
        b200 = serve_concurrency(c, CATALOG["nvidia-b200"])
        assert b200.tpot_s <= h200.tpot_s
        assert b200.output_tokens_per_s >= h200.output_tokens_per_s
