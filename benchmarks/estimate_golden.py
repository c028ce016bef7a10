"""Golden answers of the pure estimation core: a broad, deterministic grid of configurations
whose every :class:`~service.core.estimation.estimate.Estimate` (all fields) must stay bit-for-bit the same
while the core is made faster (issue 9: <= 50 us per training estimate, answers unchanged).

The grid (:func:`grid`) spans every model preset family (dense Llama/Mistral/Qwen/GPT-3, MoE
Mixtral, the small ``gt-*`` shapes, BERT, ResNet), training, fine-tuning (full, LoRA, QLoRA)
and inference/serving (hf-transformers, vLLM, TensorRT-LLM, request rates, fixed concurrency),
every training precision, batch and sequence sizes, sharding none/ddp/fsdp/zero1-3, tensor
parallelism, checkpointing, optimizers and their implementations, loop variants, the FSDP
mixed-precision policy, gpu_count 1..16, time to train, the solve-for targets and a synthetic
measured cell for some, on GPUs of the shipped catalog chosen to reach every branch (same-GPU
fit, same-architecture and cross-architecture transfer, an architecture without published data,
a derived peak, no usable-memory figure, no bandwidth, no bf16). Every configuration runs twice:
with the calibration set fitted from the committed measurements (``data/benchmarks``, built as
``benchmarks/validate_estimates.py`` builds it: one latest-measured median per cell, then
``fit_calibrations``) and with an empty set (spec defaults). The fitted set itself is part of the
answers (the fit runs the step-time model ~10^4 times).

Each answer is a canonical JSON text: dataclasses field by field, mappings in their insertion
order (answer field order is part of the API), floats by ``repr`` (exact round trip), model and
GPU inputs by id. A configuration that is refused keeps its exception type, field, code and
message as its answer. Stored per configuration: a SHA-256 of the whole answer and of each part
(memory, time, serving, solve, warnings, job), so a difference names the part; plus every 40th
answer in full (the data file stays well under 2 MB).

Usage::

    python benchmarks/estimate_golden.py --write   # record (only before changing the core)
    python benchmarks/estimate_golden.py --check   # compare; exit 1 on any difference
    python benchmarks/estimate_golden.py --show N  # print configuration N's answer in full
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import glob
import hashlib
import json
import math
import os
import random
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from service.catalog.loader import load_shipped  # noqa: E402
from service.core.catalog.models import CnnSpec, DecoderSpec, EncoderSpec, ModelNotFound, list_models  # noqa: E402
from service.core.catalog.specs import GpuSpec, gpu_spec_from_doc  # noqa: E402
from service.core.errors import InvalidConfiguration, MissingFigure  # noqa: E402
from service.core.estimation.calibration import CalibrationSet, CellMeasurement, fit_calibrations  # noqa: E402
from service.core.estimation.estimate import JobSpec, build_job, estimate  # noqa: E402
from service.core.evidence.aggregate import CellView, Point, latest_measured  # noqa: E402

DATA = ROOT / "benchmarks" / "estimate_golden.json"
SAMPLE_EVERY = 60
SEED = 20261203

GPUS: tuple[str, ...] = (
    "nvidia-h200-sxm",  # the calibrated GPU (same-gpu fits)
    "nvidia-h100-sxm",  # same architecture, other power/bandwidth
    "nvidia-h100-pcie",  # same architecture, PCIe pairs
    "nvidia-a100-sxm4-80gb",  # cross-architecture (sm80)
    "nvidia-a10g",  # sm86, no NVLink
    "nvidia-l4",  # Ada, fp8
    "nvidia-v100-sxm2-16gb",  # no bf16 support
    "nvidia-t4",  # Turing, small memory
    "nvidia-b200",  # an architecture without published data
    "nvidia-rtx-a5000",  # derived peaks (band spans the siblings)
    "nvidia-a800-pcie-80gb",  # no usable-memory figure
    "nvidia-h100-nvl-94gb",  # usable memory without a physical figure
    "nvidia-v100-sxm3-32gb",  # no bandwidth: memory only
    "amd-mi300x",  # no compute capability
    "intel-gaudi2",  # bf16 peak only
)

DECODERS = [m.id for m in list_models() if isinstance(m, DecoderSpec)]
ENCODERS = [m.id for m in list_models() if isinstance(m, EncoderSpec)]
CNNS = [m.id for m in list_models() if isinstance(m, CnnSpec)]
SMALL = [d for d in DECODERS if d.startswith("gt-") or d.startswith("tinyllama")]


# --------------------------------------------------------------------------------------------
# The grid
# --------------------------------------------------------------------------------------------


class _Pick:
    """Deterministic choices from ``random.random()`` alone (the one output CPython guarantees
    across versions for a seed; ``choice`` may change)."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def __call__(self, options: Sequence[Any]) -> Any:
        return options[int(self.r.random() * len(options))]

    def chance(self, p: float) -> bool:
        return self.r.random() < p


