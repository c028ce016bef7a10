"""Prefix caching and speculative decoding in the serving model (issue 28, slice 5): the
properties the issue states, over random workloads on real presets and catalogued GPUs."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from service.catalog.loader import load_shipped
from service.core.catalog.models import DecoderSpec, get_model
from service.core.catalog.specs import gpu_spec_from_doc
from service.core.estimation.memory import InferenceConfig
from service.core.estimation.serving import CONTINUOUS_EFFICIENCIES, serve_at_rate, serve_concurrency
from service.core.estimation.serving_engines import deployment, iteration_s
from service.core.estimation.serving_features import accepted_per_step
from service.core.estimation.serving_steps import draft_pass_s, speculative_step_s

CATALOG = {d["slug"]: gpu_spec_from_doc(d) for d in load_shipped().gpus}
GPUS = [CATALOG[s] for s in ("nvidia-h100-sxm", "nvidia-h200-sxm", "nvidia-a100-sxm4-80gb", "nvidia-l40s")]


def _m(name: str) -> DecoderSpec:
    m = get_model(name)
    assert isinstance(m, DecoderSpec)
    return m


MODELS = [_m("llama3.1-8b"), _m("qwen2.5-7b"), _m("mixtral-8x7b"), _m("qwen3-30b-a3b")]

workloads = st.tuples(
    st.sampled_from(MODELS),
    st.sampled_from(GPUS),
    st.sampled_from(("vllm", "tensorrt-llm", "sglang")),
    st.integers(min_value=16, max_value=16384),  # input_len
    st.integers(min_value=1, max_value=2048),  # output_len
    st.integers(min_value=1, max_value=256),  # concurrency
)


def _cfg(w: tuple[DecoderSpec, object, str, int, int, int], **kw: object) -> InferenceConfig:
    m, _, engine, i, o, n = w
    tp = 2 if m.total_params > 40e9 else 1
    return InferenceConfig(
        model=m, engine=engine, input_len=i, output_len=o, batch_size=n, tensor_parallel=tp, **kw
    )  # type: ignore[arg-type]


@settings(max_examples=120, deadline=None)
@given(workloads, st.floats(min_value=0.0, max_value=0.98), st.floats(min_value=0.0, max_value=0.98))
def test_a_higher_prefix_hit_rate_never_raises_ttft(w, h1: float, h2: float) -> None:  # type: ignore[no-untyped-def]
    lo, hi = sorted((h1, h2))
    gpu = w[1]
    a = serve_concurrency(_cfg(w, prefix_cache_hit_rate=lo), gpu)
    b = serve_concurrency(_cfg(w, prefix_cache_hit_rate=hi), gpu)
    assert b.ttft_s <= a.ttft_s * (1 + 1e-9)
    assert b.tpot_s <= a.tpot_s * (1 + 1e-9)  # fewer prompt tokens ride along in decode iterations


@settings(max_examples=40, deadline=None)
@given(workloads, st.floats(min_value=0.05, max_value=50.0), st.floats(min_value=0.0, max_value=0.95))
def test_a_higher_prefix_hit_rate_never_raises_ttft_at_a_rate(w, rate: float, h: float) -> None:  # type: ignore[no-untyped-def]
    gpu = w[1]
    cold = serve_at_rate(_cfg(w), gpu, rate)
    warm = serve_at_rate(_cfg(w, prefix_cache_hit_rate=h), gpu, rate)
    if cold.stable:
        assert warm.stable and warm.ttft_s <= cold.ttft_s * (1 + 1e-9)


@settings(max_examples=120, deadline=None)
@given(workloads, st.sampled_from(("eagle", "ngram")), st.integers(min_value=1, max_value=8))
def test_speculation_that_accepts_nothing_is_never_faster(w, method: str, k: int) -> None:  # type: ignore[no-untyped-def]
    gpu = w[1]
    plain = serve_concurrency(_cfg(w), gpu)
    spec = serve_concurrency(_cfg(w, speculative=method, draft_tokens=k, acceptance_rate=0.0), gpu)
    assert spec.output_tokens_per_s <= plain.output_tokens_per_s * (1 + 1e-9)
    if spec.n >= plain.n:  # a resident draft head can leave room for fewer sequences, each then quicker
        assert spec.tpot_s >= plain.tpot_s * (1 - 1e-9)


def test_accepted_tokens_per_step() -> None:
    assert accepted_per_step(3, 0.0) == 1.0 and accepted_per_step(3, 1.0) == 4.0
    assert abs(accepted_per_step(3, 0.8) - (1 - 0.8**4) / 0.2) < 1e-12  # 2.952


def test_speculation_speeds_up_memory_bound_decode() -> None:
    """One sequence on an H200 is weight-streaming: verifying 4 tokens costs about one step, so
    n-gram drafts accepted at 0.7 cut TPOT by close to the 2.53 tokens a step emits."""
    c = InferenceConfig(model=_m("llama3.1-8b"), engine="vllm", input_len=1024, output_len=256, batch_size=1)
    gpu = CATALOG["nvidia-h200-sxm"]
    plain = serve_concurrency(c, gpu).tpot_s
    spec = serve_concurrency(replace(c, speculative="ngram", draft_tokens=3, acceptance_rate=0.7), gpu).tpot_s
    assert plain / 2.6 < spec < plain / 1.8


@settings(max_examples=80, deadline=None)
@given(
    workloads,
    st.sampled_from(("eagle", "ngram")),
    st.integers(min_value=0, max_value=7),
    st.floats(min_value=1.0, max_value=32768.0),
)
def test_more_drafted_tokens_never_make_a_step_cheaper(w, method: str, k: int, ctx: float) -> None:  # type: ignore[no-untyped-def]
    """The verify step physics (issue 28): a speculative step with ``k + 1`` drafted tokens is
    never cheaper than with ``k``, and never cheaper than the decode iteration it replaces; a
    draft pass never costs more than a decode iteration of the target."""
    _, gpu, _, _, _, n = w
    spec = deployment(_cfg(w, speculative=method, draft_tokens=max(k, 1), acceptance_rate=0.5), gpu)
    e = CONTINUOUS_EFFICIENCIES
    plain = iteration_s(spec, e, float(n), ctx)
    steps = [speculative_step_s(replace(spec, spec_tokens=j), e, float(n), ctx) for j in (k, k + 1)]
    assert plain * (1 - 1e-12) <= steps[0] <= steps[1] * (1 + 1e-12)
    assert 0.0 <= draft_pass_s(spec, e, float(n), ctx) <= plain


def test_a_draft_head_reads_one_layer_of_the_kv_cache() -> None:
    """Measured on the H200 (``data/probes/h200-engine-step-2026-12-04*.jsonl``): an EAGLE-class
    head costs a smaller share of the target's step as the KV cache grows (0.07 at batch 1, 0.05
    at batch 64 x 4k), since the head reads one layer's cache; its parameter share does not move."""
    m = _m("llama3.1-8b")
    gpu = CATALOG["nvidia-h200-sxm"]
    d = deployment(InferenceConfig(model=m, engine="vllm", speculative="eagle", draft_tokens=3), gpu)
    e = CONTINUOUS_EFFICIENCIES
    small = draft_pass_s(d, e, 1.0, 1024.0) / iteration_s(d, e, 1.0, 1024.0)
    large = draft_pass_s(d, e, 64.0, 4096.0) / iteration_s(d, e, 64.0, 4096.0)
    assert large < small <= d.spec_draft_share * (1 + 1e-9)
    assert large < 0.7 * d.spec_draft_share
