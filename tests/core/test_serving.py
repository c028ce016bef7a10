"""Serving: physics properties over a grid of models, GPUs, engines and loads; engine classes;
request-rate queueing; replicas; min_gpus; encoder / CNN inference."""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import replace

import pytest

from service.catalog.loader import load_shipped
from service.core.catalog.models import CnnSpec, DecoderSpec, EncoderSpec, get_model
from service.core.catalog.specs import GpuSpec, gpu_spec_from_doc
from service.core.errors import InvalidConfiguration
from service.core.estimation.calibration import CalibrationSet
from service.core.estimation.estimate import JobSpec, build_job, estimate
from service.core.estimation.memory import BatchInferenceConfig, InferenceConfig
from service.core.estimation.performance import SPEC_DEFAULTS
from service.core.estimation.serving import (
    CONTINUOUS_EFFICIENCIES,
    HostProfile,
    Workload,
    capacity_at_slo,
    concurrency_cap,
    deployment,
    estimate_batch_inference,
    estimate_serving,
    offline_throughput,
    plan_min_gpus,
    serve_at_rate,
    serve_concurrency,
)

CATALOG = {d["slug"]: gpu_spec_from_doc(d) for d in load_shipped().gpus}
H100 = CATALOG["nvidia-h100-sxm"]
H200 = CATALOG["nvidia-h200-sxm"]
A100 = CATALOG["nvidia-a100-sxm4-80gb"]
L40S = CATALOG["nvidia-l40s"]
HOST = HostProfile(dispatch_s=2.4e-5, step_s=1e-3, source="test host")


def dec(name: str) -> DecoderSpec:
    m = get_model(name)
    assert isinstance(m, DecoderSpec)
    return m


MODELS = ("llama3-8b", "qwen2.5-14b", "llama3.1-70b", "mixtral-8x7b")
ENGINES = ("hf-transformers", "vllm", "tensorrt-llm")
LENGTHS = ((128, 128), (1024, 256), (4096, 512))
BATCHES = (1, 8, 64)


def _tp_for(m: DecoderSpec) -> int:
    return 4 if m.total_params > 30e9 else 1


def _cfg(model: str, engine: str, inp: int, out: int, b: int, **kw: object) -> InferenceConfig:
    m = dec(model)
    return InferenceConfig(
        model=m, engine=engine, input_len=inp, output_len=out, batch_size=b, tensor_parallel=_tp_for(m), **kw
    )  # type: ignore[arg-type]


def _latencies(c: InferenceConfig, gpu: GpuSpec) -> tuple[float, float]:
    """(TTFT, TPOT) of one replica, whatever the engine."""
    if c.engine == "hf-transformers":
        s = estimate_serving(c, gpu, SPEC_DEFAULTS, host=HOST)
        return s.ttft_s, s.tpot_s
    p = serve_concurrency(c, gpu, CONTINUOUS_EFFICIENCIES)
    return p.ttft_s, p.tpot_s


GRID = list(itertools.product(MODELS, ENGINES, LENGTHS, BATCHES))


# ---- physics properties ---------------------------------------------------------------------


@pytest.mark.parametrize(("model", "engine", "lengths", "b"), GRID)
def test_more_bandwidth_never_slower(model: str, engine: str, lengths: tuple[int, int], b: int) -> None:
    """All else equal, a GPU with more memory bandwidth never decodes (or prefills) slower."""
    c = _cfg(model, engine, *lengths, b)
    for base in (H100, A100):
        faster = replace(base, slug=base.slug + "-fastmem", bandwidth_gb_per_s=base.require_bandwidth() * 1.4)
        t0, p0 = _latencies(c, base)
        t1, p1 = _latencies(c, faster)
        assert p1 <= p0 * (1 + 1e-9) and t1 <= t0 * (1 + 1e-9), (model, engine, lengths, b, base.slug)