def _training(pick: _Pick, i: int) -> dict[str, Any]:
    family = pick(("dense", "dense", "small", "small", "moe", "encoder", "cnn"))
    model = {
        "dense": lambda: pick([d for d in DECODERS if d not in SMALL and d != "mixtral-8x7b"]),
        "small": lambda: pick(SMALL),
        "moe": lambda: "mixtral-8x7b",
        "encoder": lambda: pick(ENCODERS),
        "cnn": lambda: pick(CNNS),
    }[family]()
    kw: dict[str, Any] = {"model": model, "mode": "training"}
    kw["precision"] = pick((None, "amp_bf16", "amp_bf16", "amp_fp16", "bf16", "fp16", "fp32", "tf32"))
    kw["batch_size"] = pick((1, 1, 2, 4, 8, 16, 64) if family != "cnn" else (1, 16, 64, 256))
    if family != "cnn":
        kw["seq_len"] = pick(
            (None, 128, 512, 1024, 2048, 4096, 8192) if family != "encoder" else (None, 128, 512)
        )
    n = pick((1, 1, 1, 2, 4, 8, 16))
    kw["gpu_count"] = n
    kw["sharding"] = pick((None, None, "none", "ddp", "fsdp", "fsdp", "zero1", "zero2", "zero3"))
    if kw["sharding"] == "none" and n > 1 and pick.chance(0.5):
        kw["sharding"] = None
    if family in ("dense", "small", "moe") and n > 1 and pick.chance(0.15):
        kw["tensor_parallel"] = 2
    kw["gradient_checkpointing"] = pick.chance(0.3)
    kw["attention"] = pick(("sdpa", "sdpa", "sdpa", "eager", "flash_attention_2"))
    kw["optimizer"] = pick(("adamw", "adamw", "adamw", "sgd", "adafactor", "adamw_8bit"))
    kw["optimizer_impl"] = pick((None, None, "fused", "foreach", "forloop"))
    kw["loop"] = pick((None, None, "loss_only", "keeps_outputs"))
    if kw["sharding"] == "fsdp" and pick.chance(0.5):
        kw["mixed_precision"] = pick(("autocast", "fsdp_policy"))
    if pick.chance(0.2):
        per = kw["batch_size"] * max(1, n // kw.get("tensor_parallel", 1))
        kw["global_batch"] = per * pick((1, 2, 4, 8))
    if pick.chance(0.25):
        kw["tokens"] = pick((1e8, 2e9, 3.3e10))
    if pick.chance(0.06):
        kw["solve_for"] = pick(("max_micro_batch", "max_context", "min_gpus"))
    return kw


def _finetuning(pick: _Pick, i: int) -> dict[str, Any]:
    model = pick(DECODERS) if pick.chance(0.7) else pick(SMALL)
    kw: dict[str, Any] = {"model": model, "mode": "fine-tuning"}
    kw["finetune"] = pick((None, "lora", "lora", "qlora", "qlora", "full"))
    kw["precision"] = pick((None, None, "bf16", "amp_bf16", "fp16", "amp_fp16", "fp32"))
    kw["batch_size"] = pick((1, 1, 2, 4, 8, 16))
    kw["seq_len"] = pick((None, 512, 1024, 2048, 4096, 8192, 16384))
    kw["lora_rank"] = pick((8, 16, 16, 64))
    kw["lora_targets"] = pick(
        (
            None,
            None,
            ("q_proj", "v_proj"),
            ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"),
            ("down_proj", "o_proj"),
        )
    )
    n = pick((1, 1, 1, 2, 4, 8))
    kw["gpu_count"] = n
    kw["sharding"] = pick((None, None, "ddp", "fsdp", "zero2", "zero3"))
    kw["gradient_checkpointing"] = pick.chance(0.4)
    kw["attention"] = pick(("sdpa", "sdpa", "eager"))
    kw["optimizer"] = pick(("adamw", "adamw", "adamw", "sgd", "adafactor", "adamw_8bit"))
    kw["optimizer_impl"] = pick((None, "fused", "foreach", "forloop"))
    kw["loop"] = pick((None, "loss_only", "keeps_outputs"))
    if pick.chance(0.2):
        kw["tokens"] = pick((1e7, 5e8))
    if pick.chance(0.05):
        kw["solve_for"] = pick(("max_micro_batch", "max_context", "min_gpus"))
    return kw


def _inference(pick: _Pick, i: int) -> dict[str, Any]:
    if pick.chance(0.15):  # encoder / CNN batch inference
        model = pick(ENCODERS + CNNS)
        kw: dict[str, Any] = {"model": model, "mode": "inference"}
        kw["precision"] = pick((None, "bf16", "fp16", "amp_bf16", "fp32", "tf32"))
        kw["batch_size"] = pick((1, 8, 32, 128))
        if model in ENCODERS:
            kw["seq_len"] = pick((None, 128, 512))
        kw["gpu_count"] = pick((1, 1, 2, 4))
        return kw
    model = pick(DECODERS)
    kw = {"model": model, "mode": "inference"}
    engine = pick(("hf-transformers", "vllm", "vllm", "sglang", "tensorrt-llm", "tensorrt-llm"))
    kw["engine"] = engine
    kw["precision"] = pick((None, None, "bf16", "fp16", "fp32", "fp8", "int8"))
    kw["quant_method"] = pick(("none", "none", "none", "bnb-int8", "bnb-nf4", "awq", "gptq", "fp8", "int8"))
    kw["batch_size"] = pick((1, 1, 4, 16, 64))
    kw["input_len"] = pick((128, 512, 1024, 2048, 8192))
    kw["output_len"] = pick((1, 64, 256, 1024))
    tp = pick((1, 1, 1, 2, 4, 8))
    kw["tensor_parallel"] = tp
    kw["gpu_count"] = tp * pick((1, 1, 2))
    kw["kv_cache_dtype"] = pick(("auto", "auto", "fp8"))
    if engine != "hf-transformers":
        q = pick(("none", "none", "rate", "rate", "concurrency"))
        if q == "rate":
            kw["requests_per_s"] = pick((0.5, 2.0, 10.0, 40.0, 200.0))
            kw["input_len_cv"] = pick((0.0, 0.0, 0.5))
            kw["output_len_cv"] = pick((0.0, 0.3))
            if pick.chance(0.5):
                kw["ttft_target_ms"] = pick((200.0, 1000.0))
                kw["tpot_target_ms"] = pick((20.0, 50.0))
        elif q == "concurrency":
            kw["concurrency"] = pick((1, 8, 64, 256))
        if pick.chance(0.1):
            kw["memory_fraction"] = pick((0.7, 0.95))
    if pick.chance(0.08):
        kw["solve_for"] = pick(("max_concurrency", "max_context", "min_gpus"))
    return kw


def _fixed() -> list[dict[str, Any]]:
    """The benchmark's five cases and hand-picked corners, before the random draws."""
    return [
        {"model": "llama3-8b", "precision": "amp_bf16", "batch_size": 4, "seq_len": 2048},
        {
            "model": "llama2-70b",
            "precision": "amp_bf16",
            "batch_size": 1,
            "seq_len": 4096,
            "sharding": "fsdp",
            "gpu_count": 8,
            "gradient_checkpointing": True,
        },
        {
            "model": "llama2-13b",
            "mode": "fine-tuning",
            "precision": "bf16",
            "batch_size": 2,
            "seq_len": 4096,
            "finetune": "lora",
        },
        {
            "model": "mixtral-8x7b",
            "precision": "bf16",
            "batch_size": 1,
            "seq_len": 2048,
            "sharding": "zero3",
            "gpu_count": 8,
        },
        {
            "model": "qwen2.5-7b",
            "mode": "fine-tuning",
            "precision": "bf16",
            "batch_size": 1,
            "seq_len": 8192,
            "finetune": "qlora",
        },
        {"model": "gt-llama-350m", "batch_size": 4, "seq_len": 1024, "optimizer_impl": "fused"},
        {"model": "llama3-8b", "sharding": "fsdp", "gpu_count": 16, "mixed_precision": "fsdp_policy"},
        {"model": "llama3-8b", "gpu_count": 4, "tensor_parallel": 2, "sharding": "zero1"},
        {"model": "llama3.1-405b", "sharding": "fsdp", "gpu_count": 16, "solve_for": "min_gpus"},
        {"model": "llama3-8b", "solve_for": "max_micro_batch"},
        {"model": "llama3-8b", "solve_for": "max_context"},
        {"model": "llama3-8b", "mode": "inference", "solve_for": "max_concurrency"},
        {
            "model": "llama3-8b",
            "mode": "inference",
            "engine": "vllm",
            "requests_per_s": 5.0,
            "solve_for": "min_gpus",
            "ttft_target_ms": 500.0,
            "tpot_target_ms": 40.0,
        },
        {
            "model": "llama3-70b",
            "mode": "inference",
            "engine": "tensorrt-llm",
            "tensor_parallel": 4,
            "gpu_count": 8,
            "requests_per_s": 20.0,
        },
        {"model": "resnet50", "batch_size": 256, "precision": "amp_bf16"},
        {"model": "bert-large", "batch_size": 32, "seq_len": 512, "precision": "fp32"},
        {"params_billion": 13.0, "batch_size": 2},
        {"model": "llama3-8b", "precision": "fp8"},  # refused: no fp8 training
        {"model": "bert-base", "finetune": "lora", "mode": "fine-tuning"},  # refused: LoRA on an encoder
    ]


def grid(n_random: int = 1100) -> list[dict[str, Any]]:
    """Job keyword sets (``JobSpec`` fields), deterministic: fixed corners, then draws."""
    pick = _Pick(SEED)
    out = _fixed()
    kinds = (_training, _training, _training, _finetuning, _finetuning, _inference, _inference)
    for i in range(n_random):
        out.append(pick(kinds)(pick, i))
    return out


# --------------------------------------------------------------------------------------------
# Inputs: catalog, calibrations, synthetic measured cells
# --------------------------------------------------------------------------------------------


def catalog() -> dict[str, GpuSpec]:
    specs = {d["slug"]: gpu_spec_from_doc(d) for d in load_shipped().gpus}
    return {slug: specs[slug] for slug in GPUS}


def fitted_calibrations() -> CalibrationSet:
    """Calibrations from the committed measurements, as ``benchmarks/validate_estimates.py``
    builds them: each (GPU, cell) merged to its median, fed to ``fit_calibrations``."""
    import benchmarks.validate_estimates as ve

    pts = ve.load_points(sorted(glob.glob(str(ROOT / "data" / "benchmarks" / "*.json"))))
    cells = [
        CellMeasurement(
            p.gpu,
            p.workload,
            p.params,
            {**p.metrics, **({"step_time_s": p.measured_time} if p.measured_time else {})},
        )
        for p in pts
        if p.status == "ok"
    ]
    return fit_calibrations(cells)


def measured_view(i: int, job_kind: str) -> CellView | None:
    """A synthetic latest-measured view for every 9th configuration (times, serving latencies,
    peak memory; every 4th of those an OOM-only cell), trusted so it counts as ``measured``."""
    if i % 9 != 4:
        return None
    t0 = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
    if (i // 9) % 4 == 3:
        pts = [Point(k, "fp", "host", True, "oom", False, t0 + dt.timedelta(minutes=k)) for k in range(2)]
        return latest_measured(pts, k=3)
    metrics: list[dict[str, float]] = []
    for k, f in enumerate((1.0, 1.1, 0.95, 1.3, 1.02)):
        if job_kind == "serving":
            metrics.append({"ttft_ms_p50": 80.0 * f, "tpot_ms_p50": 12.0 * f})
        else:
            metrics.append({"step_time_s": 0.25 * f + 0.001 * k})
    pts = [
        Point(
            k,
            "fp",
            "host",
            True,
            "ok",
            False,
            t0 + dt.timedelta(minutes=k),
            m,
            {"peak_allocated_bytes": (20 + k) * 2**30},
        )
        for k, m in enumerate(metrics)
    ]
    return latest_measured(pts, k=3)


# --------------------------------------------------------------------------------------------
# Canonical form
# --------------------------------------------------------------------------------------------


def canon(x: Any) -> Any:
    """A JSON-ready value: dataclasses field by field (properties a caller reads included where
    listed), mappings in insertion order, floats exact (``repr`` round-trips), inputs by id."""
    if isinstance(x, DecoderSpec | EncoderSpec | CnnSpec):
        return {"model": x.id}
    if isinstance(x, GpuSpec):
        return {"gpu": x.slug}
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        out: dict[str, Any] = {"__type__": type(x).__name__}
        for f in dataclasses.fields(x):
            if f.name.startswith("_"):
                continue
            out[f.name] = canon(getattr(x, f.name))
        return out
    if isinstance(x, float):
        if math.isnan(x) or math.isinf(x):
            return {"float": repr(x)}
        return x
    if isinstance(x, bool | int | str) or x is None:
        return x
    if isinstance(x, Mapping):
        return {"__map__": [[canon(k), canon(v)] for k, v in x.items()]}
    if isinstance(x, frozenset | set):
        return {"__set__": sorted(canon(v) for v in x)}
    if isinstance(x, tuple | list):
        return [canon(v) for v in x]
    raise TypeError(f"cannot canonicalise {type(x).__name__}")


def _dump(x: Any) -> str:
    return json.dumps(x, separators=(",", ":"), allow_nan=False)


def answer(
    gpu: GpuSpec, kw: dict[str, Any], cals: CalibrationSet, measured: CellView | None
) -> dict[str, Any]:
    """The canonical answer for one configuration: the Estimate's parts, or the refusal."""
    try:
        js = JobSpec(**kw)
        job = build_job(js)
        est = estimate(gpu, job, cals, measured)
    except (InvalidConfiguration, MissingFigure, ModelNotFound, ValueError) as exc:
        return {
            "error": {
                "type": type(exc).__name__,
                "field": getattr(exc, "field", None),
                "code": getattr(exc, "code", None),
                "message": str(exc),
            }
        }
    return {
        "job": canon(est.job),
        "configuration": canon(est.configuration),
        "memory": canon(est.memory),
        "time": canon(est.time),
        "serving": canon(est.serving),
        "solve": canon(est.solve),
        "warnings": canon(est.warnings),
    }


def _sha(text: str, n: int = 16) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def _key(kw: dict[str, Any]) -> str:
    return _dump({k: canon(v) for k, v in kw.items()})


def evaluate(limit: int | None = None) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(configuration key, canonical text, parts) for every configuration, in grid order."""
    gpus = catalog()
    t0 = time.process_time()
    fitted = fitted_calibrations()
    print(f"calibrations fitted in {time.process_time() - t0:.1f} s CPU", file=sys.stderr)
    cal_text = _dump(canon(fitted.by_key)) + _dump(canon(fitted.gemm_tflops)) + _dump(canon(fitted.families))
    yield "calibrations", cal_text, {"|".join(k): canon(c) for k, c in fitted.by_key.items()}
    slugs = list(GPUS)
    jobs = grid()
    for i, kw in enumerate(jobs[:limit]):
        # each configuration on three GPUs (rotating through the list), with both calibration sets
        kind = "serving" if kw.get("mode") == "inference" else "train"
        view = measured_view(i, kind)
        for j in range(3):
            slug = slugs[(i * 3 + j) % len(slugs)]
            for name, cals in (("fitted", fitted), ("spec", CalibrationSet())):
                a = answer(gpus[slug], kw, cals, view if name == "fitted" else None)
                text = _dump(a)
                # the inputs, hashed (``--show`` prints them): GPU, calibration set, job, measured cell
                key = f"{i}|{slug}|{name}|" + _sha(
                    _key(kw) + ("|measured" if view is not None and name == "fitted" else ""), 12
                )
                yield key, text, a


# --------------------------------------------------------------------------------------------
# Write / check
# --------------------------------------------------------------------------------------------


def _record(key: str, text: str, parts: dict[str, Any], index: int) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "key": key,
        "sha": _sha(text),
        "parts": {k: _sha(_dump(v), 12) for k, v in parts.items()},
    }
    if index % SAMPLE_EVERY == 0:
        rec["full"] = parts
    return rec


def write() -> int:
    recs = [_record(k, t, p, i) for i, (k, t, p) in enumerate(evaluate())]
    errors = sum(1 for r in recs if "error" in r["parts"])
    lines = [json.dumps(r, separators=(",", ":")) for r in recs]
    head = json.dumps({"seed": SEED, "answers": len(recs)})[:-1]
    DATA.write_text(head + ', "records": [\n' + ",\n".join(lines) + "\n]}\n")
    print(
        f"wrote {len(recs)} answers ({errors} refusals) to {DATA.relative_to(ROOT)} "
        f"({DATA.stat().st_size / 1e6:.2f} MB)"
    )
    return 0


def check() -> int:
    stored = json.loads(DATA.read_text())
    recs = stored["records"]
    t0 = time.process_time()
    diffs = 0
    n = 0
    for i, (key, text, parts) in enumerate(evaluate()):
        n += 1
        if i >= len(recs):
            print(f"extra configuration {i}: {key}")
            diffs += 1
            continue
        rec = recs[i]
        if rec["key"] != key:
            print(f"configuration {i} differs in its inputs: {rec['key']} != {key}")
            diffs += 1
            continue
        if rec["sha"] == _sha(text):
            continue
        diffs += 1
        now = {k: _sha(_dump(v), 12) for k, v in parts.items()}
        bad = sorted(k for k in set(now) | set(rec["parts"]) if now.get(k) != rec["parts"].get(k))
        if diffs <= 20 or os.environ.get("GOLDEN_ALL"):
            print(f"DIFF {i}: {key}: parts {', '.join(bad)}")
            if "full" in rec:
                for part in bad:
                    print(f"   stored {part}: {_dump(rec['full'].get(part))[:600]}")
                    print(f"   now    {part}: {_dump(parts.get(part))[:600]}")
    if n < len(recs):
        print(f"{len(recs) - n} stored configurations missing")
        diffs += len(recs) - n
    print(
        f"{n} answers compared ({n - 1} configuration x GPU x calibration-set answers, refusals included, "
        f"+ the fitted calibration set), {diffs} differences "
        f"({time.process_time() - t0:.1f} s CPU)"
    )
    return 1 if diffs else 0


def show(index: int) -> int:
    """Answer ``index`` (0 is the calibration set) with its inputs, in full."""
    jobs = grid()
    for i, (key, _text, parts) in enumerate(evaluate()):
        if i == index:
            cfg = int(key.split("|")[0]) if "|" in key else None
            print(key, "" if cfg is None else json.dumps({k: canon(v) for k, v in jobs[cfg].items()}))
            print(json.dumps(parts, indent=1))
            return 0
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="golden answers of the estimation core")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", action="store_true")
    g.add_argument("--check", action="store_true")
    g.add_argument("--show", type=int, metavar="N")
    args = ap.parse_args(argv)
    if args.write:
        return write()
    if args.check:
        return check()
    return show(args.show)


if __name__ == "__main__":
    raise SystemExit(main())
