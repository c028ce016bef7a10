"""Issue 25's targets, as ``benchmarks/validate_estimates.py`` reports them (section "issue 25").

Reads the committed measurements (the points ``validate_estimates`` already predicted, with
their held-out predictions) and the H200 physics probe (``data/probes/h200-physics-*.jsonl``,
``benchmarks/probes/h200_physics_probe.py``), and prints each target with its figure:

* small steps (<= 500M parameters or <= 4k tokens per step): time MAPE <= 20 % -- the committed
  llm-train points held out (whole model, whole seq_len) and the probe's 24 small steps predicted
  from a fit on every committed llm-train point (the probe is not in that fit; the host-cost
  *ratios* were fitted on the probe, so the probe figure is in-sample for them);
* MoE (transformers' eager expert loop) training step and batch-1 prefill MAPE <= 20 % (probe;
  the dispatch term was fitted on it: in-sample);
* LLM training time MAPE <= 10 % (committed points, held out), memory MAPE <= 2 % with the loop
  stated;
* memory and time band coverage 75-90 %; false OOMs <= 1 % of configurations that ran;
* batch-1 TTFT: the probe's Llama-3-8B-shape prefill at 0.5k-32k tokens (hf-transformers) and,
  for published serving rows, ``benchmarks/validate_serving.py`` (batch-1 TTFT MAPE there);
* QLoRA >= 1.1x LoRA and no answer below the compute floor: counted over the catalog here and
  asserted by ``tests/core/test_floor_properties.py`` in the normal suite.
"""

from __future__ import annotations

import glob
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from service.catalog.loader import load_shipped
from service.core.catalog.models import from_hf_config, get_model
from service.core.catalog.specs import gpu_spec_from_doc
from service.core.errors import InvalidConfiguration, MissingFigure
from service.core.estimation.calibration import CalibrationSet, fit_time
from service.core.estimation.estimate import JobSpec, build_job, estimate
from service.core.estimation.memory import InferenceConfig, TrainConfig
from service.core.estimation.performance import H200_SXM, estimate_step
from service.core.estimation.serving import HostProfile, estimate_serving

ROOT = Path(__file__).resolve().parents[1]
SMALL_PARAMS = 500e6
SMALL_TOKENS = 4096


def _mape(pairs: Sequence[tuple[float, float]]) -> tuple[float, float, int]:
    errs = [abs(p / m - 1.0) for p, m in pairs if m > 0]
    return (sum(errs) / len(errs) if errs else float("nan"), max(errs) if errs else float("nan"), len(errs))


