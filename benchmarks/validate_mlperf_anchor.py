"""Held-out check of the MLPerf Training anchor for LLM training (service/core/estimation/mlperf_anchor.py).

Leave one round out: for each MLPerf Training round the anchor reads and each GPU that ran
Llama-2-70B LoRA on an 8-GPU system beside the H200 in it, the anchor built from the *other*
rounds predicts the GPU's per-GPU work rate over the H200's; the datasheet baseline predicts the
dense 16-bit peak ratio. Printed per (round, GPU) with both errors, and their means.

    .venv/bin/python benchmarks/validate_mlperf_anchor.py
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from service.catalog.loader import load_shipped
from service.core.catalog.specs import gpu_spec_from_doc
from service.core.estimation.mlperf_anchor import ANCHOR_TABLES, per_gpu_rates, training_anchor
from service.core.evidence.published import get_table

SOURCE = "nvidia-h200-sxm"


def main() -> int:
    specs = {d["slug"]: gpu_spec_from_doc(d) for d in load_shipped().gpus}
    print(
        f"{'round':22} {'GPU':18} {'anchor':>7} {'peaks':>7} {'measured':>9} {'err anchor':>11} {'err peaks':>10}"
    )
    errs: list[tuple[float, float]] = []
    for held in ANCHOR_TABLES:
        rates = {k: statistics.median(v) for k, v in per_gpu_rates(get_table(held).rows).items()}
        if SOURCE not in rates:
            continue
        others = tuple(t for t in ANCHOR_TABLES if t != held)
        for slug in sorted(rates):
            if slug == SOURCE or slug not in specs:
                continue
            a = training_anchor(specs[SOURCE], specs[slug], others)
            if a is None:
                continue
            measured = rates[slug] / rates[SOURCE]
            e_anchor, e_peaks = abs(a.measured_ratio / measured - 1.0), abs(a.peak_ratio / measured - 1.0)
            errs.append((e_anchor, e_peaks))
            print(
                f"{held:22} {slug:18} {a.measured_ratio:7.3f} {a.peak_ratio:7.3f} {measured:9.3f} "
                f"{e_anchor:10.1%} {e_peaks:10.1%}"
            )
    if not errs:
        print("no (round, GPU) pair has another round to anchor on")
        return 1
    print(
        f"{len(errs)} held-out (round, GPU) ratios: anchor error mean {statistics.mean(e for e, _ in errs):.1%}, "
        f"datasheet peaks {statistics.mean(p for _, p in errs):.1%}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