@pytest.mark.parametrize(("model", "engine", "lengths", "b"), GRID)
def test_higher_dense_peak_never_slower(model: str, engine: str, lengths: tuple[int, int], b: int) -> None:
    """All else equal, a higher dense tensor peak never makes prefill (TTFT) or decode slower."""
    c = _cfg(model, engine, *lengths, b)
    for base in (H100, A100):
        peaks = {k: v * 1.5 for k, v in base.peaks.items()}
        faster = replace(base, slug=base.slug + "-fastmath", peaks=peaks)
        t0, p0 = _latencies(c, base)
        t1, p1 = _latencies(c, faster)
        assert t1 <= t0 * (1 + 1e-9) and p1 <= p0 * (1 + 1e-9), (model, engine, lengths, b, base.slug)


@pytest.mark.parametrize(("model", "engine", "lengths", "b"), GRID)
def test_fp8_weights_never_slower_than_bf16_where_supported(
    model: str, engine: str, lengths: tuple[int, int], b: int
) -> None:
    for gpu in (H100, H200, L40S):
        assert gpu.support_for("fp8") == "yes"
        bf16 = _cfg(model, engine, *lengths, b)
        fp8 = replace(bf16, quant_method="fp8")
        if engine != "hf-transformers":
            # fp8 weights leave more room for KV: compare at the concurrency both admit (more
            # sequences in flight would lengthen an iteration while raising throughput)
            caps = [concurrency_cap(deployment(x, gpu), *map(float, lengths))[0] for x in (bf16, fp8)]
            if min(caps) < 1:
                continue
            bf16 = replace(bf16, batch_size=min(b, *caps))
            fp8 = replace(fp8, batch_size=min(b, *caps))
            assert serve_concurrency(fp8, gpu, concurrency=b).output_tokens_per_s >= serve_concurrency(
                bf16, gpu, concurrency=b
            ).output_tokens_per_s * (1 - 1e-9)
        t16, p16 = _latencies(bf16, gpu)
        t8, p8 = _latencies(fp8, gpu)
        assert t8 <= t16 * (1 + 1e-9) and p8 <= p16 * (1 + 1e-9), (model, engine, lengths, b, gpu.slug)


@pytest.mark.parametrize(("model", "lengths"), list(itertools.product(MODELS, LENGTHS)))
def test_more_replicas_never_lower_throughput(model: str, lengths: tuple[int, int]) -> None:
    """Capacity within targets, and latency at a fixed offered rate, never get worse with replicas."""
    w = Workload(float(lengths[0]), float(lengths[1]), 0.5, 0.5)
    c = _cfg(model, "vllm", *lengths, 1)
    d = deployment(c, H100)
    per = capacity_at_slo(c, H100, w, 2.0, 0.1, CONTINUOUS_EFFICIENCIES, d)
    assert per > 0
    lam = per * 1.5  # too much for one replica
    last_ttft = math.inf
    for reps in (1, 2, 3, 4, 8):
        r = serve_at_rate(replace(c, replicas=reps), H100, lam, w, CONTINUOUS_EFFICIENCIES, d)
        assert r.ttft_s <= last_ttft * (1 + 1e-9)
        last_ttft = r.ttft_s
        assert r.stable == (reps >= 2 or r.stable)
    # fleet capacity is replicas x per-replica capacity
    caps = [
        capacity_at_slo(replace(c, replicas=k), H100, w, 2.0, 0.1, CONTINUOUS_EFFICIENCIES, d) * k
        for k in (1, 2, 4)
    ]
    assert caps == sorted(caps)


def test_offline_throughput_ranks_gpus_by_bandwidth_and_compute() -> None:
    """The TensorRT-LLM class ranks H200 > H100 > A100 SXM > A100 PCIe on a 70B model at TP4."""
    c = InferenceConfig(
        model=dec("llama3.1-70b"),
        engine="tensorrt-llm",
        input_len=1000,
        output_len=1000,
        tensor_parallel=4,
        precision="fp16",
    )
    tps = [
        offline_throughput(c, g).output_tokens_per_s
        for g in (H200, H100, A100, CATALOG["nvidia-a100-pcie-80gb"])
    ]
    assert tps == sorted(tps, reverse=True)


