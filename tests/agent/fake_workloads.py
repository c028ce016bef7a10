"""Workload stand-ins for runner tests: each behaviour a real configuration can show."""

from __future__ import annotations

import os
import time
from typing import Any

from service.agent.suite.common import Context, Skip, result


def run(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    behaviour = ctx.options.get("behaviour", "ok")
    if behaviour == "oom":
        import torch

        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    if behaviour == "cublas-oom":
        raise RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`")
    if behaviour == "error":
        raise ValueError("kernel exploded")
    if behaviour == "crash":
        os._exit(7)
    if behaviour == "hang":
        time.sleep(60)
    if behaviour == "skip":
        raise Skip("not on this hardware")
    return result(metrics={"tflops": 1.5}, step_time_s=0.25, repeats=3)
