"""torchrun entry point: one job (a collective sweep or one llm-train configuration).

    python -m torch.distributed.run --standalone --nproc-per-node N \\
        -m service.agent.multigpu.worker --job JOB.json --out DIR

Rank 0 writes into DIR: ``gpu.json`` (its GPU identity), ``fingerprint.json`` (once the job is
set up) and ``results.jsonl`` (one result per line, appended and flushed as each is measured,
so a crash later keeps what was done). Any rank that fails writes ``error-rank<R>.json``
(``{"type", "message", "oom"}``) and exits at once with status 3, so torchrun tears the other
ranks down instead of leaving them waiting in a collective.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from service.agent.multigpu.env import apply_safe_env

EXIT_FAILED = 3


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat()


def _write_json(path: Path, obj: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=1, sort_keys=True))
    tmp.replace(path)


def _is_oom(exc: BaseException) -> bool:
    try:
        import torch

        if isinstance(exc, torch.OutOfMemoryError):
            return True
    except ImportError:
        pass
    text = str(exc).lower()
    return "out of memory" in text or "cuda_error_out_of_memory" in text


def run_job(job: dict[str, Any], out: Path) -> None:
    import torch.distributed as dist

    from service.agent.multigpu import collectives, llm_train
    from service.agent.multigpu.fingerprint import (
        build_fingerprint,
        device_info,
        gpu_identity,
        sdpa_backend,
        torch_pci_bus_id,
    )

    backend: str = job["backend"]
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = _join_group(job, backend, local_rank)

    info = device_info(local_rank) if device.type == "cuda" else None
    bus_id = torch_pci_bus_id(local_rank) if device.type == "cuda" else None
    results_path = out / "results.jsonl"
    if rank == 0:
        _write_json(out / "gpu.json", gpu_identity(info))

    def emit(result: dict[str, Any]) -> None:
        if rank != 0:
            return
        result.setdefault("measured_at", _now())
        with results_path.open("a") as f:
            f.write(json.dumps(result, sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def on_ready(attention: str) -> None:
        attention_backend = sdpa_backend(device.type) if attention in ("sdpa", "none") else attention
        if rank == 0:
            _write_json(
                out / "fingerprint.json",
                build_fingerprint(backend=backend, info=info, attention_backend=attention_backend),
            )

    spec = job["spec"]
    if job["kind"] == "collective":
        # TF32 as the llm-train amp/bf16 jobs have it, so collectives share their fingerprint
        llm_train.set_precision_flags("amp_bf16")
        on_ready("none")
        collectives.run_sweep(
            spec["ops"],
            spec["sizes"],
            dtype=spec["dtype"],
            device=device,
            backend=backend,
            warmup=int(spec["warmup"]),
            iters=int(spec["iters"]),
            repeats=int(spec["repeats"]),
            emit=emit,
        )
    elif job["kind"] == "llm-train":
        llm_train.run(
            spec,
            device=device,
            pci_bus_id=bus_id,
            pci_device_id=info.pci_device_id if info else None,
            on_ready=on_ready,
            emit=emit,
        )
    else:
        raise ValueError(f"unknown job kind {job['kind']!r}")
    dist.barrier()
    dist.destroy_process_group()


def _join_group(job: dict[str, Any], backend: str, local_rank: int) -> Any:
    """Bind this rank to its device and join the process group; a world size other than the
    job's is refused, since every result would be labelled with the wrong GPU count.
    Returns the ``torch.device``."""
    import torch
    import torch.distributed as dist

    if job["device"] == "cuda":
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    timeout = dt.timedelta(seconds=float(job.get("collective_timeout_s", 600)))
    if device.type == "cuda":
        dist.init_process_group(backend, timeout=timeout, device_id=device)
    else:
        dist.init_process_group(backend, timeout=timeout)
    world = dist.get_world_size()
    if world != int(job["world_size"]):
        raise RuntimeError(f"launched with world size {world}, job wants {job['world_size']}")
    return device


def main(argv: list[str] | None = None) -> int:
    apply_safe_env()  # before torch / NCCL read the environment
    ap = argparse.ArgumentParser(prog="service.agent.multigpu.worker")
    ap.add_argument("--job", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    job = json.loads(args.job.read_text())
    rank = int(os.environ.get("RANK", "0"))
    try:
        run_job(job, args.out)
    except BaseException as exc:
        err = {
            "rank": rank,
            "type": type(exc).__name__,
            "message": str(exc)[:3000],
            "oom": _is_oom(exc),
            "traceback": traceback.format_exc()[-4000:],
            "at": _now(),
        }
        try:
            _write_json(args.out / f"error-rank{rank}.json", err)
        finally:
            sys.stderr.write(str(err["traceback"]))
            sys.stderr.flush()
            os._exit(EXIT_FAILED)  # no atexit: a peer may hold a collective we cannot finish
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
