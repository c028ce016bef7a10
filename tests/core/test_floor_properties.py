"""Issue 25's physical floors, over the catalog (a deterministic grid, in the normal suite):

* no serving answer is below the compute floor of the prompt -- for every engine, concurrency and
  request rate, TTFT >= (2 x active linear parameters x prompt + causal attention) / the dense
  peak of the GEMM format at 100 % (chunked prefill changes how prefill interleaves, never its
  total work);
* the TPOT of one request does not depend on how many tokens it will generate, except through
  the growing KV read;
* a QLoRA step costs at least its NF4 dequantisation traffic beyond the LoRA step on every GPU
  with a time (every frozen weight dequantised before each forward and backward GEMM), and on the
  H200 the QLoRA / LoRA ratio is the one measured with bitsandbytes (1.2x where the step is
  host-bound, 1.0x at 8k tokens per micro-step: not 1.1x everywhere).
"""

from __future__ import annotations

import pytest

from service.catalog.loader import load_shipped
from service.core.catalog.models import DecoderSpec, get_model
from service.core.catalog.specs import GpuSpec, gpu_spec_from_doc
from service.core.errors import InvalidConfiguration, MissingFigure
from service.core.estimation.calibration import CalibrationSet
from service.core.estimation.estimate import JobSpec, build_job, estimate
from service.core.estimation.memory import InferenceConfig
from service.core.estimation.serving import gemm_format

CATALOG = [gpu_spec_from_doc(d) for d in load_shipped().gpus]
TIMED = [g for g in CATALOG if g.peak_for("bf16") and g.bandwidth_gb_per_s]
CAL = CalibrationSet()


def _floor_s(m: DecoderSpec, gpu: GpuSpec, c: InferenceConfig) -> float:
    """Prompt FLOPs per GPU of the replica over the GEMM format's dense peak (and 16-bit peak)."""
    key, _, _ = gemm_format(c, gpu)
    peak = max(gpu.peak_for(key) or 0.0, gpu.peak_for("bf16") or 0.0) * 1e12
    s = float(c.input_len)
    linear = float(m.num_layers * (m.active_params_per_layer - m.norm_params_per_layer))
    attn = 2.0 * m.num_layers * m.q_dim * s * s  # causal: half of 4 s^2 q per layer
    return (2.0 * linear * s + attn) / c.tensor_parallel / peak


def _serve(gpu: GpuSpec, **kw: object):  # type: ignore[no-untyped-def]
    try:
        e = estimate(gpu, build_job(JobSpec(mode="inference", **kw)), CAL)  # type: ignore[arg-type]
    except (InvalidConfiguration, MissingFigure):
        return None, None
    return e, e.serving


@pytest.mark.parametrize("model", ["llama3-8b", "mixtral-8x7b", "llama2-70b"])
def test_no_ttft_below_the_prompt_compute_floor(model: str) -> None:
    checked = 0
    for gpu in TIMED:
        for engine in ("hf-transformers", "vllm", "tensorrt-llm"):
            for input_len in (1024, 16384):
                for load in ({"concurrency": 1}, {"concurrency": 16}, {"requests_per_s": 0.2}, {}):
                    if engine == "hf-transformers" and load:
                        continue
                    tp = 8 if model != "llama3-8b" else 1
                    e, sv = _serve(
                        gpu, model=model, engine=engine, input_len=input_len, output_len=128,
                        gpu_count=tp, tensor_parallel=tp, **load,
                    )  # fmt: skip
                    if sv is None or sv.ttft_s == float("inf"):
                        continue
                    assert isinstance(e.job.config, InferenceConfig)
                    floor = _floor_s(get_model(model), gpu, e.job.config)  # type: ignore[arg-type]
                    assert sv.ttft_s >= floor, (gpu.slug, engine, input_len, load, sv.ttft_s, floor)
                    checked += 1
    assert checked > 100


def test_one_request_tpot_does_not_depend_on_its_output_length() -> None:
    """Only the KV read grows with the output: TPOT rises with it, a little, never falls."""
    for gpu in TIMED[::3]:
        for engine in ("vllm", "tensorrt-llm", "hf-transformers"):
            prev = None
            for out in (64, 256, 1024):
                _, sv = _serve(
                    gpu,
                    model="llama3-8b",
                    engine=engine,
                    input_len=4096,
                    output_len=out,
                    concurrency=1 if engine != "hf-transformers" else None,
                )
                if sv is None:
                    break
                if prev is not None:
                    assert prev <= sv.tpot_s <= prev * 1.25, (gpu.slug, engine, out, prev, sv.tpot_s)
                prev = sv.tpot_s


