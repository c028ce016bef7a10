"""The H100 SXM as the service answered it before it was measured, scored on the agent's own
measurement of it (issue 27: cross-GPU transfer on data no fit has seen).

Until 2026-12-06 every measurement the project held came from one GPU, the H200; answers for the
H100 SXM were transferred from it (same architecture, the datasheet's bandwidth and clocks, the
published tables' per-architecture factors). This script keeps that question honest in two steps:

``--predict``
    asks ``POST /v1/estimate`` (the real app on a fresh SQLite database with the shipped catalog
    and measurements, less any of the target GPU) for every configuration of the agent's plans on the H100 SXM and writes
    the answers -- peak allocated memory and its band, whether it fits, step time or TTFT / TPOT
    and their bands, provenance -- to ``data/holdout/``. The file is committed before the
    measurement it is scored against exists (the commit date is the proof).
``--score MEASURED.json ...``
    reads that file and the agent's result files of an H100 and prints, per workload, the
    absolute percentage error of the answer's time and memory, the OOM decisions both ways, and
    beside each time the datasheet baseline: the H200's measurement of the same cell times the
    geometric mean of the H200 / H100 dense tensor-peak ratio (at the precision that ran) and
    bandwidth ratio -- what a reader of the two datasheets would say.

    python benchmarks/h100_holdout.py --predict [--out PATH]
    python benchmarks/h100_holdout.py --score data/benchmarks/h100-sxm-*.json [--predictions PATH]
"""

from __future__ import annotations

import argparse
import functools
import glob
import json
import math
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PLANS = ("service/agent/plans/h200-groundtruth.json", "service/agent/plans/h200-variants.json")
TARGET = "nvidia-h100-sxm"
SOURCE = "nvidia-h200-sxm"
DEFAULT_OUT = ROOT / "data" / "holdout" / "h100-sxm-predicted-2026-12-06.json"
TIMED = {
    "llm-train": "step_time_s",
    "bert-large-train": "step_time_s",
    "resnet50-train": "step_time_s",
    "bert-large-infer": "step_time_s",
    "resnet50-infer": "step_time_s",
    "llm-infer": "tpot_ms_p50",
}
"""The measured metric each workload's answer is scored on (llm-infer: TTFT as well)."""


