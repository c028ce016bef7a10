"""``resnet50-train`` / ``resnet50-infer``: torchvision ResNet-50 (weights=None), 224x224.

Training: SGD with momentum 0.9, cross-entropy on synthetic images and labels. Inference:
``eval()`` under ``torch.inference_mode()``. ``channels_last`` memory format by default.
Precision: ``amp_*`` autocast over fp32 parameters (GradScaler for fp16); ``bf16``/``fp16``
pure half parameters and inputs; ``fp32`` strict; ``tf32``.
"""

from __future__ import annotations

from typing import Any

from service.agent.suite.common import (
    Context,
    Skip,
    autocast,
    backward_and_step,
    grad_scaler,
    measure,
    param_dtype,
    result,
    set_precision_flags,
)


def run(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    import torch

    try:
        import torchvision
    except Exception as exc:  # not installed, or built for another torch
        raise Skip(f"torchvision is not importable here: {type(exc).__name__}: {exc}") from None

    workload = ctx.options["workload"]
    precision = params["precision"]
    bs = int(params["batch_size"])
    set_precision_flags(ctx, precision)
    pdtype = param_dtype(precision)
    image = int(ctx.options.get("image_size", 32 if ctx.smoke else 224))
    fmt = torch.channels_last if params.get("channels_last", True) else torch.contiguous_format

    model = torchvision.models.resnet50(weights=None).to(device=ctx.device, dtype=pdtype, memory_format=fmt)
    x = torch.randn(bs, 3, image, image, device=ctx.device, dtype=pdtype).contiguous(memory_format=fmt)
    ac = autocast(ctx, precision)

    if workload == "resnet50-infer":
        model.eval()

        def step() -> None:
            with torch.inference_mode(), ac:
                model(x)

    else:
        model.train()
        y = torch.randint(0, 1000, (bs,), device=ctx.device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        scaler = grad_scaler(ctx, precision)
        loss_fn = torch.nn.CrossEntropyLoss()

        def step() -> None:
            with ac:
                loss = loss_fn(model(x), y)
            backward_and_step(loss, opt, scaler)

    m = measure(ctx, step)
    return result(m, metrics={"throughput": bs / m.median_s})
