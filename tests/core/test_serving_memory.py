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
    kv_capacity_tokens,
    sglang_defaults,
    sglang_mem_fraction_static,
    smallest_memory_fraction,
)

CATALOG = {d["slug"]: gpu_spec_from_doc(d) for d in load_shipped().gpus}


def _sglang(total_mib: float, reserved_mib: float) -> float:
    """SGLang's ``round((gpu_mem - reserved_mem) / gpu_mem, 3)``, both in MiB."""
    return round((total_mib - reserved_mib) / total_mib, 3)


def _reserved(chunk: int, graph_bs: int, tp: int, big: bool) -> float:
    """SGLang 0.5's reserve: 512 + 1.5 x max(chunk, 2048) + 2 x graph batch + tp / 8 GiB, at
    least 10 GiB on a GPU over 60 GiB (``ServerArgs._handle_gpu_memory_settings``)."""
    r = 512 + 1.5 * max(chunk, 2048) + 2 * graph_bs + tp / 8 * 1024
    return max(r, 10 * 1024) if big else r


@pytest.mark.parametrize(
    ("slug", "total_mib", "chunk", "graph_bs"),
    [
        # nvidia-smi memory.total of each part; SGLang's tiers: (chunked prefill, graph batch at
        # TP < 4, at TP >= 4) by memory
        ("nvidia-l4", 23034, 2048, (24, 80)),
        ("nvidia-a100-sxm4-40gb", 40960, 4096, (32, 160)),
        ("nvidia-h100-sxm", 81559, 8192, (256, 512)),
        ("nvidia-h200-sxm", 143771, 8192, (256, 512)),
        ("nvidia-b200", 183359, 16384, (512, 512)),
        ("amd-mi300x", 196288, 16384, (512, 512)),
    ],
)
def test_sglang_picks_its_fraction_from_the_gpu_and_the_layout(
    slug: str, total_mib: int, chunk: int, graph_bs: tuple[int, int]
) -> None:
    gpu = CATALOG[slug]
    assert gpu.fit_memory_bytes == total_mib * 2**20
    assert sglang_defaults(total_mib, 1) == (chunk, graph_bs[0])
    assert sglang_defaults(total_mib, 8) == (chunk, graph_bs[1])
    for tp in (1, 2, 4, 8):
        bs = graph_bs[0] if tp < 4 else graph_bs[1]
        expected = _sglang(total_mib, _reserved(chunk, bs, tp, total_mib > 60 * 1024))
        assert sglang_mem_fraction_static(gpu, tp) == expected


def test_the_documented_fractions_and_their_order() -> None:
    """What the engine note states: 0.835 on one H100, 0.818 on eight, 0.907 / 0.897 on the
    H200, 0.85 on B200s; a larger group reserves more, data-parallel attention (padding per
    rank) and a draft model (2 GiB; n-gram drafts need none) more again."""
    h100, h200, b200 = CATALOG["nvidia-h100-sxm"], CATALOG["nvidia-h200-sxm"], CATALOG["nvidia-b200"]
    assert (sglang_mem_fraction_static(h100, 1), sglang_mem_fraction_static(h100, 8)) == (0.835, 0.818)
    assert (sglang_mem_fraction_static(h200, 1), sglang_mem_fraction_static(h200, 8)) == (0.907, 0.897)
    assert (sglang_mem_fraction_static(b200, 4), sglang_mem_fraction_static(b200, 8)) == (0.855, 0.852)
    base = _reserved(8192, 512, 8, True)
    dp = base + 512 * 8 * 3 + 512 * 8 * 1.5
    assert sglang_mem_fraction_static(h200, 8, dp_attention=True) == _sglang(143771, dp)
    assert sglang_mem_fraction_static(h200, 8, speculative="eagle") == _sglang(143771, base + 2048)
    assert sglang_mem_fraction_static(h200, 8, speculative="ngram") == sglang_mem_fraction_static(h200, 8)
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
    assert d.memory_fraction == 0.835
    assert any("sglang memory setting 0.835 (SGLang's own pick" in n for n in d.notes)
    usable = float(h100.fit_memory_bytes or 0)
    weights = d.w_dense + d.w_experts
    expected = (0.835 * (usable - CUDA_CONTEXT_BYTES) - weights) / d.kv_per_token
    assert kv_capacity_tokens(d, 8192) == pytest.approx(expected, rel=1e-12)
    stated = deployment(_llama8b("sglang", 0.95), h100)
    assert stated.memory_fraction == 0.95
    assert any("memory setting 0.95 (as stated)" in n for n in stated.notes)
    gained = (0.95 - 0.835) * (usable - CUDA_CONTEXT_BYTES) / d.kv_per_token
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


@pytest.mark.parametrize("engine", ["vllm", "tensorrt-llm", "sglang"])
def test_the_smallest_setting_holds_exactly_the_tokens_asked(engine: str) -> None:
    """Each engine's pool is linear in its setting: at the smallest setting that holds a request
    the pool is that request, and no setting holds more than the whole memory allows."""
    h100 = CATALOG["nvidia-h100-sxm"]
    d = deployment(_llama8b(engine), h100)
    tokens = 100_000.0
    f = smallest_memory_fraction(d, tokens, 8192)
    assert f is not None and 0.0 < f < 1.0
    at = deployment(_llama8b(engine, f), h100)
    assert kv_capacity_tokens(at, 8192) == pytest.approx(tokens, rel=1e-9)
    assert smallest_memory_fraction(d, 1e9, 8192) is None  # 1e9 tokens fit in no 80 GB