def request_for(workload: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """The ``/v1/estimate`` body that asks exactly the agent's configuration on the target."""
    p = dict(params)
    body: dict[str, Any] = {"gpu": TARGET}
    if workload == "llm-train":
        body |= {
            "mode": "training",
            "optimizer_impl": "fused",
            **p,
        }  # the agent's AdamW (the API's default is foreach)
        if p.get("finetune", "full") == "full":
            body.pop("lora_rank", None)
    elif workload == "llm-infer":
        body |= {"mode": "inference", "engine": "hf-transformers", **p}
    elif workload in ("resnet50-train", "bert-large-train"):
        body |= {"mode": "training", "model": workload.split("-train")[0], **p}
    elif workload in ("resnet50-infer", "bert-large-infer"):
        body |= {"mode": "inference", "model": workload.split("-infer")[0], **p}
    else:
        return None  # gemm and memory-bandwidth are the datasheet's own figures
    return body


def _answer(doc: dict[str, Any]) -> dict[str, Any]:
    mem = doc.get("memory") or {}
    out: dict[str, Any] = {
        "peak_allocated_bytes": mem.get("peak_allocated_bytes"),
        "peak_allocated_band": mem.get("peak_allocated_band"),
        "fits": mem.get("fits"),
        "memory_provenance": mem.get("provenance"),
    }
    t = doc.get("time")
    if t:
        out |= {"step_time_s": t.get("step_time_s"), "step_time_band": t.get("step_time_band")}
        out["time_provenance"] = t.get("provenance")
    s = doc.get("serving")
    if s:
        for k in ("ttft_ms", "ttft_band_ms", "tpot_ms", "tpot_band_ms", "provenance", "source_gpus"):
            out[f"serving_{k}"] = s.get(k)
    return out


def _without_target() -> Path:
    """A copy of the shipped measurement files without the target GPU's runs: the answers stay
    held out once its measurements ship."""
    out = Path(tempfile.mkdtemp(prefix="gpua-h100-")) / "measurements"
    out.mkdir()
    for path in sorted((ROOT / "data" / "benchmarks").glob("*.json")):
        runs = [r for r in json.loads(path.read_text()) if (r.get("gpu") or {}).get("slug") != TARGET]
        if runs:
            (out / path.name).write_text(json.dumps(runs))
    return out


def _client() -> Any:
    """The real app on a fresh database with the shipped catalog and every measurement but the
    target's (:func:`_without_target`)."""
    from benchmarks.fresh_app import fresh_client

    return fresh_client("gpua-h100-", _without_target())


def predict(out_path: Path, say: Any = print) -> int:
    """Ask every plan configuration of the target; write the answers (see the module doc)."""
    from service.core.catalog.vocabulary import canonical_parameters, parameters_hash

    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    with _client() as client:
        versions: dict[str, Any] = {}
        for plan in PLANS:
            for cfg in json.loads((ROOT / plan).read_text())["configs"]:
                wl, params = cfg["workload"], cfg["parameters"]
                body = request_for(wl, params)
                if body is None:
                    continue
                canon = canonical_parameters(wl, params)
                key = parameters_hash(wl, canon)
                if key in seen:
                    continue
                seen.add(key)
                r = client.post("/v1/estimate", json=body)
                row = {
                    "workload": wl,
                    "parameters": canon,
                    "hash": key,
                    "request": body,
                    "status": r.status_code,
                }
                row["answer"] = _answer(r.json()) if r.status_code == 200 else {"problem": r.json()}
                if r.status_code == 200 and not versions:
                    versions = {k: r.json().get(k) for k in ("data_version", "estimator_version")}
                rows.append(row)
                say(f"{r.status_code} {wl:16s} {json.dumps(params, sort_keys=True)[:110]}")
    doc = {
        "asked": "POST /v1/estimate on a fresh SQLite database with the shipped catalog and measurements "
        "(none of the target GPU)",
        "gpu": TARGET,
        "service": versions,
        "plans": list(PLANS),
        "rows": rows,
    }
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    say(f"{len(rows)} configurations asked; written to {out_path}")
    return 0


def _measured(paths: Iterable[str], slug: str) -> dict[str, dict[str, Any]]:
    """hash -> {status, peak, metrics} of one GPU's results (median over repeated passes)."""
    from service.core.catalog.vocabulary import VocabularyError, canonical_parameters, parameters_hash

    acc: dict[str, list[dict[str, Any]]] = {}
    for path in paths:
        for run in json.loads(Path(path).read_text()):
            if (run.get("gpu") or {}).get("slug") != slug:
                continue
            for r in run.get("results", []):
                try:
                    canon = canonical_parameters(r["workload"], r.get("parameters") or {})
                except (VocabularyError, KeyError):
                    continue
                acc.setdefault(parameters_hash(r["workload"], canon), []).append(r)
    out = {}
    for key, rs in acc.items():
        ok = [r for r in rs if r.get("status") == "ok"]
        m: dict[str, list[float]] = {}
        for r in ok:
            for k, v in (r.get("metrics") or {}).items():
                if isinstance(v, dict) and "value" in v:
                    m.setdefault(k, []).append(float(v["value"]))
        peaks = [float(r["peak_allocated_bytes"]) for r in ok if r.get("peak_allocated_bytes")]
        out[key] = {
            "status": "ok" if ok else rs[0].get("status"),
            "peak": _median(peaks) if peaks else None,
            "metrics": {k: _median(v) for k, v in m.items()},
        }
    return out


def _median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


@functools.cache
def _datasheet_ratio(precision: str) -> float:
    """Target time / source time by the datasheets: the geometric mean of the source / target
    dense tensor-peak ratio at the precision that ran and the bandwidth ratio (one catalog load
    per precision, not per scored row)."""
    from service.catalog.loader import load_shipped
    from service.core.catalog.specs import gpu_spec_from_doc

    specs = {g["slug"]: gpu_spec_from_doc(g) for g in load_shipped().gpus}
    a, b = specs[SOURCE], specs[TARGET]
    pa, pb = a.peak_for(precision), b.peak_for(precision)
    compute = pa / pb if pa and pb else 1.0
    return math.sqrt(compute * a.bandwidth_gb_per_s / b.bandwidth_gb_per_s)


def _predicted_time(row: dict[str, Any], metric: str) -> float | None:
    a = row["answer"]
    if metric == "step_time_s":
        return a.get("step_time_s")
    if metric == "tpot_ms_p50":
        return a.get("serving_tpot_ms")
    if metric == "ttft_ms_p50":
        return a.get("serving_ttft_ms")
    return None


def score(pred_path: Path, measured_paths: Sequence[str], say: Any = print) -> dict[str, Any]:
    """APE of the pre-registered answers against the target's measurements, beside the baseline."""
    pred = json.loads(pred_path.read_text())
    target = _measured(measured_paths, TARGET)
    source = _measured(sorted(glob.glob(str(ROOT / "data" / "benchmarks" / "*.json"))), SOURCE)
    per: dict[str, dict[str, list[float]]] = {}
    oom = {"agree": 0, "missed": 0, "false": 0}
    for row in pred["rows"]:
        m = target.get(row["hash"])
        if m is None or row["status"] != 200:
            continue
        a = row["answer"]
        if m["status"] in ("ok", "oom") and a.get("fits") is not None:
            fits = m["status"] == "ok"
            oom["agree" if fits == a["fits"] else ("missed" if a["fits"] else "false")] += 1
        if m["status"] != "ok":
            continue
        wl = row["workload"]
        if m["peak"] and a.get("peak_allocated_bytes"):
            per.setdefault(wl, {}).setdefault("memory", []).append(
                abs(a["peak_allocated_bytes"] / m["peak"] - 1)
            )
        metrics = [TIMED[wl]] + (["ttft_ms_p50"] if wl == "llm-infer" else [])
        for metric in metrics:
            meas, p = m["metrics"].get(metric), _predicted_time(row, metric)
            src = (source.get(row["hash"]) or {}).get("metrics", {}).get(metric)
            if not meas or not p or not src:
                continue
            base = src * _datasheet_ratio(str(row["parameters"].get("precision", "bf16")))
            d = per.setdefault(wl, {})
            d.setdefault(f"{metric}", []).append(abs(p / meas - 1))
            d.setdefault(f"{metric} baseline", []).append(abs(base / meas - 1))
    report: dict[str, Any] = {"oom": oom, "per": {}}
    say(f"{'workload':18s} {'figure':26s} {'n':>4s} {'service':>8s} {'baseline':>9s}")
    for wl in sorted(per):
        for fig, errs in sorted(per[wl].items()):
            if fig.endswith("baseline"):
                continue
            base = per[wl].get(f"{fig} baseline")
            mape = sum(errs) / len(errs)
            b = sum(base) / len(base) if base else None
            report["per"][f"{wl} {fig}"] = {"n": len(errs), "mape": mape, "baseline": b}
            say(f"{wl:18s} {fig:26s} {len(errs):4d} {mape:8.1%} {'' if b is None else f'{b:9.1%}'}")
    say(
        f"OOM decisions: {oom['agree']} agree, {oom['missed']} predicted to fit and ran out, {oom['false']} predicted not to fit and ran"
    )
    return report


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--predict", action="store_true", help="ask the service and write the answers")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--score", nargs="+", metavar="MEASURED", help="the target's result files")
    ap.add_argument("--predictions", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--json", type=Path, help="write the score report here")
    args = ap.parse_args(argv)
    if args.predict:
        return predict(args.out)
    if args.score:
        rep = score(args.predictions, [p for g in args.score for p in sorted(glob.glob(g))])
        if args.json:
            args.json.write_text(json.dumps(rep, indent=1) + "\n")
        return 0
    ap.error("give --predict or --score")
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
