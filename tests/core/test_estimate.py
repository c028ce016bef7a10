"""The pure estimation function: many configurations, no database, consistent answers."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from service.catalog.loader import load_shipped
from service.core.catalog.models import ModelNotFound, get_model
from service.core.catalog.specs import GpuSpec, gpu_spec_from_doc
from service.core.errors import InvalidConfiguration
from service.core.estimation.calibration import CalibrationSet, TimedPoint, fit_time
from service.core.estimation.estimate import JobSpec, benchmark_cell, build_job, estimate, resolve_model
from service.core.estimation.memory import TrainConfig
from service.core.estimation.performance import H200_SXM, estimate_step
from service.core.evidence.aggregate import Point, latest_measured

CATALOG = {d["slug"]: gpu_spec_from_doc(d) for d in load_shipped().gpus}


def _h200_calibration() -> CalibrationSet:
    pts = []
    for name in ("gt-llama-350m", "gt-llama-1b-v32k", "gt-llama-3b"):
        for b, s in ((2, 1024), (4, 2048), (8, 512)):
            c = TrainConfig(model=get_model(name), batch_size=b, seq_len=s)
            pts.append(TimedPoint(c, H200_SXM, estimate_step(c, H200_SXM).step_time_s * 1.2))
    return CalibrationSet(
        by_key={(H200_SXM.slug, "llm-train", "16bit"): fit_time(pts)}, families={H200_SXM.slug: "hopper"}
    )


def _specs() -> list[JobSpec]:
    out: list[JobSpec] = []
    train = itertools.product(
        ("llama3-8b", "llama2-13b", "gt-llama-350m", "mistral-7b", "qwen2.5-7b"),
        ("training", "fine-tuning"),
        ("amp_bf16", "bf16"),
        (1, 2, 4),
        (1024, 4096),
        (False, True),
        (1, 8),
    )
    for model, mode, precision, batch, seq, ckpt, n in train:
        out.append(
            JobSpec(
                model=model,
                mode=mode,
                precision=precision,
                batch_size=batch,
                seq_len=seq,
                gradient_checkpointing=ckpt,
                gpu_count=n,
                sharding="fsdp" if n > 1 else None,
            )
        )
    for model, batch, inp, q in itertools.product(
        ("llama3-8b", "llama2-70b", "mistral-7b"), (1, 16), (512, 4096), ("none", "awq")
    ):
        out.append(JobSpec(model=model, mode="inference", batch_size=batch, input_len=inp, quant_method=q))
    for b in (32, 128, 256):
        out.append(JobSpec(model="resnet50", batch_size=b))
        out.append(JobSpec(model="bert-large", batch_size=b // 8, seq_len=512))
    return out


def test_500_configurations_without_a_database() -> None:
    """The core function answers every configuration on every timed GPU, consistently."""
    cals = _h200_calibration()
    specs = _specs()
    gpus = [
        CATALOG[s] for s in ("nvidia-h200-sxm", "nvidia-h100-sxm", "nvidia-a100-sxm4-80gb", "nvidia-l40s")
    ]
    answered = 0
    for spec, gpu in zip(specs, itertools.cycle(gpus), strict=False):
        job = build_job(spec)
        est = estimate(gpu, job, cals)
        m = est.memory
        assert m.fits == (m.headroom_bytes >= 0)
        b = m.estimate.device_memory_band
        assert 0 < b.low <= b.mid <= b.high
        if est.time is not None:
            t = est.time
            assert 0 < t.step_time_band.low <= t.step_time_s <= t.step_time_band.high
            expected = {"nvidia-h200-sxm": "interpolated", "nvidia-h100-sxm": "transferred"}.get(
                gpu.slug, "published"
            )
            if (
                isinstance(job.config, TrainConfig)
                and job.model.kind == "decoder"
                and job.precision in ("amp_bf16", "bf16")
            ):
                assert t.provenance == expected
        elif m.fits:
            assert est.serving is not None
            assert est.serving.ttft_band.low <= est.serving.ttft_s <= est.serving.ttft_band.high
        else:  # a static batch that does not fit has no latency, and says why
            assert est.serving is None and "no_serving_as_given" in [w.code for w in est.warnings]
        assert est == estimate(gpu, job, cals)  # deterministic
        answered += 1
    assert answered == len(specs) >= 500


def test_refusals_name_the_field() -> None:
    cases = [
        (JobSpec(), "model"),
        (JobSpec(model="llama3-8b", params_billion=7.0), "model"),
        (JobSpec(model="llama3-8b", gpu_count=4, tensor_parallel=3), "tensor_parallel"),
        (JobSpec(model="bert-large", mode="inference", seq_len=1024), "seq_len"),
        (JobSpec(model="llama3-8b", mode="inference", engine="tgi"), "engine"),
        (JobSpec(model="llama3-8b", mode="inference", gpu_count=6, tensor_parallel=4), "gpu_count"),
        (JobSpec(model="llama3-8b", mode="inference", requests_per_s=5.0), "requests_per_s"),
        (JobSpec(model="llama3-8b", finetune="qlora", precision="fp32"), "precision"),
        (
            JobSpec(hf_config={"model_type": "deepseek_v3", "kv_lora_rank": 512, "hidden_size": 7168}),
            "hf_config",
        ),
    ]
    for spec, field in cases:
        with pytest.raises(InvalidConfiguration) as exc:
            build_job(spec)
        assert exc.value.field == field, spec
    with pytest.raises(ModelNotFound):
        resolve_model(JobSpec(model="llama3-8bb"))
    v100 = CATALOG["nvidia-v100-sxm2-16gb"]
    with pytest.raises(InvalidConfiguration) as exc:
        estimate(v100, build_job(JobSpec(model="llama3-8b", precision="bf16")), CalibrationSet())
    assert exc.value.field == "precision" and exc.value.code == "PRECISION_UNSUPPORTED"
    with pytest.raises(InvalidConfiguration) as exc:
        estimate(
            CATALOG["nvidia-h200-sxm"],
            build_job(JobSpec(model="llama3-8b", solve_for="max_concurrency")),
            CalibrationSet(),
        )
    assert exc.value.field == "solve_for"


def test_measured_cell_overrides_time_and_memory_with_quantiles() -> None:
    """The exact cell's latest-measured view answers ``measured``: the median, and a band from
    the p10/p90 quantiles (at least +-3 %)."""
    import datetime as dt

    gpu = CATALOG["nvidia-h200-sxm"]
    job = build_job(JobSpec(model="gt-llama-350m", batch_size=4, seq_len=1024, optimizer_impl="fused"))
    cell = benchmark_cell(job)
    assert cell is not None and cell[0] == "llm-train"
    t0 = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
    times = [0.10, 0.11, 0.12, 0.13, 0.20]
    pts = [
        Point(
            i,
            "fp",
            "host",
            True,
            "ok",
            False,
            t0 + dt.timedelta(minutes=i),
            {"step_time_s": t},
            {"peak_allocated_bytes": 10 * 2**30},
        )
        for i, t in enumerate(times)
    ]
    view = latest_measured(pts, k=3)
    est = estimate(gpu, job, CalibrationSet(), view)
    assert est.time is not None and est.time.provenance == "measured"
    assert est.time.step_time_s == pytest.approx(0.12)
    assert est.time.step_time_band.high == pytest.approx(view.metrics["step_time_s"].p90)
    assert est.time.step_time_band.high < 0.20
    assert est.memory.provenance == "measured" and est.memory.measured_peak_allocated_bytes == 10 * 2**30
    # an untrusted single host is not 'measured'
    untrusted = latest_measured([replace(p, trusted=False) for p in pts], k=3)
    assert estimate(gpu, job, CalibrationSet(), untrusted).time.provenance == "spec"  # type: ignore[union-attr]
    # a trusted OOM-only cell decides the fit
    oom = [replace(p, status="oom", metrics={}, memory={}) for p in pts[:2]]
    e2 = estimate(gpu, job, CalibrationSet(), latest_measured(oom, k=3))
    assert e2.memory.fits is False and "measured_oom" in [w.code for w in e2.warnings]


def test_unknown_figures_give_memory_without_time() -> None:
    bare = GpuSpec(slug="x-gpu", memory_bytes=48 * 10**9)
    est = estimate(bare, build_job(JobSpec(model="llama3-8b", mode="fine-tuning")), CalibrationSet())
    codes = [w.code for w in est.warnings]
    assert est.time is None and "no_time_estimate" in codes and "usable_memory_unknown" in codes
    missing = next(w for w in est.warnings if w.code == "no_time_estimate")
    assert missing.params["gpu"] == "x-gpu" and missing.params["figure"] == "memory bandwidth"
    with pytest.raises(InvalidConfiguration) as exc:
        estimate(GpuSpec(slug="y-gpu"), build_job(JobSpec(model="llama3-8b")), CalibrationSet())
    assert exc.value.field == "gpu"


# --------------------------------------------------------------------------------------------
# Issue 13: every GPU timed, provenance with its measured accuracy, derived figures
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("slug", ["nvidia-l20", "nvidia-a10g", "nvidia-rtx-6000-ada", "nvidia-l40"])
def test_newly_sourced_gpus_answer_with_time(slug: str) -> None:
    """The seeds' 'L40 or L20?' and the A10G / RTX 6000 Ada get a time, labelled, with the
    held-out error measured for that kind of answer on that architecture."""
    cals = _h200_calibration()
    for spec, provenance in (
        (JobSpec(model="llama3-8b", mode="fine-tuning", batch_size=1), "published"),
        (JobSpec(model="resnet50", precision="tf32", batch_size=128), "published"),
        (JobSpec(model="bert-large", precision="amp_fp16", batch_size=8, seq_len=384), "published"),
    ):
        est = estimate(CATALOG[slug], build_job(spec), cals)
        t = est.time
        assert t is not None, (slug, est.warnings)
        assert t.provenance == provenance
        assert t.step_time_band.low < t.step_time_s < t.step_time_band.high
        assert t.accuracy is not None and t.accuracy.provenance == provenance
        assert "held-out predictions" in t.accuracy.statement
        assert t.sources, "answers that lean on published tables name them"
        if t.accuracy.scope == "published-anchor":
            assert t.sources == ("lambda-pytorch-train-ngc2210",)
            assert any("Lambda Labs PyTorch Training GPU Benchmarks 2023" in n for n in t.notes)


def test_transferred_band_is_the_measured_transfer_error() -> None:
    """The cross-architecture band is at least the 10th-90th percentile of the held-out transfer
    errors for the target's architecture."""
    from service.core.estimation.accuracy import accuracy_for

    cals = _h200_calibration()
    job = build_job(JobSpec(model="llama3-8b", batch_size=2, seq_len=2048))
    for slug in ("nvidia-a100-sxm4-80gb", "nvidia-l40s", "nvidia-a10"):
        t = estimate(CATALOG[slug], job, cals).time
        assert t is not None and t.accuracy is not None and t.accuracy.scope == "cross-architecture"
        acc = accuracy_for("cross-architecture", t.accuracy.arch)
        assert acc is not None
        lo, hi = acc.band()
        assert t.step_time_band.low <= t.step_time_s * (1 - lo) + 1e-12
        assert t.step_time_band.high >= t.step_time_s * (1 + hi) - 1e-12


