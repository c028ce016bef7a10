"""CPU cost of one continuous-engine serving answer (``estimate_time.continuous_answer``), the
call a serving recommendation makes per candidate: best of 5 repeats of 200 calls, after a
warm-up, for a configuration with no published runs, one whose engine has a published record
on the GPU (told in the notes), and one a published run anchors.

    python benchmarks/serving_answer_speed.py

Run it from two checkouts to compare (e.g. a ``git worktree`` of an older commit): it imports
the service from the repository it sits in.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from service.catalog.loader import load_shipped  # noqa: E402
from service.core.catalog.models import DecoderSpec, get_model  # noqa: E402
from service.core.catalog.specs import gpu_spec_from_doc  # noqa: E402
from service.core.estimation.estimate_time import continuous_answer  # noqa: E402
from service.core.estimation.memory import InferenceConfig  # noqa: E402

CASES = (
    (
        "Llama-3.1-70B FP8 vLLM TP2, no published runs",
        "llama3.1-70b",
        "vllm",
        2,
        (2048, 256),
        32,
        "nvidia-h100-sxm",
    ),
    (
        "DeepSeek-R1 FP8 SGLang TP8, the engine's record told",
        "deepseek-r1",
        "sglang",
        8,
        (2048, 512),
        24,
        "amd-mi300x",
    ),
    (
        "DeepSeek-R1 FP8 SGLang TP8, anchored on a run",
        "deepseek-r1",
        "sglang",
        8,
        (1024, 1024),
        32,
        "nvidia-h200-sxm",
    ),
)


def main() -> int:
    gpus = {g["slug"]: gpu_spec_from_doc(g) for g in load_shipped().gpus}
    print(f"continuous_answer CPU time per call ({ROOT}):")
    for label, model, engine, tp, (inp, out), conc, slug in CASES:
        spec = get_model(model)
        assert isinstance(spec, DecoderSpec)
        c = InferenceConfig(
            model=spec, quant_method="fp8", engine=engine, tensor_parallel=tp, input_len=inp,
            output_len=out, batch_size=conc,
        )  # fmt: skip
        gpu = gpus[slug]
        continuous_answer(c, gpu, None)
        best = []
        for _ in range(5):
            t = time.process_time()
            for _ in range(200):
                continuous_answer(c, gpu, None)
            best.append((time.process_time() - t) / 200)
        print(f"  {label:55s} {slug:18s} {min(best) * 1e6:6.1f} us (median {sorted(best)[2] * 1e6:.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