# ---- engine classes ---------------------------------------------------------------------------


def test_hf_host_floor_is_the_same_on_every_gpu() -> None:
    """Issue 12: eager generate was host-bound by a floor calibrated on the H200 and applied by
    architecture, so an A100 decoded Llama-3-8B faster than an H100. With the host profile of the
    engine and host, an H100 is never slower than an A100."""
    c = InferenceConfig(model=dec("llama3-8b"), batch_size=1, input_len=512, output_len=128)
    h100 = estimate_serving(c, H100, SPEC_DEFAULTS, host=HOST)
    a100 = estimate_serving(c, A100, SPEC_DEFAULTS, host=HOST)
    assert h100.tpot_s <= a100.tpot_s
    big = replace(c, batch_size=128, tensor_parallel=4)
    assert (
        estimate_serving(big, H100, SPEC_DEFAULTS, host=HOST).output_tokens_per_s
        >= estimate_serving(big, A100, SPEC_DEFAULTS, host=HOST).output_tokens_per_s
    )


def test_engine_changes_the_answer() -> None:
    """vllm is not a label: continuous batching with CUDA graphs has no per-op host floor."""
    c = InferenceConfig(model=dec("llama3-8b"), batch_size=1, input_len=512, output_len=128)
    hf = estimate_serving(c, H100, SPEC_DEFAULTS, host=HOST)
    vl = serve_concurrency(replace(c, engine="vllm"), H100)
    assert vl.tpot_s < hf.tpot_s / 2


def test_gpu_count_beyond_tp_is_replicas() -> None:
    """8 GPUs at TP4 are 2 replicas: twice the throughput of 4 GPUs at TP4 (it was ignored)."""
    cal = CalibrationSet()
    four = estimate(
        H100,
        build_job(
            JobSpec(
                model="llama3.1-70b",
                mode="inference",
                engine="vllm",
                gpu_count=4,
                tensor_parallel=4,
                batch_size=64,
            )
        ),
        cal,
    )
    eight = estimate(
        H100,
        build_job(
            JobSpec(
                model="llama3.1-70b",
                mode="inference",
                engine="vllm",
                gpu_count=8,
                tensor_parallel=4,
                batch_size=64,
            )
        ),
        cal,
    )
    assert four.serving is not None and eight.serving is not None
    assert eight.serving.replicas == 2
    assert eight.serving.output_tokens_per_s == pytest.approx(2 * four.serving.output_tokens_per_s)


def test_fp8_uses_the_fp8_peak_only_where_supported() -> None:
    c = InferenceConfig(
        model=dec("llama3-8b"),
        batch_size=64,
        input_len=2048,
        output_len=128,
        engine="vllm",
        quant_method="fp8",
    )
    assert deployment(c, H100).w8a8 and not deployment(c, A100).w8a8
    assert deployment(c, A100).notes  # says the weights are dequantised on an A100
    bf = replace(c, quant_method="none")
    assert serve_concurrency(c, H100).ttft_s < 0.8 * serve_concurrency(bf, H100).ttft_s


def test_an_unmodelled_engine_is_refused_not_relabelled() -> None:
    with pytest.raises(InvalidConfiguration) as exc:
        build_job(JobSpec(model="llama3-8b", mode="inference", engine="tgi"))
    assert exc.value.field == "engine"


