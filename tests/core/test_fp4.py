"""FP4 weights and KV cache (issue 28, slice 3): bytes, where they run, and the property that
FP4 weights never take more memory than FP8."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from service.catalog.loader import load_shipped
from service.core.catalog.models import DecoderSpec, list_models
from service.core.catalog.specs import gpu_spec_from_doc
from service.core.estimation.fp4 import (
    MXFP4_BYTES_PER_ELEMENT,
    NVFP4_BYTES_PER_ELEMENT,
    fp4_refusal,
)
from service.core.estimation.memory import weight_bytes

CATALOG = {d["slug"]: gpu_spec_from_doc(d) for d in load_shipped().gpus}

DECODERS = [m for m in list_models() if isinstance(m, DecoderSpec)]


def test_block_scaled_bytes() -> None:
    assert NVFP4_BYTES_PER_ELEMENT == 0.5625  # 4-bit + an E4M3 scale per 16
    assert MXFP4_BYTES_PER_ELEMENT == 0.53125  # 4-bit + an E8M0 scale per 32


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(DECODERS),
    st.sampled_from(("nvfp4", "mxfp4")),
    st.sampled_from((2, 4)),
    st.integers(min_value=1, max_value=64),
    st.integers(min_value=1, max_value=4096),
)
def test_fp4_weights_never_use_more_memory_than_fp8(
    m: DecoderSpec, fmt: str, compute_bytes: int, layers: int, hidden_64: int
) -> None:
    """Over every decoder preset and arbitrary depths/widths of it: FP4 <= FP8 < 16-bit."""
    from dataclasses import replace

    heads = m.num_heads
    h = max(heads, (hidden_64 * 64 // heads) * heads)
    spec = replace(m, num_layers=layers, hidden_size=h)
    fp4 = weight_bytes(spec, fmt, compute_bytes)
    assert 0 < fp4 <= weight_bytes(spec, "fp8", compute_bytes) <= weight_bytes(spec, "none", compute_bytes)


def test_where_fp4_runs() -> None:
    b200, h200, v100 = CATALOG["nvidia-b200"], CATALOG["nvidia-h200-sxm"], CATALOG["nvidia-v100-sxm2-16gb"]
    assert fp4_refusal("nvfp4", "auto", "vllm", b200) is None
    field, reason = fp4_refusal("nvfp4", "auto", "vllm", h200) or ("", "")
    assert field == "quant_method" and "Blackwell" in reason and "Hopper" in reason
    assert fp4_refusal("mxfp4", "auto", "vllm", h200) is None  # weight-only, as gpt-oss runs on H100
    assert (fp4_refusal("mxfp4", "auto", "vllm", v100) or ("",))[0] == "quant_method"
    assert fp4_refusal("fp8", "nvfp4", "tensorrt-llm", b200) is None
    assert (fp4_refusal("fp8", "nvfp4", "vllm", h200) or ("",))[0] == "kv_cache_dtype"
    assert (fp4_refusal("none", "nvfp4", "hf-transformers", b200) or ("",))[0] == "kv_cache_dtype"
