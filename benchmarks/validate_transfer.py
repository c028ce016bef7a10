"""Cross-GPU transfer checked the way it is used (issue 27): leave one SOURCE out, and leave one
GPU out across sources, with the precision-aware datasheet baseline beside every figure.

Points are every shipped cross-GPU published table (one source each: Lambda 2020/2021/2023,
DeepLearningExamples TF 20.06 and PyTorch 21.03, NeMo 25.11, TensorRT-LLM 0.9/0.12/0.14/0.17/0.20/1.0/1.1, MLPerf Training v4.0-v5.1,
MLPerf Inference v5.1, v6.0 and v6.1, SemiAnalysis InferenceX), one point per (source, configuration, GPU) with
the GPU's datasheet figures from the shipped catalog. A pair is two GPUs of one configuration of one source; its
error is ``|predicted ratio / measured ratio - 1|`` over ordered pairs.

* **LOSO**: each source in turn is removed, the operator-class model
  (:mod:`service.core.estimation.transfer_sources`) fitted on the others, and every pair of the
  removed source predicted.
* **LOGO across sources**: each GPU in turn is removed from every source, the model fitted on the
  rest, and every pair with that GPU predicted, in every source.
* **in-sample**: fitted on everything (what was fitted, not a held-out figure).
* **the agent's own pairs**: every configuration the agent ran on both the H200 SXM and the H100
  SXM (``data/benchmarks``), predicted by the final fit -- never fitted on, so held out; eager
  PyTorch at the plans' batches on two hosts, a check beside the published sources, not in the
  pooled figure.
* **baseline**: the geometric mean of the dense-peak ratio (of the precision that ran; 16-bit where
  MLPerf Training does not state it) and the bandwidth ratio.

Targets (issue 27): LOSO pooled <= 12 % and <= 0.6x the baseline; no family worse than its baseline.

Usage: ``python benchmarks/validate_transfer.py [--json OUT] [--write-accuracy PATH]``; while
iterating, ``--source SUBSTR`` (repeatable) leaves out only the sources whose id contains it,
``--family CLASS`` (repeatable) reports only those families' pairs, ``--breakdown`` prints where
the held-out error is (each source, family and precision's share of the pooled figure), and
``--no-logo`` skips the leave-one-GPU-out folds (the full run fits the model about 50 times; a
slice is a figure for that slice only, never the pooled one), and ``--replication`` adds the
yardstick of :func:`replication`: another source's measured ratio of the same question as the
prediction, beside the model's held-out one on the same pairs.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from service.catalog.loader import load_shipped  # noqa: E402
from service.core.catalog.specs import GpuSpec, gpu_spec_from_doc  # noqa: E402
from service.core.estimation import transfer_sources as ts  # noqa: E402
from service.core.estimation.transfer_serving import _precision_class as ts_precision_class  # noqa: E402
from service.core.evidence.published import TABLES  # noqa: E402
from service.core.evidence.published.gpus import _NAMES, FIGURES  # noqa: E402

TARGET_MAPE = 0.12
TARGET_VS_BASELINE = 0.60
ACCURACY_PATH = ROOT / "service" / "core" / "estimation" / "transfer_accuracy.json"


@dataclass(frozen=True)
class Pair:
    source: str
    cls: str
    precision_class: str
    a: str
    b: str
    error: float  # |pred/meas - 1|
    baseline_error: float
    log_error: float  # log(meas / pred)


def figures() -> dict[str, GpuSpec]:
    """Datasheet figures by slug: the shipped catalog, plus the table-only GPUs of the Lambda tables."""
    out = {g["slug"]: gpu_spec_from_doc(g) for g in load_shipped().gpus}
    for k, v in FIGURES.items():
        out.setdefault(k, v)
    return out


H200_SOURCE = "h200-agent-resnet50-infer"


def h200_points(spec: GpuSpec) -> list[ts.SourcePoint]:
    """The agent's ResNet-50 inference batch sweep on the H200 (data/benchmarks/*.json): median
    images/s per batch, one group (it informs the host term; it has no GPU pairs). Other GPUs'
    runs (the H100 SXM's) are not this group's."""
    by: dict[tuple[str, int], list[float]] = {}
    for path in sorted(glob.glob(str(ROOT / "data" / "benchmarks" / "*.json"))):
        runs = json.loads(Path(path).read_text())
        for run in runs if isinstance(runs, list) else [runs]:
            if "H200" not in str((run.get("gpu") or {}).get("name", "")):
                continue
            for r in run.get("results", []):
                prm = r.get("parameters") or {}
                thr = ((r.get("metrics") or {}).get("throughput") or {}).get("value")
                if r.get("workload") == "resnet50-infer" and r.get("status") == "ok" and thr:
                    by.setdefault((str(prm.get("precision")), int(prm["batch_size"])), []).append(float(thr))
    out: list[ts.SourcePoint] = []
    for prec in sorted({p for p, _ in by}):
        med = {b: sorted(v)[len(v) // 2] for (p, b), v in by.items() if p == prec}
        if len(med) >= 3:
            out += ts.measured_points(H200_SOURCE, spec, "cnn-infer", prec, med)
    return out


AGENT_SOURCE = "agent-h100-h200"
AGENT_CLASSES = {
    "llm-train": "llm-train",
    "resnet50-train": "cnn-train",
    "bert-large-train": "bert-train",
    "resnet50-infer": "cnn-infer",
}


def agent_points(figs: dict[str, GpuSpec]) -> list[ts.SourcePoint]:
    """The agent's own runs of one configuration on two GPUs (the H200 SXM and, since 2026-12-07,
    the H100 SXM; data/benchmarks/*.json): one point per GPU per configuration, its median step
    rate. A check only, never fitted -- eager PyTorch at the plans' batch sizes on two hosts, so
    the host's speed is in the pair as well as the GPU's."""
    by: dict[tuple[str, str], dict[str, list[float]]] = {}
    for path in sorted(glob.glob(str(ROOT / "data" / "benchmarks" / "*.json"))):
        for run in json.loads(Path(path).read_text()):
            slug = (run.get("gpu") or {}).get("slug") or (
                "nvidia-h200-sxm" if "H200" in run["gpu"]["name"] else ""
            )
            for r in run.get("results", []):
                if r["workload"] in AGENT_CLASSES and r.get("status") == "ok" and r.get("step_time_s"):
                    key = (r["workload"], json.dumps(r["parameters"], sort_keys=True))
                    by.setdefault(key, {}).setdefault(slug, []).append(float(r["step_time_s"]))
    out: list[ts.SourcePoint] = []
    for (wl, params), per_gpu in sorted(by.items()):
        precision = json.loads(params).get("precision", "amp_bf16")
        pk = ts.measured_peak_key(precision)
        if len(per_gpu) < 2:
            continue
        for slug, times in sorted(per_gpu.items()):
            g = figs[slug]
            peak, bw = g.peak_for(pk), ts.data_bandwidth_gb_per_s(g)
            if not peak or not bw or not g.bandwidth_gb_per_s:
                continue
            out.append(
                ts.SourcePoint(
                    AGENT_SOURCE,
                    (AGENT_SOURCE, wl, params),
                    slug,
                    ts.arch_of(g),
                    AGENT_CLASSES[wl],
                    ts_precision_class(precision),
                    pk,
                    math.log(peak * ts.sustained_clock(g)),
                    math.log(bw),
                    0.5 * (math.log(peak) + math.log(g.bandwidth_gb_per_s)),
                    -math.log(sorted(times)[len(times) // 2]),
                    stack="infer" if wl.endswith("-infer") else "train",
                )
            )
    return out


def all_points() -> list[ts.SourcePoint]:
    figs = figures()
    return ts.points_from(TABLES, figs, _NAMES) + h200_points(figs["nvidia-h200-sxm"])


def by_group(points: Sequence[ts.SourcePoint]) -> dict[tuple[object, ...], list[ts.SourcePoint]]:
    """The points of each configuration of each source (the GPUs a pair is formed within)."""
    out: dict[tuple[object, ...], list[ts.SourcePoint]] = {}
    for p in points:
        out.setdefault(p.group, []).append(p)
    return out


def pairs_of(
    model: ts.ClassModel,
    points: Sequence[ts.SourcePoint],
    keep: Callable[[ts.SourcePoint, ts.SourcePoint], bool],
) -> list[Pair]:
    out = []
    for members in by_group(points).values():
        for a in members:
            for b in members:
                if a.slug == b.slug or not keep(a, b):
                    continue
                meas = b.log_throughput - a.log_throughput
                pred = model.log_ratio(a, b)
                base = b.log_baseline - a.log_baseline
                out.append(
                    Pair(
                        a.source,
                        a.cls,
                        a.precision_class,
                        a.slug,
                        b.slug,
                        abs(math.exp(pred - meas) - 1.0),
                        abs(math.exp(base - meas) - 1.0),
                        meas - pred,
                    )
                )
    return out


def loso(points: Sequence[ts.SourcePoint], only: Sequence[str] = ()) -> list[Pair]:
    out: list[Pair] = []
    for s in sorted({p.source for p in points}):
        if only and not any(o in s for o in only):
            continue
        train = [p for p in points if p.source != s]
        model = ts.fit_classes(train)
        out += pairs_of(model, [p for p in points if p.source == s], lambda a, b: True)
    return out


def logo(points: Sequence[ts.SourcePoint]) -> list[Pair]:
    out: list[Pair] = []
    for g in sorted({p.slug for p in points}):
        model = ts.fit_classes([p for p in points if p.slug != g])
        out += pairs_of(model, points, lambda a, b, g=g: g in (a.slug, b.slug))
    return out


def _question(group: tuple[object, ...]) -> tuple[object, ...]:
    """A configuration's key without its source: the same question asked by another source."""
    return group[:1] + group[2:]


def replication(points: Sequence[ts.SourcePoint], out: Callable[[str], None] = print) -> dict[str, Any]:
    """How far two sources' *measured* ratios of the same question differ: for every ordered
    pair whose exact configuration (model, precision, lengths, batch, parallelism) another source
    also measured, that source's measured ratio (the median where several did) as the prediction,
    beside the model's leave-one-source-out prediction of the same pairs -- what no model of GPU
    figures can beat on these sources (stack versions and run-to-run spread), as a yardstick for
    the pooled target."""
    groups = by_group(points)
    seen: dict[tuple[object, ...], dict[str, float]] = {}
    for g, members in groups.items():
        for a in members:
            for b in members:
                if a.slug != b.slug:
                    seen.setdefault((_question(g), a.slug, b.slug), {})[a.source] = (
                        b.log_throughput - a.log_throughput
                    )
    models = {
        s: ts.fit_classes([p for p in points if p.source != s]) for s in sorted({p.source for p in points})
    }
    rep: list[float] = []
    mod: list[float] = []
    for g, members in groups.items():
        for a in members:
            for b in members:
                if a.slug == b.slug:
                    continue
                others = sorted(
                    v for s, v in seen.get((_question(g), a.slug, b.slug), {}).items() if s != a.source
                )
                if not others:
                    continue
                meas = b.log_throughput - a.log_throughput
                rep.append(abs(math.exp(others[len(others) // 2] - meas) - 1.0))
                mod.append(abs(math.exp(models[a.source].log_ratio(a, b) - meas) - 1.0))
    n = len(rep) or 1
    res = {"n": len(rep), "replication_mape": sum(rep) / n, "model_loso_mape": sum(mod) / n}
    out(
        f"  replication: {len(rep)} ordered pairs whose question another source also measured; that "
        f"source's measured ratio errs {res['replication_mape']:.1%}, the model held out "
        f"{res['model_loso_mape']:.1%}"
    )
    return res


def stats(pairs: Sequence[Pair]) -> tuple[float, float, int]:
    if not pairs:
        return math.nan, math.nan, 0
    n = len(pairs)
    return sum(p.error for p in pairs) / n, sum(p.baseline_error for p in pairs) / n, n


def _fmt(v: tuple[float, float, int]) -> str:
    a, b, n = v
    ratio = a / b if b else math.nan
    flag = "" if a <= b else "  WORSE than baseline"
    return f"{a:6.1%} vs {b:6.1%} baseline ({ratio:.2f}x, n={n}){flag}"


def report(
    name: str, pairs: Sequence[Pair], out: Callable[[str], None] = print, targets: bool = False
) -> dict[str, Any]:
    pooled = stats(pairs)
    out(f"  {name} pooled: {_fmt(pooled)}")
    res: dict[str, Any] = {"pooled": dict(zip(("mape", "baseline_mape", "n"), pooled, strict=True))}
    if targets:
        ok = pooled[0] <= TARGET_MAPE and pooled[0] <= TARGET_VS_BASELINE * pooled[1]
        out(
            f"    target <= {TARGET_MAPE:.0%} and <= {TARGET_VS_BASELINE:.1f}x baseline: {'met' if ok else 'NOT met'}"
        )
        res["target_met"] = ok
    for label, key in (("family", "cls"), ("precision", "precision_class"), ("source", "source")):
        res[f"by_{label}"] = {}
        for k in sorted({getattr(p, key) for p in pairs}):
            v = stats([p for p in pairs if getattr(p, key) == k])
            res[f"by_{label}"][k] = dict(zip(("mape", "baseline_mape", "n"), v, strict=True))
            out(f"    {label:9s} {k:34s} {_fmt(v)}")
    if targets:
        worse = [k for k, v in res["by_family"].items() if v["mape"] > v["baseline_mape"]]
        out(f"    families worse than their baseline: {', '.join(worse) if worse else 'none'}")
        res["families_worse"] = worse
    return res


def error_mass(pairs: Sequence[Pair], out: Callable[[str], None] = print, top: int = 15) -> None:
    """Where the pooled error is: each (source, family, precision) group's summed pair error as
    points of the pooled figure, largest first."""
    n = len(pairs) or 1
    mass: dict[tuple[str, str, str], list[float]] = {}
    for p in pairs:
        mass.setdefault((p.source, p.cls, p.precision_class), []).append(p.error)
    out(f"    where the error is (points of the pooled figure, top {top}):")
    for (src, cls, prec), errs in sorted(mass.items(), key=lambda kv: -sum(kv[1]))[:top]:
        out(
            f"      {100 * sum(errs) / n:5.2f}  {src} {cls} {prec} ({sum(errs) / len(errs):.1%}, n={len(errs)})"
        )


def run(
    out: Callable[[str], None] = print,
    only_sources: Sequence[str] = (),
    families: Sequence[str] = (),
    with_logo: bool = True,
    breakdown: bool = False,
    with_replication: bool = False,
) -> dict[str, Any]:
    points = all_points()

    def keep(pairs: list[Pair]) -> list[Pair]:
        return [p for p in pairs if not families or p.cls in families]

    sources = sorted({p.source for p in points})
    out(
        f"Cross-GPU transfer by operator class (service.core.estimation.transfer_sources): {len(points)} "
        f"(source, configuration, GPU) points, {len(sources)} sources, {len({p.slug for p in points})} GPUs"
    )
    full = ts.fit_classes(points)
    summary: dict[str, Any] = {"sources": sources, "n_points": len(points)}
    sliced = bool(only_sources or families)
    name = "leave one SOURCE out" + (" (a slice: not the pooled figure)" if sliced else "")
    held_out = keep(loso(points, only_sources))
    summary["loso"] = report(name, held_out, out, targets=not sliced)
    if breakdown:
        error_mass(held_out, out)
    if with_logo:
        summary["logo"] = report("leave one GPU out across sources", keep(logo(points)), out)
    if with_replication:
        summary["replication"] = replication(points, out)
    mine = [p for p in points if not only_sources or any(o in p.source for o in only_sources)]
    agent = keep(pairs_of(full, agent_points(figures()), lambda a, b: True))
    if agent and not only_sources:
        summary["agent_pairs"] = report(
            "the agent's own H100 / H200 pairs (never fitted: a check beside the published sources)",
            agent,
            out,
        )
    summary["in_sample"] = report(
        "in-sample (fitted on every source; not held out)",
        keep(pairs_of(full, mine, lambda a, b: True)),
        out,
    )
    out(
        f"  final fit on all {full.n_points} points, rms log error {full.rms_log_error:.3f}; sources: {', '.join(full.sources)}"
    )
    out(
        "    compute-bound share per class: "
        + ", ".join(f"{k} {v:.2f}" for k, v in sorted(full.share.items()))
    )
    out(
        "    per-step parameter traffic per class (reference sample-times a step, over the batch): "
        + ", ".join(f"{k} {math.exp(v):.2f}" for k, v in sorted(full.step.items()))
    )
    out(f"    all-reduce latency per ring step (serving timed from shape): {full.hop_s * 1e6:.1f} us")
    for a in sorted(full.compute):
        fams = ", ".join(
            f"{f} x{math.exp(v):.2f}" for (x, f), v in sorted(full.compute_family.items()) if x == a
        )
        out(
            f"    {a:8s} compute x{math.exp(full.compute[a]):.2f} ({fams}), memory x{math.exp(full.memory.get(a, 0.0)):.2f}"
        )
    shared = [p for p in points if p.cls not in ts.ENGINE_BOUND]
    fitted_on = {
        # every class has host and link terms (full.host); a share may also be fitted on the
        # classes tied to it (SHARED_SHARE)
        # engine-bound classes inform their own class terms only (ts.ENGINE_BOUND)
        "class_terms": {
            c: sorted({p.source for p in points if c in (p.key, p.share_key)}) for c in sorted(full.host)
        },
        "step_terms": {
            c: sorted({p.source for p in points if p.cls == c and p.step_batch}) for c in sorted(full.step)
        },
        "hops_terms": {
            "allreduce": sorted({p.source for p in shared if p.serve is not None and p.serve.hops > 0})
        },
        "architecture_terms": {
            a: sorted({p.source for p in shared if p.arch == a}) for a in sorted(full.memory)
        },
        # the compute factors per kind of stack (ts.STACK_KINDS); bandwidth is per architecture
        "compute_terms": {
            f"{a}/{k}": srcs
            for a in sorted(full.memory)
            for k in ts.STACK_KINDS
            if (srcs := sorted({p.source for p in shared if p.arch == a and p.stack == k}))
        },
    }
    out("  what was fitted on which sources (compute share, host and link terms per class; per-step")
    out("  traffic per class; all-reduce latency; bandwidth per architecture; compute per precision")
    out("  and kind of stack, listed per architecture and kind)")
    out("  -- the final fit uses all; each LOSO fold drops one:")
    for kind, d in fitted_on.items():
        for k, v in d.items():
            out(f"    {kind[:-6]:12s} {k:12s} <- {', '.join(v)}")
    summary["fitted_on"] = fitted_on
    summary["model"] = {
        "share": dict(full.share),
        "compute": dict(full.compute),
        "compute_family": {f"{a}|{f}": v for (a, f), v in full.compute_family.items()},
        "memory": dict(full.memory),
        "step": dict(full.step),
        "allreduce_hop_s": full.hop_s,
        "rms_log_error": full.rms_log_error,
    }
    return summary


def accuracy_doc(summary: dict[str, Any]) -> dict[str, Any]:
    """What the service ships: the LOSO error per family (and pooled), the baseline beside it,
    and the sources the model was fitted on."""

    def rounded(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: rounded(v) for k, v in x.items()}
        return round(x, 4) if isinstance(x, float) else x

    lo = rounded(summary["loso"])
    return {
        "generated_by": "python benchmarks/validate_transfer.py --write-accuracy",
        "basis": "leave one source out over the shipped published tables, ordered GPU pairs",
        "sources": summary["sources"],
        "pooled": lo["pooled"],
        "by_family": lo["by_family"],
        "by_precision": lo["by_precision"],
        "fitted_on": summary["fitted_on"],
        "architectures": architectures(summary),
    }


def architectures(summary: dict[str, Any]) -> dict[str, Any]:
    """The final fit's per-architecture factors as multipliers on the average part's fractions
    of its peaks (compute overall and per precision, bandwidth) with the sources each was fitted
    on: what answers use for an architecture the training-table transfer does not hold
    (``service.core.estimation.transfer_architectures``)."""
    model, fitted = summary["model"], summary["fitted_on"]["architecture_terms"]
    out: dict[str, Any] = {}
    for arch in sorted(model["memory"]):
        fams = {
            k.split("|", 1)[1]: round(math.exp(v), 4)
            for k, v in model["compute_family"].items()
            if k.split("|", 1)[0] == arch
        }
        out[arch] = {
            "compute": round(math.exp(model["compute"].get(arch, 0.0)), 4),
            "families": fams,
            "memory": round(math.exp(model["memory"][arch]), 4),
            "sources": fitted.get(arch, []),
        }
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--json", default=None, help="write the summary as JSON here")
    ap.add_argument(
        "--write-accuracy",
        nargs="?",
        const=str(ACCURACY_PATH),
        default=None,
        metavar="PATH",
        help="write the LOSO accuracy the answers quote (default service/core/estimation/transfer_accuracy.json)",
    )
    ap.add_argument(
        "--source", action="append", default=[], help="leave out only sources whose id contains this"
    )
    ap.add_argument("--family", action="append", default=[], help="report only this family's pairs")
    ap.add_argument("--no-logo", action="store_true", help="skip the leave-one-GPU-out folds")
    ap.add_argument(
        "--breakdown", action="store_true", help="print where the held-out error is, by source and family"
    )
    ap.add_argument(
        "--replication",
        action="store_true",
        help="also compare with another source's measured ratio of the same question (refits per source)",
    )
    a = ap.parse_args(argv)
    sliced = bool(a.source or a.family)
    if sliced and a.write_accuracy:
        ap.error("--write-accuracy needs the full run (no --source / --family)")
    summary = run(
        only_sources=a.source,
        families=a.family,
        with_logo=not a.no_logo,
        breakdown=a.breakdown,
        with_replication=a.replication,
    )
    if a.json:
        Path(a.json).write_text(json.dumps(summary, indent=2, default=str))
    if a.write_accuracy:
        Path(a.write_accuracy).write_text(json.dumps(accuracy_doc(summary), indent=2, sort_keys=True) + "\n")
        print(f"wrote {a.write_accuracy}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
