"""Entry point of a configuration's process: run one workload and send back a plain dict.

Everything that can go wrong stays in here: an OOM becomes ``status="oom"`` (with the peak
memory reached), any other exception ``status="error"`` with the tail of its traceback, a
configuration that does not apply ``status="skipped"``. The process exits afterwards, so a
poisoned CUDA context never reaches the next configuration.
"""

from __future__ import annotations

import datetime as dt
import importlib
import time
import traceback
from typing import Any

from service.agent.suite import WORKLOAD_MODULES
from service.agent.suite.common import Context, Skip, set_precision_flags

_OOM_MARKERS = (
    "out of memory",
    "cublas_status_alloc_failed",
    "cudnn_status_alloc_failed",
    "cuda_error_out_of_memory",
)


def _is_oom(exc: BaseException) -> bool:
    import torch

    if isinstance(exc, torch.cuda.OutOfMemoryError):
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and any(m in text for m in _OOM_MARKERS)


def _tail(exc: BaseException, limit: int = 3000) -> str:
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return text[-limit:]


def env_info(payload: dict[str, Any]) -> dict[str, Any]:
    """Software stack and device as torch sees it (goes into the fingerprint)."""
    import torch

    info: dict[str, Any] = {
        "status": "ok",
        "torch_version": torch.__version__,
        "cuda_runtime": torch.version.cuda,
    }
    try:
        info["cudnn_version"] = (
            str(torch.backends.cudnn.version()) if torch.backends.cudnn.is_available() else None
        )
    except Exception:
        info["cudnn_version"] = None
    for pkg in ("transformers", "peft", "torchvision", "flash_attn"):
        try:
            mod = importlib.import_module(pkg)
            info[f"{pkg}_version"] = str(getattr(mod, "__version__", "unknown"))
        except Exception:
            info[f"{pkg}_version"] = None
    cuda = (not payload.get("smoke")) and torch.cuda.is_available()
    info["cuda_available"] = bool(torch.cuda.is_available())
    if cuda:
        try:
            nccl = torch.cuda.nccl.version()
            info["nccl_version"] = ".".join(str(x) for x in nccl) if isinstance(nccl, tuple) else str(nccl)
        except Exception:
            info["nccl_version"] = None
        props = torch.cuda.get_device_properties(0)
        info["device_name"] = props.name
        info["compute_capability"] = f"{props.major}.{props.minor}"
        info["device_total_memory"] = int(props.total_memory)
        info["multiprocessors"] = int(props.multi_processor_count)
        enabled = [
            name
            for name, on in (
                ("flash", torch.backends.cuda.flash_sdp_enabled()),
                ("mem_efficient", torch.backends.cuda.mem_efficient_sdp_enabled()),
                ("cudnn", torch.backends.cuda.cudnn_sdp_enabled()),
                ("math", torch.backends.cuda.math_sdp_enabled()),
            )
            if on
        ]
        info["attention_backend"] = "torch-sdpa[" + ",".join(enabled) + "]"
    else:
        info["nccl_version"] = None
        info["device_name"] = "cpu"
        info["compute_capability"] = None
        info["attention_backend"] = "torch-sdpa[cpu]"
    if info.get("flash_attn_version"):
        info["attention_backend"] += f"+flash-attn-{info['flash_attn_version']}"
    return info


def run_config(payload: dict[str, Any]) -> dict[str, Any]:
    import torch

    workload = payload["workload"]
    params = payload["parameters"]
    smoke = bool(payload.get("smoke"))
    if smoke:
        device = "cpu"
        torch.set_num_threads(max(1, min(4, torch.get_num_threads())))
    else:
        if not torch.cuda.is_available():
            return {"status": "error", "error": "CUDA is not available to torch in the configuration process"}
        device = "cuda"
        torch.cuda.set_device(0)
    opts = dict(payload.get("options") or {})
    opts["workload"] = workload
    ctx = Context(
        device=device,
        smoke=smoke,
        nvml_index=payload.get("nvml_index"),
        warmup=int(payload.get("warmup", 2)),
        steps=int(payload.get("steps", 5)),
        repeats=int(payload.get("repeats", 3)),
        options=opts,
    )
    # "module" lets a caller (the tests) point a configuration at another implementation.
    module = importlib.import_module(payload.get("module") or WORKLOAD_MODULES[workload])
    torch.manual_seed(0)
    t0 = time.perf_counter()
    out: dict[str, Any]
    try:
        # Explicit TF32 switches for every configuration (workloads set them again, same values).
        set_precision_flags(ctx, str(params.get("precision", "tf32")))
        out = module.run(ctx, params)
    except Skip as exc:
        out = {"status": "skipped", "error": str(exc)}
    except BaseException as exc:
        if _is_oom(exc):
            alloc = int(torch.cuda.max_memory_allocated()) if ctx.cuda else None
            reserved = int(torch.cuda.max_memory_reserved()) if ctx.cuda else None
            out = {
                "status": "oom",
                "error": f"{type(exc).__name__}: {str(exc)[:1500]}",
                "peak_allocated_bytes": alloc,
                "peak_reserved_bytes": reserved,
                "nvml_used_bytes": ctx.nvml_used_bytes(),
            }
        else:
            out = {"status": "error", "error": _tail(exc)}
    out["flags"] = ctx.flags
    out["clock_event_reasons"] = ctx.clock_event_reasons()
    out["duration_s"] = time.perf_counter() - t0
    out["measured_at"] = dt.datetime.now(dt.UTC).isoformat()
    return out


def child_main(conn: Any, payload: dict[str, Any]) -> None:
    """``multiprocessing`` target: never raises, always answers on ``conn``."""
    try:
        out = env_info(payload) if payload.get("kind") == "env" else run_config(payload)
    except BaseException as exc:
        out = {"status": "error", "error": _tail(exc)}
    try:
        conn.send(out)
    finally:
        conn.close()