def test_sglang_has_its_own_scheduler_defaults() -> None:
    """SGLang's chunked prefill (8192 tokens on an 80 GB H100, 16384 on a 180 GB B200) and its
    static memory fraction (0.88) -- not vLLM's (8192 on both, 0.90)."""
    from service.core.estimation.serving_engines import ENGINE_CLASSES, engine_limits

    sg, vl = ENGINE_CLASSES["sglang"], ENGINE_CLASSES["vllm"]
    assert engine_limits(sg, H100)[1] == 8192 and engine_limits(sg, CATALOG["nvidia-b200"])[1] == 16384
    assert engine_limits(vl, CATALOG["nvidia-b200"])[1] == 8192
    assert sg.memory_fraction < vl.memory_fraction and sg.provenance == "transferred"
    c = InferenceConfig(model=dec("llama3.1-8b"), engine="sglang", input_len=2048, output_len=256)
    assert serve_concurrency(c, H100).ttft_s > 0


# ---- request rates ------------------------------------------------------------------------------


def test_latency_grows_with_rate_and_overload_is_flagged() -> None:
    c = InferenceConfig(model=dec("llama3.1-8b"), engine="tensorrt-llm", input_len=467, output_len=256)
    w = Workload(467.0, 256.0)
    last = (0.0, 0.0)
    for lam in (1.0, 4.0, 8.0, 16.0, 24.0):
        r = serve_at_rate(c, H100, lam, w)
        assert r.stable
        assert r.ttft_s >= last[0] and r.tpot_s >= last[1]
        last = (r.ttft_s, r.tpot_s)
    assert not serve_at_rate(c, H100, 500.0, w).stable


@pytest.mark.parametrize("lam", [1e-20, 1e-12, 1e-6])
def test_a_vanishing_rate_is_the_idle_latency(lam: float) -> None:
    """At a rate so small that exp(-mu) rounds to 1.0 the busy-iteration mean once divided by
    zero (the golden grid found it): the answer is the idle server's latency, finite."""
    c = InferenceConfig(model=dec("llama3.1-8b"), engine="vllm", input_len=467, output_len=256)
    w = Workload(467.0, 256.0)
    r = serve_at_rate(c, H100, lam, w)
    idle = serve_at_rate(c, H100, 1e-3, w)
    assert r.stable and math.isfinite(r.ttft_s) and math.isfinite(r.tpot_s)
    assert r.tpot_s <= idle.tpot_s * 1.001 and r.ttft_s <= idle.ttft_s * 1.001


def test_serve_at_rate_is_fast_and_deterministic() -> None:
    """/v1/recommend calls it per candidate: tens of microseconds, same answer every time."""
    c = InferenceConfig(
        model=dec("qwen2.5-72b"), engine="vllm", input_len=1024, output_len=256, tensor_parallel=4, replicas=3
    )
    w = Workload(1024.0, 256.0, 0.5, 0.8)
    d = deployment(c, H200)
    first = serve_at_rate(c, H200, 20.0, w, CONTINUOUS_EFFICIENCIES, d)
    n = 200
    best = math.inf
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(n):
            assert serve_at_rate(c, H200, 20.0, w, CONTINUOUS_EFFICIENCIES, d) == first
        best = min(best, (time.perf_counter() - t0) / n)
    assert best < 1e-3, best  # typically ~70 us in CPython


def test_min_gpus_for_a_rate_orders_gpus_by_bandwidth_and_compute() -> None:
    """The 72B-at-20-requests/s question (README): fewer H200s than H100s than A100s."""
    c = InferenceConfig(model=dec("qwen2.5-72b"), engine="vllm", input_len=1024, output_len=256)
    w = Workload(1024.0, 256.0, 0.5, 0.8)
    gpus = []
    for g in (H200, H100, A100):
        plan = plan_min_gpus(c, g, 20.0, w, ttft_target_s=1.0, tpot_target_s=0.05)
        assert plan is not None
        assert plan.estimate.stable and plan.estimate.ttft_s <= 1.0 and plan.estimate.tpot_s <= 0.05
        assert plan.headroom >= 0
        gpus.append(plan.gpus)
    assert gpus == sorted(gpus) and gpus[0] < gpus[-1]


