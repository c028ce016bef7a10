"""Published runs of the exact serving configuration asked (service.core.evidence.published_serving)."""

from __future__ import annotations

from service.core.evidence.published import get_table
from service.core.evidence.published_serving import anchor, engine_runs, serving_matches

IX = get_table("inferencex-3a600f1")


def _row(slug: str, engine: str, precision: str = "fp8", concurrency: int = 32) -> float:
    hits = [
        r.value
        for r in IX.rows
        if r.slug == slug
        and r.system.startswith(f"{engine} ")
        and r.precision == precision
        and r.model == "deepseek-r1"
        and r.tp == 8
        and (r.input_len, r.output_len, r.concurrency) == (1024, 1024, concurrency)
    ]
    assert len(hits) == 1, hits
    return hits[0]


def test_a_configuration_finds_every_engine_s_run_of_it() -> None:
    runs = serving_matches("deepseek-r1", "nvidia-h200-sxm", "fp8", "bf16", 8, (1024, 1024), 32)
    by_engine = {r.source_engine: r for r in runs}
    assert set(by_engine) == {"sglang", "trt"}
    assert by_engine["sglang"].output_tokens_per_s_per_gpu == _row("nvidia-h200-sxm", "sglang")
    assert by_engine["trt"].engine == "tensorrt-llm" and by_engine["sglang"].engine == "sglang"
    assert all(r.table_id == IX.id and r.ran_on.startswith("20") for r in runs)


def test_anything_else_asked_matches_nothing() -> None:
    base = ("deepseek-r1", "amd-mi300x", "fp8", "bf16", 8, (1024, 1024), 32)
    assert serving_matches(*base)
    for i, other in (
        (6, 33),  # another concurrency
        (5, (1024, 2048)),  # other lengths
        (4, 4),  # another tensor parallelism
        (2, "none"),  # 16-bit weights: InferenceX ran FP8 and FP4 only
        (1, "nvidia-h100-sxm"),  # a GPU InferenceX did not run this on
    ):
        asked = list(base)
        asked[i] = other
        assert serving_matches(*asked) == (), asked  # type: ignore[arg-type]


def test_fp4_weight_formats_are_the_sources_fp4_names() -> None:
    """NVIDIA's NVFP4 is the sources' ``fp4``, AMD's MXFP4 their ``mxfp4``."""
    nv = serving_matches("deepseek-r1", "nvidia-b200", "nvfp4", "bf16", 8, (1024, 1024), 32)
    amd = serving_matches("deepseek-r1", "amd-mi355x", "mxfp4", "bf16", 8, (1024, 1024), 32)
    assert nv and amd
    assert {r.output_tokens_per_s_per_gpu for r in nv if r.source_engine == "sglang"} == {
        _row("nvidia-b200", "sglang", "fp4")
    }
    assert serving_matches("deepseek-r1", "nvidia-b200", "mxfp4", "bf16", 8, (1024, 1024), 32) == ()


def test_an_answer_is_anchored_on_its_own_engine_s_run_only() -> None:
    runs = serving_matches("deepseek-r1", "amd-mi355x", "fp8", "bf16", 8, (1024, 1024), 32)
    assert {r.source_engine for r in runs} == {"sglang", "atom"}  # ATOM: AMD's engine, not modelled
    picked = anchor(runs, "sglang")
    assert picked is not None and picked[0] == _row("amd-mi355x", "sglang")
    assert [r.source_engine for r in picked[1]] == ["sglang"]
    assert anchor(runs, "vllm") is None


def test_engine_runs_are_every_configuration_of_one_engine_model_format_and_gpu() -> None:
    runs = engine_runs("deepseek-r1", "amd-mi300x", "fp8", "bf16", "sglang")
    rows = [
        r
        for r in IX.rows
        if r.slug == "amd-mi300x" and r.system.startswith("sglang ") and r.precision == "fp8"
    ]
    assert len(runs) == len(rows) > 3
    assert {(r.tp, r.lengths, r.concurrency) for r in runs} == {
        (r.tp, (r.input_len, r.output_len), r.concurrency) for r in rows
    }
    assert engine_runs("deepseek-r1", "amd-mi300x", "fp8", "bf16", "vllm") == ()
