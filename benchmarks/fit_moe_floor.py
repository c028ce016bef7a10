"""Refit ``serving_moe.MOE_LAYER_S`` (issue 28) and score it in-sample and held out. Prints
figures; not a test.

Fit subset, named before the other rows were scored: the five SemiAnalysis InferenceX
DeepSeek-R1 FP8 rows on 8 x H200 with TensorRT-LLM (``serving_published_28_throughput``).
Criterion: the squared log error of output tokens/s per GPU, on a 5 us grid. Held out: the other
InferenceX rows (B200, MI355X, MI300X) and every scored TensorRT-LLM perf-overview cell.

    python benchmarks/fit_moe_floor.py [--grid-us 0,100,...]
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import serving_published_28 as sp  # noqa: E402
from benchmarks.serving_published_28_throughput import inferencex_rows, perf_overview_rows  # noqa: E402
from benchmarks.validate_serving import catalog  # noqa: E402
from service.core.estimation import serving_moe  # noqa: E402


def _published(kind: str, rows: list[tuple[str, str, float, dict[str, object], str]]) -> list[sp.Published]:
    return [sp.Published(f, claim, "", kind, v, s) for f, claim, v, s, _ in rows]


def _errors(ps: Sequence[sp.Published], gpus: dict[str, object]) -> list[float]:
    out = []
    for p in ps:
        got = sp._tokens_per_gpu(p, gpus)  # type: ignore[arg-type]
        if got is not None:
            out.append(got / float(p.value or 1) - 1.0)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--grid-us", default=",".join(str(v) for v in range(0, 205, 5)))
    args = ap.parse_args(argv)
    gpus = catalog()
    ix = _published("concurrency_tokens_per_gpu", inferencex_rows())
    fit = [p for p in ix if "H200" in p.claim and "tensorrt-llm" in p.claim]
    held = {
        "InferenceX held out": [p for p in ix if p not in fit],
        "perf overview (max load)": _published("offline_tokens_per_gpu", perf_overview_rows()),
    }
    committed = serving_moe.MOE_LAYER_S
    best = (math.inf, 0.0)
    for us in (float(v) for v in args.grid_us.split(",")):
        serving_moe.MOE_LAYER_S = us * 1e-6
        loss = sum(math.log1p(e) ** 2 for e in _errors(fit, gpus))
        best = min(best, (loss, us))
    print(
        f"fit on {len(fit)} InferenceX H200 TensorRT-LLM rows: {best[1]:g} us (committed {committed * 1e6:g} us)"
    )
    for label, us in (("none", 0.0), ("committed", committed * 1e6)):
        serving_moe.MOE_LAYER_S = us * 1e-6
        for name, ps in (("in-sample", fit), *held.items()):
            e = _errors(ps, gpus)
            within = sum(abs(x) <= 0.20 for x in e)
            mape = sum(abs(x) for x in e) / max(len(e), 1)
            print(f"   {label:9s} {name:26s} {within:3d}/{len(e):<3d} within 20 %  MAPE {mape:6.1%}")
    serving_moe.MOE_LAYER_S = committed
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
