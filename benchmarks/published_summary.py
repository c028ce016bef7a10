"""Summary of the shipped published tables: rows, GPUs and GPU pairs per precision family.

A pair counts when two GPUs of the same table share at least one configuration (workload, model,
metric, lengths, TP, GPU count, offered rate) in the same precision family -- the pairs a
leave-one-GPU-out check can use. ``catalogued`` counts only GPUs with a catalog slug.

    python benchmarks/published_summary.py [--json PATH]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from service.core.evidence.published import FAMILIES, TABLES, summary


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--json", default=None, help="write the summary as JSON here")
    args = ap.parse_args(argv)
    s = summary()
    head = f"{'table':38} {'kind':8} {'date':10} {'rows':>5} {'GPUs':>4} {'cat':>3}  " + "  ".join(
        f"{f:>9}" for f in FAMILIES
    )
    print(head)
    print("-" * len(head))
    for d in s:
        p, c = d["pairs_by_family"], d["catalogued_pairs_by_family"]
        assert isinstance(p, dict) and isinstance(c, dict)
        cells = "  ".join(f"{p[f]:>4}/{c[f]:<4}" for f in FAMILIES)
        flag = "" if d["cross_gpu"] else "  (not cross-GPU)"
        print(
            f"{d['id']:38} {d['kind']:8} {d['date']:10} {d['rows']:>5} {d['gpus']:>4} "
            f"{d['catalogued_gpus']:>3}  {cells}{flag}"
        )
    print("-" * len(head))
    n_rows = sum(int(str(d["rows"])) for d in s)
    gpus = {r.gpu_name for t in TABLES for r in t.rows}
    slugs = {r.slug for t in TABLES for r in t.rows if r.slug}
    print(f"{len(TABLES)} tables, {n_rows} rows, {len(gpus)} distinct GPU names, {len(slugs)} catalog slugs")
    print("pairs columns: all GPU pairs / pairs of catalogued GPUs, per precision family")
    for t in TABLES:
        print(f"  {t.id}: {t.stack} -- GPUs: {', '.join(t.gpus())}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(s, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