def test_estimate_answers_a_rate_and_min_gpus() -> None:
    cal = CalibrationSet()
    spec = JobSpec(
        model="Qwen/Qwen2.5-72B-Instruct",
        mode="inference",
        engine="vllm",
        gpu_count=8,
        tensor_parallel=4,
        input_len=1024,
        output_len=256,
        input_len_cv=0.5,
        output_len_cv=0.8,
        requests_per_s=5.0,
        ttft_target_ms=1000,
        tpot_target_ms=50,
    )
    est = estimate(H100, build_job(spec), cal)
    assert est.serving is not None and est.serving.rate is not None
    r = est.serving.rate
    assert r.stable and r.meets_ttft and r.meets_tpot and r.capacity_requests_per_s > 5.0
    assert est.serving.provenance == "transferred"
    solved = estimate(H100, build_job(replace(spec, requests_per_s=20.0, solve_for="min_gpus")), cal)
    assert solved.solve is not None and solved.solve.replicas and solved.solve.tensor_parallel
    assert solved.solve.value == solved.solve.replicas * solved.solve.tensor_parallel
    assert solved.solve.headroom is not None and solved.solve.headroom >= 0
    trt = estimate(H100, build_job(replace(spec, engine="tensorrt-llm")), cal)
    assert trt.serving is not None and trt.serving.provenance == "published"


# ---- encoders and CNNs ----------------------------------------------------------------------------


def test_encoder_and_cnn_inference_are_estimated() -> None:
    cal = CalibrationSet()
    for spec in (
        JobSpec(model="bert-large", mode="inference", batch_size=32, seq_len=128),
        JobSpec(model="resnet50", mode="inference", batch_size=256, gpu_count=2),
    ):
        est = estimate(H100, build_job(spec), cal)
        assert est.time is not None and est.time.samples_per_s > 0 and est.memory.fits
    bert = get_model("bert-large")
    rn = get_model("resnet50")
    assert isinstance(bert, EncoderSpec) and isinstance(rn, CnnSpec)
    for m in (bert, rn):
        small = estimate_batch_inference(BatchInferenceConfig(model=m, batch_size=8, seq_len=128), H100)
        large = estimate_batch_inference(BatchInferenceConfig(model=m, batch_size=256, seq_len=128), H100)
        assert large.samples_per_s > small.samples_per_s
        fast = replace(
            H100, slug="fast", bandwidth_gb_per_s=6000.0, peaks={k: v * 2 for k, v in H100.peaks.items()}
        )
        assert (
            estimate_batch_inference(
                BatchInferenceConfig(model=m, batch_size=256, seq_len=128), fast
            ).step_time_s
            <= large.step_time_s
        )


def test_engine_measurements_never_move_the_eager_calibration() -> None:
    """An agent's vLLM results (the llm-infer engine plug-in) are that engine's measured cells;
    they feed no hf-transformers fit."""
    from service.core.estimation.calibration import CellMeasurement, group_of

    params = {
        "model": "llama3-8b",
        "precision": "bf16",
        "quant_method": "none",
        "batch_size": 8,
        "input_len": 512,
        "output_len": 128,
        "attention": "sdpa",
    }
    hf = CellMeasurement(H200, "llm-infer", {**params, "engine": "hf-transformers"}, {"ttft_ms_p50": 100.0})
    vllm = CellMeasurement(H200, "llm-infer", {**params, "engine": "vllm"}, {"ttft_ms_p50": 30.0})
    assert group_of(hf) is not None and group_of(vllm) is None


def test_min_gpus_answers_even_when_one_gpu_does_not_hold_the_model() -> None:
    spec = JobSpec(
        model="qwen2.5-72b",
        mode="inference",
        engine="vllm",
        input_len=1024,
        output_len=256,
        requests_per_s=20.0,
        ttft_target_ms=1000,
        tpot_target_ms=50,
        solve_for="min_gpus",
    )
    est = estimate(H200, build_job(spec), CalibrationSet())
    assert est.serving is None and "no_serving_as_given" in [w.code for w in est.warnings]
    assert est.solve is not None and est.solve.value == 12 and est.solve.tensor_parallel == 4