def test_derived_peak_is_labelled_and_the_band_spans_the_alternative_sibling() -> None:
    """The RTX A5000's tensor peaks are derived from the RTX A6000 (alternative: the RTX 3090's
    half-rate FP32 accumulate): the answer says so and its band covers the time at either value."""
    gpu = CATALOG["nvidia-rtx-a5000"]
    assert gpu.peak_ranges["bf16"] == (55.5, 111.1) and gpu.peak_ranges["tf32"] == (27.8, 55.5)
    cals = _h200_calibration()
    job = build_job(JobSpec(model="llama3-8b", batch_size=1, seq_len=2048))
    t = estimate(gpu, job, cals).time
    assert t is not None and t.provenance == "derived"
    assert any("derived from nvidia-rtx-a6000" in n and "nvidia-rtx-3090" in n for n in t.notes)
    cal = cals.pick(gpu, "llm-train", "amp_bf16")
    assert cal is not None
    slow = estimate_step(
        job.config,
        replace(gpu, peaks={**gpu.peaks, "bf16": 55.5, "fp16": 55.5}),  # type: ignore[arg-type]
        cal.efficiencies,
    ).step_time_s
    assert t.step_time_band.high >= slow > t.step_time_s
    assert t.accuracy is not None and t.accuracy.scope == "cross-architecture"  # the path's own error
    # a figure that is sourced is not derived: the RTX A6000 answers 'published' (the cross-GPU
    # ratio of the published tables)
    t6 = estimate(CATALOG["nvidia-rtx-a6000"], job, cals).time
    assert t6 is not None and t6.provenance == "published"
    # memory-bound work does not depend on the derived peak: no 'derived' label
    assert not CATALOG["nvidia-rtx-a5000"].bandwidth_range