QLORA_JOBS = [
    {"model": "llama2-7b", "batch_size": 1, "seq_len": 2048},
    {"model": "gt-llama-1b-v32k", "batch_size": 8, "seq_len": 512},
    {"model": "llama3-8b", "batch_size": 4, "seq_len": 1024, "gradient_checkpointing": True},
]


@pytest.mark.parametrize("job", QLORA_JOBS)
def test_qlora_step_costs_its_dequantisation(job: dict[str, object]) -> None:
    """QLoRA is slower than LoRA by at least the dequantisation traffic (every frozen weight read
    as 4 bits with its absmax and written as 16, once per GEMM pass: forward and backward, and the
    recompute when checkpointed) at the datasheet bandwidth, on every GPU with a time."""
    from service.core.estimation.performance import NF4_PASS_BYTES_PER_PARAM

    checked = 0
    m = get_model(str(job["model"]))
    assert isinstance(m, DecoderSpec)
    linear = float(m.num_layers * (m.params_per_layer - m.norm_params_per_layer))
    passes = 3.0 if job.get("gradient_checkpointing") else 2.0
    for gpu in TIMED:
        times = []
        for ft in ("lora", "qlora"):
            try:
                e = estimate(gpu, build_job(JobSpec(mode="fine-tuning", finetune=ft, **job)), CAL)  # type: ignore[arg-type]
            except (InvalidConfiguration, MissingFigure):
                break
            if e.time is None:
                break
            times.append(e.time.step_time_s)
        if len(times) < 2:
            continue
        assert gpu.bandwidth_gb_per_s
        floor = passes * linear * NF4_PASS_BYTES_PER_PARAM / (gpu.bandwidth_gb_per_s * 1e9)
        assert times[1] >= times[0] + floor, (gpu.slug, job, times, floor)
        checked += 1
    assert checked > 20


def _probe_steps() -> dict[tuple[str, int, int, bool], float]:
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "data" / "probes" / "h200-qlora-2026-12-04.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return {
        (r["variant"], r["b"], r["s"], r["ckpt"]): r["step_s"]
        for r in rows
        if r.get("section") == "step" and "step_s" in r
    }


def test_qlora_over_lora_matches_the_h200_bitsandbytes_measurement() -> None:
    """Llama-2-7B, peft LoRA r16 on q/k/v/o, pure bf16, bitsandbytes 0.50.2 NF4 (double quant)
    against the bf16 base on the H200 (``data/probes/h200-qlora-2026-12-04.jsonl``): the modelled
    QLoRA / LoRA ratio is within 0.08 of the measured median at each of the six configurations
    (1.15-1.24x where the step is host-bound, 1.00x at 4 x 2048 tokens), with the host cost per
    kernel measured on that host family (``HOST_DISPATCH_MEASURED_S``), not fitted here. The
    bitsandbytes host units were read off the same probe: in-sample for them."""
    from dataclasses import replace

    from service.core.catalog.models import get_model as model
    from service.core.estimation.memory import TrainConfig
    from service.core.estimation.performance import (
        H200_SXM,
        HOST_DISPATCH_MEASURED_S,
        SPEC_DEFAULTS,
        estimate_step,
    )

    e = replace(SPEC_DEFAULTS, dispatch_s=HOST_DISPATCH_MEASURED_S)
    measured = _probe_steps()
    assert len(measured) == 12
    for b, s, ckpt in {(k[1], k[2], k[3]) for k in measured}:
        t = {
            ft: estimate_step(
                TrainConfig(
                    model("llama2-7b"),
                    "bf16",
                    batch_size=b,
                    seq_len=s,
                    gradient_checkpointing=ckpt,
                    finetune=ft,
                ),
                H200_SXM,
                e,
            ).step_time_s
            for ft in ("lora", "qlora")
        }
        want = measured[("qlora", b, s, ckpt)] / measured[("lora", b, s, ckpt)]
        assert abs(t["qlora"] / t["lora"] - want) <= 0.08, (b, s, ckpt, t, want)
