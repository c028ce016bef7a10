"""``memory-bandwidth``: device-to-device copy of ``buffer_bytes``; bytes read + written.

The default buffer (4 GiB) is far above any GPU's last-level cache (H100/H200: 50-60 MB), so
the copy streams from device memory. Rate = 2 * buffer_bytes / time, in GB/s (1e9 B/s).
"""

from __future__ import annotations

from typing import Any

from service.agent.suite.common import Context, measure, result


def run(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    import torch

    nbytes = int(params["buffer_bytes"])
    inner = int(ctx.options.get("inner", 5))
    src = torch.empty(nbytes, dtype=torch.uint8, device=ctx.device)
    src.random_(0, 256)
    dst = torch.empty_like(src)

    def step() -> None:
        for _ in range(inner):
            dst.copy_(src)

    m = measure(ctx, step)
    per_copy = m.median_s / inner
    out = result(
        m,
        metrics={"bandwidth_gb_per_s": 2.0 * nbytes / per_copy / 1e9},
        step_time_s=per_copy,
        repeats=len(m.step_times_s) * inner,
    )
    out["metrics"].pop("energy_per_step_j", None)
    out["metrics"].pop("avg_power_w", None)
    return out