def test_provenance_rank() -> None:
    from service.core.evidence.provenance import PROVENANCES, at_least, rank, weakest

    assert PROVENANCES == ("measured", "interpolated", "transferred", "published", "derived", "spec")
    assert rank("measured") > rank("interpolated") > rank("transferred") > rank("published") > rank("derived")
    assert rank("derived") > rank("spec")
    assert at_least("transferred", "published") and not at_least("derived", "published")
    assert at_least("spec", "spec") and weakest("transferred", "derived", "published") == "derived"
    with pytest.raises(ValueError, match="unknown provenance"):
        rank("guessed")


def test_one_job_spec_carries_training_variants_and_serving_questions() -> None:
    """Both estimators through one JobSpec/Job: the training variants the caller stated, the
    serving question of a continuous engine, the notices of a solve for either, and the refusal
    of a solve for encoder / CNN inference."""
    h200 = CATALOG["nvidia-h200-sxm"]
    train = build_job(
        JobSpec(model="llama3-8b", mode="fine-tuning", optimizer_impl="fused", loop="keeps_outputs")
    )
    assert train.stated == frozenset({"optimizer_impl", "loop"}) and train.serving is None
    assert train.precision == "bf16"  # the fine-tuning default
    serve = build_job(
        JobSpec(
            model="qwen2.5-72b",
            mode="inference",
            engine="vllm",
            gpu_count=8,
            tensor_parallel=4,
            requests_per_s=5.0,
            ttft_target_ms=1000,
            tpot_target_ms=50,
            solve_for="min_gpus",
        )
    )
    assert serve.serving is not None and serve.serving.requests_per_s == 5.0 and serve.gpu_count == 8
    e = estimate(h200, serve, CalibrationSet())
    assert e.serving is not None and e.serving.rate is not None and e.serving.replicas == 2
    assert e.solve is not None and e.solve.value == e.solve.replicas * e.solve.tensor_parallel  # type: ignore[operator]
    ctx = estimate(
        h200,
        build_job(
            JobSpec(model="llama3-8b", mode="inference", engine="tensorrt-llm", solve_for="max_context")
        ),
        CalibrationSet(),
    )
    assert ctx.solve is not None and "context_capped_at_model_limit" in [w.code for w in ctx.warnings]
    enc = build_job(JobSpec(model="bert-large", mode="inference", batch_size=32, solve_for="max_micro_batch"))
    with pytest.raises(InvalidConfiguration, match="encoder / CNN inference"):
        estimate(h200, enc, CalibrationSet())
    cnn = estimate(
        h200,
        build_job(JobSpec(model="resnet50", mode="inference", batch_size=64, gpu_count=2)),
        CalibrationSet(),
    )
    assert cnn.time is not None and cnn.time.samples_per_s == pytest.approx(2 * cnn.time.tokens_per_s_per_gpu)
