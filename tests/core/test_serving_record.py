"""The serving model's record against the same engine's published runs on a GPU: told in the
answer and covered by its TPOT band, never applied to its central figure
(``service.core.estimation.serving_record``)."""

from __future__ import annotations

import pytest

from service.catalog.loader import load_shipped
from service.core.catalog.models import DecoderSpec, get_model
from service.core.catalog.specs import GpuSpec, gpu_spec_from_doc
from service.core.estimation.memory_inference import InferenceConfig
from service.core.estimation.serving_queue import serve_concurrency
from service.core.estimation.serving_record import MIN_RUNS, engine_record
from service.core.evidence.published_serving import engine_runs

GPUS = {g["slug"]: gpu_spec_from_doc(g) for g in load_shipped().gpus}


def _config(engine: str = "sglang", model: str = "deepseek-r1", **kw: object) -> InferenceConfig:
    spec = get_model(model)
    assert isinstance(spec, DecoderSpec)
    base: dict[str, object] = {
        "model": spec,
        "quant_method": "fp8",
        "engine": engine,
        "tensor_parallel": 8,
        "input_len": 2048,
        "output_len": 512,
        "batch_size": 24,
    }
    return InferenceConfig(**{**base, **kw})  # type: ignore[arg-type]


def _gpu(slug: str) -> GpuSpec:
    return GPUS[slug]


def test_the_record_compares_each_run_with_the_model_at_that_run_s_configuration() -> None:
    c, gpu = _config(), _gpu("amd-mi300x")
    record = engine_record(c, gpu)
    runs = engine_runs("deepseek-r1", "amd-mi300x", "fp8", "bf16", "sglang")
    assert record is not None and record.runs == len(runs) >= MIN_RUNS
    first = runs[0]
    at_run = InferenceConfig(
        model=c.model,
        quant_method="fp8",
        engine="sglang",
        tensor_parallel=first.tp,
        input_len=first.lengths[0],
        output_len=first.lengths[1],
        batch_size=first.concurrency,
    )
    ratio = first.output_tokens_per_s_per_gpu / (
        serve_concurrency(at_run, gpu).output_tokens_per_s / first.tp
    )
    assert record.low_ratio <= ratio <= record.high_ratio
    assert record.low_ratio <= record.median_ratio <= record.high_ratio
    assert "inferencex-3a600f1" in record.tables and "x" in record.note("sglang")


def test_the_published_runs_put_sglang_below_the_model_on_cdna3_and_above_it_on_hopper() -> None:
    """What the record tells, per GPU (the model itself treats them alike)."""
    mi300x = engine_record(_config(), _gpu("amd-mi300x"))
    h200 = engine_record(_config(), _gpu("nvidia-h200-sxm"))
    assert mi300x is not None and h200 is not None
    assert mi300x.median_ratio < 0.8 < 1.1 < h200.median_ratio


def test_no_record_without_enough_runs_of_the_engine() -> None:
    assert engine_record(_config(engine="vllm"), _gpu("amd-mi300x")) is None
    assert engine_record(_config(model="llama3.1-8b", tensor_parallel=1), _gpu("amd-mi300x")) is None
    assert engine_record(_config(), _gpu("nvidia-h100-sxm")) is None


@pytest.mark.parametrize("slug", ["amd-mi300x", "nvidia-h200-sxm"])
def test_the_central_figure_is_the_model_s(slug: str) -> None:
    """The record widens the band only: the answer's throughput is serve_concurrency's."""
    from service.core.estimation.estimate_time import continuous_answer

    c, gpu = _config(), _gpu(slug)
    answer = continuous_answer(c, gpu, None)
    assert answer.output_tokens_per_s == pytest.approx(serve_concurrency(c, gpu).output_tokens_per_s)
    record = engine_record(c, gpu)
    assert record is not None and any(n.startswith("this answer is the model's") for n in answer.notes)
    band = answer.tpot_band
    if record.median_ratio < 1:
        assert band.high >= answer.tpot_s / record.median_ratio * (1 - 1e-9)
    else:
        assert band.low <= answer.tpot_s * record.median_ratio**-1 * (1 + 1e-9)


