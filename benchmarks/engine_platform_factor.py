"""How much of InferenceX's error is one factor per (GPU, engine, weight format): a study, not
shipped. Such a factor is a constant fitted per GPU that makes a datasheet-faster GPU slower
(SGLang on the MI300X: x0.60), which the estimators do not allow; answers are instead anchored on
a published run of the exact configuration asked (estimator 1.15.0,
``service.core.evidence.published_serving``).

For every InferenceX row the service's engines model (SGLang, TensorRT-LLM), the model's
fixed-concurrency throughput (``serve_concurrency``, the engine's defaults; TensorRT-LLM's runs
with an FP8 KV cache, SGLang's with a 16-bit one, as ``serving_published_28_throughput`` assumes)
is compared with the measured output tokens/s per GPU. Printed: the model's MAPE; with each
row scaled by the median measured/model ratio of the *other* rows of its (GPU, engine, weight
format) -- all of them, or only those at other input/output lengths (rows at the same lengths
and another concurrency are close relatives) -- and each group's factor. Last, the model at the
memory setting and KV cache the SGLang launch scripts state (:data:`LAUNCHED`, a request's
``memory_fraction`` and ``kv_cache_dtype``): DeepSeek-R1 FP8 on four B200s runs only at the
script's 0.95 (SGLang's own pick, 0.821, leaves its 168 GB of weights a GPU no KV pool).

    python benchmarks/engine_platform_factor.py
"""

from __future__ import annotations

import collections
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from service.catalog.loader import load_shipped  # noqa: E402
from service.core.catalog.models import DecoderSpec, get_model  # noqa: E402
from service.core.catalog.specs import gpu_spec_from_doc  # noqa: E402
from service.core.errors import MissingFigure  # noqa: E402
from service.core.estimation.estimate_inputs import KV_BYTES_PER_ELEMENT  # noqa: E402
from service.core.estimation.memory import InferenceConfig  # noqa: E402
from service.core.estimation.serving import serve_concurrency  # noqa: E402
from service.core.evidence.published import get_table  # noqa: E402
from service.core.evidence.published_serving import ENGINE_OF_SOURCE  # noqa: E402

QUANT = {"fp8": "fp8", "fp4": "nvfp4", "mxfp4": "mxfp4"}

Row = tuple[tuple[str, str, str], tuple[int, int], float, float]  # group, lengths, measured, model

LAUNCHED: dict[tuple[str, str, str, int | None], tuple[float, str]] = {
    # (GPU, engine, precision, TP or None for any) -> (mem_fraction_static, KV cache dtype) as
    # InferenceX's SGLang launch scripts for DeepSeek-R1 set them (SemiAnalysisAI/InferenceX
    # benchmarks/dsr1_<precision>_<gpu>.sh at 1fc5d73; older runs may have used earlier
    # versions). The B300's script is not in the snapshot: its rows keep SGLang's defaults.
    ("nvidia-b200", "sglang", "fp8", 8): (0.82, "fp8"),
    ("nvidia-b200", "sglang", "fp8", 4): (0.95, "fp8"),
    ("nvidia-b200", "sglang", "fp4", None): (0.85, "fp8"),
    ("nvidia-h200-sxm", "sglang", "fp8", None): (0.82, "auto"),
    ("amd-mi300x", "sglang", "fp8", None): (0.80, "fp8"),
    ("amd-mi325x", "sglang", "fp8", None): (0.80, "fp8"),
    ("amd-mi355x", "sglang", "fp8", None): (0.80, "auto"),
    ("amd-mi355x", "sglang", "mxfp4", None): (0.80, "fp8"),
}


def launch_settings(
    slug: str, engine: str, precision: str, tp: int, as_launched: bool
) -> tuple[float | None, str]:
    """(memory setting, KV cache dtype) a row is modelled with: the engine's defaults (TensorRT-LLM
    with an FP8 KV cache, as its FP8 engines keep one), or the launch script's where known."""
    default = (None, "fp8" if engine == "tensorrt-llm" else "auto")
    if not as_launched:
        return default
    return (
        LAUNCHED.get((slug, engine, precision, tp))
        or LAUNCHED.get((slug, engine, precision, None))
        or default
    )


def rows(as_launched: bool = False) -> list[Row]:
    gpus = {g["slug"]: gpu_spec_from_doc(g) for g in load_shipped().gpus}
    out: list[Row] = []
    for r in get_table("inferencex-3a600f1").rows:
        engine = ENGINE_OF_SOURCE.get(r.system.split(" ", 1)[0])
        model = get_model(r.model)
        if engine is None or r.slug is None or not isinstance(model, DecoderSpec) or not r.concurrency:
            continue
        fraction, kv = launch_settings(r.slug, engine, r.precision, r.tp, as_launched)
        c = InferenceConfig(
            model=model,
            quant_method=QUANT[r.precision],
            engine=engine,
            tensor_parallel=r.tp,
            input_len=r.input_len or 0,
            output_len=r.output_len or 0,
            batch_size=r.concurrency,
            kv_cache_dtype=kv,
            kv_cache_bytes_per_element=KV_BYTES_PER_ELEMENT.get(kv, 0.0),
            memory_fraction=fraction,
        )
        try:
            modelled = serve_concurrency(c, gpus[r.slug]).output_tokens_per_s / r.tp
        except MissingFigure:
            continue
        out.append(((r.slug, engine, r.precision), (c.input_len, c.output_len), r.value, modelled))
    return out


def mape(pairs: list[tuple[float, float]]) -> float:
    """Mean |predicted / measured - 1| over (predicted, measured) pairs."""
    return sum(abs(p / m - 1.0) for p, m in pairs) / len(pairs)


def scaled(data: list[Row], other_lengths_only: bool) -> list[tuple[float, float]]:
    by: dict[tuple[str, str, str], list[Row]] = collections.defaultdict(list)
    for row in data:
        by[row[0]].append(row)
    out = []
    for members in by.values():
        for i, (_, lengths, measured, modelled) in enumerate(members):
            others = [
                math.log(m / p)
                for j, (_, ln, m, p) in enumerate(members)
                if j != i and not (other_lengths_only and ln == lengths)
            ]
            f = math.exp(statistics.median(others)) if others else 1.0
            out.append((modelled * f, measured))
    return out


def main() -> int:
    data = rows()
    print(f"{len(data)} InferenceX rows the service's engines model")
    print(f"  the model alone:                         MAPE {mape([(p, m) for _, _, m, p in data]):.1%}")
    print(f"  x the other rows' factor:                MAPE {mape(scaled(data, False)):.1%}")
    print(f"  x the factor of rows at other lengths:   MAPE {mape(scaled(data, True)):.1%}")
    launched = rows(as_launched=True)
    print(
        f"  the model at the launch scripts' memory setting and KV cache (SGLang rows, LAUNCHED): "
        f"MAPE {mape([(p, m) for _, _, m, p in launched]):.1%}"
    )
    groups: dict[tuple[str, str, str], list[float]] = collections.defaultdict(list)
    for g, _, m, p in data:
        groups[g].append(math.log(m / p))
    for g, logs in sorted(groups.items()):
        print(
            f"  {' '.join(g):42s} n={len(logs):3d}  measured / model x{math.exp(statistics.median(logs)):.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
