"""``gemm``: C = A @ B, square n x n, 2*n^3 operations per product.

Random inputs (never zeros: they run faster than real data). Each timed step runs ``inner``
products back to back (default 10 on a GPU) so launch overhead is negligible, and steps are
timed for at least 2 s (``suite.common.measure``) so the NVML energy window is meaningful; the
reported step time is per product. fp8 goes through ``torch._scaled_mm`` (e4m3 operands, unit scales,
bf16 output; needs sm89+), int8 through ``torch._int_mm`` with a column-major B (int32 accumulate, rate in TOP/s).
"""

from __future__ import annotations

from typing import Any

from service.agent.suite.common import Context, Skip, measure, result, set_precision_flags


def _capability(ctx: Context) -> tuple[int, int]:
    import torch

    return torch.cuda.get_device_capability() if ctx.cuda else (0, 0)


def run(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    import torch

    precision = params["precision"]
    n = int(params["n"])
    set_precision_flags(ctx, precision)
    dev = ctx.device
    inner = int(ctx.options.get("inner", 10 if ctx.cuda else 2))
    g = torch.Generator(device=dev).manual_seed(0)

    if precision in ("fp32", "tf32", "bf16", "fp16"):
        dtype = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[
            precision
        ]
        a = torch.randn(n, n, device=dev, dtype=dtype, generator=g)
        b = torch.randn(n, n, device=dev, dtype=dtype, generator=g)
        c = torch.empty(n, n, device=dev, dtype=dtype)

        def product() -> None:
            torch.matmul(a, b, out=c)

    elif precision == "fp8":
        if not ctx.cuda or _capability(ctx) < (8, 9) or not hasattr(torch, "_scaled_mm"):
            raise Skip("fp8 matmul needs a CUDA GPU with compute capability >= 8.9 and torch._scaled_mm")
        a = torch.randn(n, n, device=dev, generator=g).to(torch.float8_e4m3fn)
        b = torch.randn(n, n, device=dev, generator=g).to(torch.float8_e4m3fn).t()  # column-major
        one = torch.ones((), device=dev, dtype=torch.float32)

        def product() -> None:
            torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

    elif precision == "int8":
        if not hasattr(torch, "_int_mm"):
            raise Skip("torch._int_mm is not available in this torch")
        a = torch.randint(-128, 128, (n, n), device=dev, dtype=torch.int8, generator=g)
        # Column-major B: cuBLASLt's int8 tensor-core kernels want the "TN" layout; a row-major
        # B falls back to a slow path (measured on an H200: 128 TOP/s instead of >1,000).
        b = torch.randint(-128, 128, (n, n), device=dev, dtype=torch.int8, generator=g).t()

        def product() -> None:
            torch._int_mm(a, b)

    else:
        raise Skip(f"gemm has no {precision} variant")

    def step() -> None:
        for _ in range(inner):
            product()

    m = measure(ctx, step)
    per_product = m.median_s / inner
    rate = 2.0 * n**3 / per_product / 1e12
    metrics: dict[str, float | None] = {"tops" if precision == "int8" else "tflops": rate}
    out = result(m, metrics=metrics, step_time_s=per_product, repeats=len(m.step_times_s) * inner)
    out["metrics"].pop("energy_per_step_j", None)  # not a gemm metric; power is
    return out