def _probe_rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for path in sorted(glob.glob(str(ROOT / "data" / "probes" / "h200-physics-*.jsonl"))):
        rows += [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    return [r for r in rows if "error" not in r and "skipped" not in r and "note" not in r]


def report(points: Sequence[Any], out: Callable[[str], None]) -> dict[str, Any]:
    """Print and return issue 25's target figures (``points``: validate_estimates' Points)."""
    res: dict[str, Any] = {}
    out("\nIssue 25 targets")
    llm = [p for p in points if p.workload == "llm-train" and p.timed and p.held_out_time]
    small = [
        p
        for p in llm
        if float(p.config.model.total_params) <= SMALL_PARAMS
        or p.config.batch_size * p.config.seq_len <= SMALL_TOKENS
    ]
    for scheme in ("model", "seq_len"):
        pairs = [(p.held_out_time[scheme], p.timed[0].value_s) for p in small if scheme in p.held_out_time]
        m, w, n = _mape(pairs)
        res[f"small_steps_held_out_{scheme}"] = m
        out(f"  small steps (<= 500M params or <= 4k tokens), committed H200 points, whole {scheme} held out: "
            f"MAPE {m:.1%} (target <= 20%), worst {w:.1%}, n={n}")  # fmt: skip
    dense = [p for p in llm if p not in small]
    for scheme in ("model", "seq_len"):
        m, w, n = _mape(
            [(p.held_out_time[scheme], p.timed[0].value_s) for p in dense if scheme in p.held_out_time]
        )
        res[f"llm_train_held_out_{scheme}"] = m
        out(
            f"  LLM training (the rest), whole {scheme} held out: MAPE {m:.1%} (target <= 10%), worst {w:.1%}, n={n}"
        )

    # one fit on every committed 16-bit llm-train point predicts the probe (not in the fit)
    train16 = [p.timed[0] for p in llm if p.config.precision in ("amp_bf16", "bf16", "amp_fp16", "fp16")]
    cal = fit_time(train16, groups=("mm", "attn", "bw", "dispatch"))
    e = cal.efficiencies
    rows = _probe_rows()
    pairs = []
    for r in rows:
        if r.get("section") != "small-step" or "step_sync_s" not in r:
            continue
        c = TrainConfig(get_model(r["model"]), "amp_bf16", batch_size=r["b"], seq_len=r["s"],
                        gradient_checkpointing=r["ckpt"], optimizer_impl="fused", loop="loss_only")  # fmt: skip
        pairs.append((estimate_step(c, H200_SXM, e).step_time_s, r["step_sync_s"]))
    m, w, n = _mape(pairs)
    res["small_steps_probe"] = m
    out(f"  small steps, the H200 probe's 24 steps predicted from that fit (dispatch {e.dispatch_s * 1e6:.1f} us; "
        f"host ratios fitted on the probe: in-sample for them): MAPE {m:.1%} (target <= 20%), worst {w:.1%}, n={n}")  # fmt: skip

    res["compiled_stack"] = _compiled_stack(e, out)

    host = HostProfile(e.dispatch_s * 1.13, e.step_s, "the committed llm-train fit")
    moe_t, moe_p, pre = [], [], []
    for r in rows:
        if r.get("section") == "moe" and r.get("variant") == "mixtral-eager":
            mm = from_hf_config(r["config"], id="probe-mixtral")
            if r["kind"] == "train":
                c = TrainConfig(
                    mm,
                    "amp_bf16",
                    batch_size=r["b"],
                    seq_len=r["s"],
                    optimizer_impl="fused",
                    loop="loss_only",
                )
                moe_t.append((estimate_step(c, H200_SXM, e).step_time_s, r["step_sync_s"]))
            else:
                ic = InferenceConfig(mm, "bf16", batch_size=1, input_len=r["s"], output_len=1)  # type: ignore[arg-type]
                moe_p.append((estimate_serving(ic, H200_SXM, e, host=host).ttft_s, r["ttft_s"]))
        if r.get("section") == "prefill":
            ic = InferenceConfig(get_model("llama3-8b"), "bf16", batch_size=1, input_len=r["s"], output_len=1)  # type: ignore[arg-type]
            pre.append((estimate_serving(ic, H200_SXM, e, host=host).ttft_s, r["ttft_s"]))
    for name, pairs, target in (("MoE training step", moe_t, 0.20), ("MoE batch-1 prefill", moe_p, 0.20),
                                ("batch-1 prefill, Llama-3-8B shape, 0.5k-32k tokens", pre, 0.25)):  # fmt: skip
        m, w, n = _mape(pairs)
        res[name] = m
        out(
            f"  {name} (H200 probe, eager transformers): MAPE {m:.1%} (target <= {target:.0%}), worst {w:.1%}, n={n}"
        )
    out(
        "  batch-1 TTFT on published serving rows: benchmarks/validate_serving.py ('batch-1 TTFT MAPE', target <= 25%)"
    )

    gpus = [gpu_spec_from_doc(d) for d in load_shipped().gpus]
    gpus = [g for g in gpus if g.peak_for("bf16") and g.bandwidth_gb_per_s]
    ratios = []
    for g in gpus:
        t = []
        for ft in ("lora", "qlora"):
            try:
                est = estimate(
                    g,
                    build_job(JobSpec(model="llama2-7b", mode="fine-tuning", finetune=ft, seq_len=2048)),
                    CalibrationSet(),
                )
            except (InvalidConfiguration, MissingFigure):
                break
            if est.time is None:
                break
            t.append(est.time.step_time_s)
        if len(t) == 2:
            ratios.append((t[1] / t[0], g.slug))
    below = [f"{s} {r:.2f}x" for r, s in sorted(ratios) if r < 1.1]
    res["qlora_over_lora_min"] = min(r for r, _ in ratios)
    out(f"  QLoRA / LoRA step, llama2-7b b1 x 2048, spec efficiencies, {len(ratios)} catalog GPUs with a time: "
        f"min {min(r for r, _ in ratios):.2f}x, median {sorted(r for r, _ in ratios)[len(ratios) // 2]:.2f}x "
        f"(target >= 1.1x); below 1.1x: {', '.join(below) or 'none'}")  # fmt: skip
    out("    physics (bitsandbytes 0.50 measured on the H200): the extra is the NF4 dequantisation traffic "
        "(small beside compute-bound GEMMs) plus bitsandbytes' Python per linear (large where the step is "
        "host-bound); a compute-bound step is ~1.0-1.05x, so 1.1x everywhere is not physical:")  # fmt: skip
    res["qlora_h200"] = _qlora_h200(out)
    out("  no answer below the compute floor; one request's TPOT independent of output_len; QLoRA >= LoRA + its "
        "dequantisation: tests/core/test_floor_properties.py (normal suite)")  # fmt: skip
    return res


def _compiled_stack(e: Any, out: Callable[[str], None]) -> dict[str, float]:
    """``stack: compiled`` against ``torch.compile`` on the H200 (``data/probes/h200-compiled-*``):
    the same committed-point fit predicts the eager and the compiled step of each probe case."""
    rows = [r for f in sorted(glob.glob(str(ROOT / "data/probes/h200-compiled-*.jsonl")))
            for r in map(json.loads, Path(f).read_text().splitlines()) if r.get("section") == "train" and "step_s" in r]  # fmt: skip
    by = {(r["model"], r["b"], r["s"], r["stack"]): r["step_s"] for r in rows}
    ratios, absolute = [], []
    for (model, b, s, stack), measured in sorted(by.items()):
        if stack != "compiled" or (model, b, s, "hf-eager") not in by:
            continue
        pred = {}
        for st in ("hf-eager", "compiled"):
            c = TrainConfig(get_model(model), "amp_bf16", batch_size=b, seq_len=s, optimizer_impl="fused",
                            loop="loss_only", stack=st)  # fmt: skip
            pred[st] = estimate_step(c, H200_SXM, e).step_time_s
        eager = by[(model, b, s, "hf-eager")]
        ratios.append((pred["compiled"] / pred["hf-eager"], measured / eager))
        absolute.append((pred["compiled"], measured))
        out(f"    {model} {b}x{s}: compiled/eager measured {measured / eager:.2f}x (eager {eager * 1e3:.0f} ms, "
            f"compiled {measured * 1e3:.0f} ms), modelled {pred['compiled'] / pred['hf-eager']:.2f}x "
            f"(compiled {pred['compiled'] * 1e3:.0f} ms)")  # fmt: skip
    m, w, n = _mape(ratios)
    ma, wa, _ = _mape(absolute)
    out(f"  stack compiled (torch.compile on the H200, held out: the factors are structural, not fitted): "
        f"speed-up ratio MAPE {m:.1%} (worst {w:.1%}), compiled step time MAPE {ma:.1%} (worst {wa:.1%}), n={n}")  # fmt: skip
    return {"ratio_mape": m, "time_mape": ma}


def _qlora_h200(out: Callable[[str], None]) -> list[tuple[str, float, float]]:
    """Modelled against measured QLoRA / LoRA on the H200 (``data/probes/h200-qlora-*.jsonl``,
    bitsandbytes 0.50.2, Llama-2-7B, peft LoRA r16), the host cost per kernel at the measured
    ``HOST_DISPATCH_MEASURED_S``; the bitsandbytes host units were read off this probe."""
    from dataclasses import replace

    from service.core.estimation.performance import HOST_DISPATCH_MEASURED_S, SPEC_DEFAULTS

    e = replace(SPEC_DEFAULTS, dispatch_s=HOST_DISPATCH_MEASURED_S)
    steps = {}
    for path in sorted(glob.glob(str(ROOT / "data" / "probes" / "h200-qlora-*.jsonl"))):
        for line in Path(path).read_text().splitlines():
            r = json.loads(line) if line.strip() else {}
            if r.get("section") == "step" and "step_s" in r:
                steps[(r["variant"], r["b"], r["s"], r["ckpt"])] = r["step_s"]
    rows = []
    for b, s, ckpt in sorted({k[1:] for k in steps}):
        t = [estimate_step(TrainConfig(get_model("llama2-7b"), "bf16", batch_size=b, seq_len=s,
                                       gradient_checkpointing=ckpt, finetune=ft), H200_SXM, e).step_time_s
             for ft in ("lora", "qlora")]  # fmt: skip
        want = steps[("qlora", b, s, ckpt)] / steps[("lora", b, s, ckpt)]
        label = f"b{b} x {s}{' ckpt' if ckpt else ''}"
        rows.append((label, t[1] / t[0], want))
        out(
            f"      H200 {label}: modelled {t[1] / t[0]:.2f}x, measured {want:.2f}x (bitsandbytes host units in-sample)"
        )
    return rows
