"""Leave-one-source-out figures of the cross-GPU transfer under other values of its fixed
constants (issue 27): a study, not shipped. Each variant runs in a fresh process with the
constant replaced for that process only, and prints the pooled held-out figure
(``benchmarks/validate_transfer.py --no-logo``'s first line, to three decimals) and per source.

Variants:

* ``baseline``: the shipped constants.
* ``eps-<arch>=<W>`` (comma-joined for several): the board power per dense 16-bit TFLOP/s at full
  clock that sets each part's sustained clock under its power cap
  (``transfer_sources.sustained_clock``), for one architecture (``sm80``, ``sm89``, ``sm90`` ...)
  or ``all``; 1.0 W everywhere is shipped (``transfer.EPS0_W_PER_TFLOP``), Hopper measured 1.76 W
  (``data/probes/h100-sustained-clock-2026-12-07.json``).
* ``ridge-<kind>=<w>`` (comma-joined): a prior weight of the fit (``transfer_class_fit.RIDGE``:
  ``d`` per-architecture compute per precision, ``m`` per-architecture bandwidth, ...).
* ``gamma-all=<x>``: the exponent of the sustained clock in the board power (``f ~ P^gamma``;
  1/3 shipped, ``transfer.CLOCK_EXPONENT``). AMD's measured GEMM clocks (below) give 0.63 between
  the MI300X (750 W) and the MI325X (1,000 W), one die at two powers.
* ``clock-<slug>=<share>`` (comma-joined): a part's sustained share of its peak clock, measured,
  in place of the power law. ``clock-amd-mi300x=0.5748,amd-mi325x=0.6890`` are AMD's
  "Max-Achievable FLOPs" BF16 median clocks, 1,207 and 1,447 MHz of the 2,100 MHz the peaks are
  stated at (hipBLASLt, 4096 x 4864 x 32896; ROCm blog "Measuring Max-Achievable FLOPs -- Part 2",
  2025-02-28, ``ROCm/rocm-blogs`` ``blogs/software-tools-optimization/measuring-max-achievable-flops-part2``).

    python benchmarks/transfer_variants.py [VARIANT ...]     # default: the set below, 2 at a time
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

DEFAULT: tuple[str, ...] = (
    "baseline",
    "eps-sm90=1.76",
    "eps-all=1.3",
    "eps-all=1.76",
    "eps-sm80=2.0",
    "eps-sm89=2.0",
    "ridge-d=0.3,m=0.3",
    "ridge-d=3,m=3",
    "gamma-all=0.63",
    "clock-amd-mi300x=0.5748,amd-mi325x=0.6890",
)


KINDS = ("baseline", "eps", "ridge", "gamma", "clock")


def _parse(variant: str) -> tuple[str, dict[str, float]]:
    """A variant's kind and its KEY=VALUE settings; exits on a malformed one (before any work)."""
    kind, _, body = variant.partition("-")
    if kind not in KINDS:
        raise SystemExit(f"unknown variant {variant!r} (kinds: {', '.join(KINDS)})")
    values: dict[str, float] = {}
    for kv in filter(None, body.split(",")):
        k, _, v = kv.partition("=")
        if not v:
            raise SystemExit(f"{variant}: expected KEY=VALUE, got {kv!r}")
        values[k] = float(v)
    if kind == "ridge":
        from service.core.estimation import transfer_sources  # noqa: F401  (the fit module imports it)
        from service.core.estimation.transfer_class_fit import RIDGE

        if unknown := set(values) - set(RIDGE):
            raise SystemExit(f"{variant}: no prior named {sorted(unknown)} (known: {sorted(RIDGE)})")
    return kind, values


def _apply(variant: str) -> None:
    """Replace the variant's constants in this process's modules."""
    kind, values = _parse(variant)
    if kind == "eps":
        from service.core.estimation import transfer_sources as ts
        from service.core.estimation.transfer import EPS0_W_PER_TFLOP, clock_factor

        default = values.pop("all", EPS0_W_PER_TFLOP)
        ts.sustained_clock = lambda gpu: clock_factor(gpu, values.get(ts.arch_of(gpu), default))
    elif kind == "ridge":
        from service.core.estimation.transfer_class_fit import RIDGE

        RIDGE.update(values)
    elif kind == "gamma":
        from service.core.estimation import transfer

        transfer.CLOCK_EXPONENT = values["all"]  # type: ignore[misc]  # read by clock_factor per call
    elif kind == "clock":
        from service.core.estimation import transfer_sources as ts

        law = ts.sustained_clock
        ts.sustained_clock = lambda gpu: values.get(gpu.slug, law(gpu))


def _run(variant: str) -> tuple[str, tuple[float, float, int], dict[str, float], float]:
    t0 = time.monotonic()
    _apply(variant)
    import validate_transfer as vt

    pairs = vt.loso(vt.all_points())
    per = {s: vt.stats([p for p in pairs if p.source == s])[0] for s in sorted({p.source for p in pairs})}
    return variant, vt.stats(pairs), per, time.monotonic() - t0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("variants", nargs="*", default=list(DEFAULT))
    ap.add_argument("--jobs", type=int, default=2, help="variants run at once (each a fresh process)")
    args = ap.parse_args(argv)
    for v in args.variants:
        _parse(v)
    print(
        f"{len(args.variants)} variants, {args.jobs} at a time (about 2 minutes each on one core)", flush=True
    )
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(args.jobs) as pool:
        for variant, (pooled, base, n), per, secs in pool.imap(_run, args.variants):
            print(
                f"{variant:24s} pooled {pooled:.3%} vs {base:.1%} baseline (n={n}, {secs:.0f} s)", flush=True
            )
            print("    " + ", ".join(f"{s} {e:.1%}" for s, e in per.items()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
