"""The memory setting a serving engine runs with: SGLang's own pick per GPU and layout, a
request's stated setting, and the KV pool each leaves (``serving_memory``)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from service.catalog.loader import load_shipped
from service.core.catalog.models import DecoderSpec, get_model
from service.core.catalog.specs import gpu_spec_from_doc
from service.core.errors import InvalidConfiguration
from service.core.estimation.memory import CUDA_CONTEXT_BYTES, InferenceConfig
from service.core.estimation.serving import deployment
from service.core.estimation.serving_memory import (
    SGLANG_FALLBACK_FRACTION,
    sglang_mem_fraction_static,
)
from service.core.estimation.serving_queue import kv_capacity_tokens

CATALOG = {d["slug"]: gpu_spec_from_doc(d) for d in load_shipped().gpus}


def _sglang(total_mib: float, reserved_gib: float) -> float:
    """SGLang's ``round((gpu_mem - reserved_mem) / gpu_mem, 3)`` with its reserve in GiB."""
    return round((total_mib - reserved_gib * 1024) / total_mib, 3)


@pytest.mark.parametrize(
    ("slug", "total_mib", "reserve_gib_by_parallel"),
    [
        # nvidia-smi memory.total of each part; SGLang's reserve tiers (server_args.py)
        ("nvidia-h100-sxm", 81559, lambda p: 9.5 + p / 2),
        ("nvidia-a100-sxm4-40gb", 40960, lambda p: 9.5 + p / 2),
        ("nvidia-h200-sxm", 143771, lambda p: 12 + p / 2),
        ("nvidia-b200", 183359, lambda p: 32.0),
        ("amd-mi300x", 196288, lambda p: 32.0),
        ("nvidia-l4", 23034, lambda p: 2.8 + p / 10),
    ],
)
def test_sglang_picks_its_fraction_from_the_gpu_and_the_layout(
    slug: str, total_mib: int, reserve_gib_by_parallel: object
) -> None:
    gpu = CATALOG[slug]
    assert gpu.fit_memory_bytes == total_mib * 2**20
    for parallel in (1, 2, 4, 8):
        expected = _sglang(total_mib, reserve_gib_by_parallel(parallel))  # type: ignore[operator]
        assert sglang_mem_fraction_static(gpu, parallel) == expected


def test_the_documented_fractions_and_their_order() -> None:
    """What the engine note states: about 0.87 on one H100, 0.83 on eight, 0.91 / 0.89 on the
    H200, 0.82 on the B200; a larger group reserves more (its graphs hold more), data-parallel
    attention and speculative decoding reserve more again."""
    h100, h200, b200 = CATALOG["nvidia-h100-sxm"], CATALOG["nvidia-h200-sxm"], CATALOG["nvidia-b200"]
    assert sglang_mem_fraction_static(h100, 1) == 0.874
    assert sglang_mem_fraction_static(h100, 8) == 0.831
    assert (sglang_mem_fraction_static(h200, 1), sglang_mem_fraction_static(h200, 8)) == (0.911, 0.886)
    assert sglang_mem_fraction_static(b200, 4) == 0.821
    base = sglang_mem_fraction_static(h200, 8)
    assert sglang_mem_fraction_static(h200, 8, dp_attention=True) == _sglang(143771, 16 + 4)
    assert sglang_mem_fraction_static(h200, 8, speculative=True) == _sglang(143771, 16 + 2)
    assert sglang_mem_fraction_static(h200, 8, dp_attention=True, speculative=True) < base
    unknown = replace(h200, memory_bytes=None, usable_memory_bytes=None)
    assert sglang_mem_fraction_static(unknown, 1) == SGLANG_FALLBACK_FRACTION


def _llama8b(engine: str, fraction: float | None = None) -> InferenceConfig:
    model = get_model("llama3.1-8b")
    assert isinstance(model, DecoderSpec)
    return InferenceConfig(
        model=model, engine=engine, input_len=2048, output_len=512, memory_fraction=fraction
    )


def test_sglang_pool_is_its_fraction_of_the_memory_free_at_start_less_the_weights() -> None:
    """``ModelRunner.profile_max_num_token``: ``available - total x (1 - fraction)`` with the
    weights loaded; activations and CUDA graphs live in the reserve, outside the fraction."""
    h100 = CATALOG["nvidia-h100-sxm"]
    d = deployment(_llama8b("sglang"), h100)
    assert d.memory_fraction == 0.874
    assert any("sglang memory setting 0.874 (SGLang's own pick" in n for n in d.notes)
    usable = float(h100.fit_memory_bytes or 0)
    weights = d.w_dense + d.w_experts
    expected = (0.874 * (usable - CUDA_CONTEXT_BYTES) - weights) / d.kv_per_token
    assert kv_capacity_tokens(d, 8192) == pytest.approx(expected, rel=1e-12)
    stated = deployment(_llama8b("sglang", 0.95), h100)
    assert stated.memory_fraction == 0.95
    assert any("memory setting 0.95 (as stated)" in n for n in stated.notes)
    gained = (0.95 - 0.874) * (usable - CUDA_CONTEXT_BYTES) / d.kv_per_token
    assert kv_capacity_tokens(stated, 8192) - kv_capacity_tokens(d, 8192) == pytest.approx(gained, rel=1e-9)


@pytest.mark.parametrize("engine", ["vllm", "tensorrt-llm"])
def test_a_stated_setting_replaces_the_engine_default(engine: str) -> None:
    """vLLM's ``gpu_memory_utilization`` and TensorRT-LLM's ``kv_cache_free_gpu_mem_fraction``
    default to 0.9; stated, the pool grows with the setting, and no note appears for the default."""
    h100 = CATALOG["nvidia-h100-sxm"]
    default, low, high = (deployment(_llama8b(engine, f), h100) for f in (None, 0.5, 0.95))
    assert default.memory_fraction == 0.9 and not any("memory setting" in n for n in default.notes)
    tokens = [kv_capacity_tokens(d, 8192) for d in (low, default, high)]
    assert tokens[0] < tokens[1] < tokens[2]


@pytest.mark.parametrize("fraction", [0.0, -0.1, 1.01])
def test_a_setting_outside_zero_to_one_is_refused(fraction: float) -> None:
    with pytest.raises(InvalidConfiguration) as err:
        _llama8b("vllm", fraction)
    assert err.value.field == "memory_fraction"
