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


def test_fp4_gemms_run_at_the_fp4_peak_where_it_is_sourced() -> None:
    """The B300's FP4 tensor cores (14,000 TFLOPS dense) are its difference from the B200 (9,000;
    both 4,500 at FP8): a long NVFP4 prompt fills 1.1x+ faster on it (attention stays 16-bit; MLPerf
    Inference puts Blackwell Ultra's FP4 kernels at a lower fraction of their peak than the B200's,
    the cross-source architecture factors), an FP8 one no faster. A Blackwell card without a
    sourced FP4 peak stands in with its FP8 peak and says so."""
    from service.core.estimation.calibration import CalibrationSet
    from service.core.estimation.estimate import JobSpec, build_job, estimate
    from service.core.estimation.serving import gemm_format

    def ttft_s(slug: str, quant: str) -> float:
        job = JobSpec(
            mode="inference",
            model="llama2-70b",
            engine="tensorrt-llm",
            quant_method=quant,
            input_len=8192,
            output_len=128,
            concurrency=1,
            gpu_count=1,
            tensor_parallel=1,
        )
        serving = estimate(CATALOG[slug], build_job(job), CalibrationSet()).serving
        assert serving is not None
        return float(serving.ttft_s)

    assert ttft_s("nvidia-b200", "nvfp4") / ttft_s("nvidia-b300", "nvfp4") > 1.1
    assert 0.9 < ttft_s("nvidia-b200", "fp8") / ttft_s("nvidia-b300", "fp8") < 1.1
    b300 = CATALOG["nvidia-b300"]
    job = build_job(JobSpec(mode="inference", model="llama2-70b", quant_method="nvfp4", gpu_count=1))
    assert gemm_format(job.config, b300)[0] == "fp4"  # type: ignore[arg-type]
    rtx5090 = CATALOG["nvidia-rtx-5090"]
    key, w8a8, note = gemm_format(job.config, rtx5090)  # type: ignore[arg-type]
    assert (key, w8a8) == ("fp8", True) and note and "FP8 peak" in note