def _vllm16(model: str = "llama3-8b", tp: int = 1, precision: str = "bf16") -> InferenceConfig:
    spec = get_model(model)
    assert isinstance(spec, DecoderSpec)
    return InferenceConfig(
        model=spec,
        precision=precision,
        engine="vllm",
        tensor_parallel=tp,
        input_len=1024,
        output_len=1024,
        batch_size=16,
    )


def test_static_batch_runs_tell_vllm_s_record_and_its_date_never_an_anchor() -> None:
    """LLM-Inference-Bench's vLLM batches (FP16) are the record of a 16-bit vLLM answer on the MI300X
    and the H100 at their batch; no static batch is a run of the configuration asked."""
    from service.core.estimation.estimate_time import continuous_answer
    from service.core.evidence.published_serving import serving_matches

    c, mi300x = _vllm16(), _gpu("amd-mi300x")
    runs = engine_runs("llama3-8b", "amd-mi300x", "none", "bf16", "vllm")
    assert runs and {r.table_id for r in runs} == {"llm-inference-bench-vllm-ae7e7a4"}
    assert {r.concurrency for r in runs} == {1, 16, 32, 64, 128, 256}  # each run at its batch
    assert engine_runs("llama3-8b", "amd-mi300x", "none", "fp16", "vllm") == runs
    assert engine_runs("llama3-8b", "amd-mi300x", "fp8", "bf16", "vllm") == ()
    assert serving_matches("llama3-8b", "amd-mi300x", "none", "fp16", 1, (1024, 1024), 16) == ()
    record = engine_record(c, mi300x)
    tp1 = [r for r in runs if r.tp == 1]
    assert record is not None and record.runs == len(tp1) < len(runs) and record.tensor_parallel == 1
    answer = continuous_answer(c, mi300x, None)
    note = next(n for n in answer.notes if n.startswith("this answer is the model's"))
    assert "llm-inference-bench-vllm-ae7e7a4 of 2024-09-27" in note and "at tensor parallelism 1" in note
    assert answer.output_tokens_per_s == pytest.approx(serve_concurrency(c, mi300x).output_tokens_per_s)
    assert answer.tpot_band.high >= answer.tpot_s / record.median_ratio * (1 - 1e-9)


def test_vllm_0_6_1_on_rocm_ran_the_mi300x_further_below_the_model_than_the_h100() -> None:
    """What the record tells: both below the model (a 2024 vLLM against the V1 engine class), the
    MI300X's ROCm build far more, though the model puts it ahead on its datasheet."""
    mi300x = engine_record(_vllm16(), _gpu("amd-mi300x"))
    h100 = engine_record(_vllm16(), _gpu("nvidia-h100-sxm"))
    assert mi300x is not None and h100 is not None
    assert mi300x.median_ratio < 0.5 * h100.median_ratio < h100.median_ratio < 1.0
    fast = serve_concurrency(_vllm16(), _gpu("amd-mi300x")).output_tokens_per_s
    assert fast > serve_concurrency(_vllm16(), _gpu("nvidia-h100-sxm")).output_tokens_per_s


def test_the_record_is_of_the_question_s_tensor_parallelism_where_enough_runs_are() -> None:
    """vLLM 0.6 on the H100 went x0.88 of the model at TP1 and about x0.5 at TP4 (Llama-3-8B): a
    TP1 question is told TP1's record, a degree with no runs the record of all of them."""
    h100 = _gpu("nvidia-h100-sxm")
    one, four = engine_record(_vllm16(), h100), engine_record(_vllm16(tp=4), h100)
    every = engine_record(_vllm16(tp=8), h100)  # nobody ran Llama-3-8B at TP8 on it
    assert one is not None and four is not None and every is not None
    assert (one.tensor_parallel, four.tensor_parallel, every.tensor_parallel) == (1, 4, None)
    assert four.median_ratio < 0.7 < 0.8 < one.median_ratio < 1.0
    assert every.runs == len(engine_runs("llama3-8b", "nvidia-h100-sxm", "none", "bf16", "vllm")) > one.runs
