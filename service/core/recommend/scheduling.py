"""How to ask a scheduler (Kubernetes, Slurm, SkyPilot, torchrun) for a recommended option."""

from __future__ import annotations

import math
from typing import Final

from service.core.catalog.records import bare_slug
from service.core.recommend.models import GpuNames, Option, Scheduling

K8S_RESOURCE: Final[dict[str, str]] = {
    "nvidia": "nvidia.com/gpu",
    "amd": "amd.com/gpu",
    "intel": "habana.ai/gaudi",
}
"""Device-plugin resource names (NVIDIA, AMD and Intel Gaudi device plugins)."""


def scheduling(o: Option, names: GpuNames | None) -> Scheduling:
    """Kubernetes (node selector on GFD's ``nvidia.com/gpu.product``, one pod per node for
    training and per replica for serving), Slurm (``--gres`` per node and one torchrun task per
    node for training; one job per replica, an array, for serving; ``--time`` from the upper
    end of the time band, rounded up to the minute), SkyPilot and torchrun arguments."""
    names = names or GpuNames()
    serve = o.serve
    unit, units = _serving_unit(o)
    per_pod = min(unit, o.gpus_per_node) if serve is not None else o.gpus_per_node
    pods = units * -(-unit // per_pod) if serve is not None else o.nodes
    selector = {"nvidia.com/gpu.product": names.gfd} if o.gpu.vendor == "nvidia" and names.gfd else {}
    gres_type = bare_slug(o.gpu.slug, o.gpu.vendor or "").lower()  # a placeholder: gres.conf is the site's
    if serve is not None:
        # one job per replica (a job array): a replica is TP GPUs of one node, or whole nodes
        slurm = [f"--nodes={-(-unit // per_pod)}", f"--gres=gpu:{gres_type}:{per_pod}"]
        if units > 1:
            slurm.append(f"--array=0-{units - 1}")
    else:
        slurm = [f"--nodes={o.nodes}", f"--gres=gpu:{gres_type}:{o.gpus_per_node}"]
    if o.train is not None:
        slurm.append("--ntasks-per-node=1")  # torchrun starts one process per GPU itself
    if o.hours_band is not None:
        minutes = max(1, math.ceil(o.hours_band[1] * 60.0))
        d, rem = divmod(minutes, 24 * 60)
        h, m = divmod(rem, 60)
        slurm.append(f"--time={d}-{h:02d}:{m:02d}:00" if d else f"--time={h:02d}:{m:02d}:00")
    sky: dict[str, object] | None = None
    if names.skypilot and serve is not None:  # SkyServe: each replica a TP group, on its node(s)
        sky = {
            "accelerators": f"{names.skypilot}:{per_pod}",
            "num_nodes": -(-unit // per_pod),
            "replicas": units,
        }
    elif names.skypilot:
        sky = {"accelerators": f"{names.skypilot}:{o.gpus_per_node}", "num_nodes": o.nodes}
    torchrun: tuple[str, ...] | None = None
    if o.train is not None and o.gpu_count > 1:
        torchrun = (
            ("--standalone", f"--nproc-per-node={o.gpus_per_node}")
            if o.nodes == 1
            else (
                f"--nnodes={o.nodes}",
                f"--nproc-per-node={o.gpus_per_node}",
                "--rdzv-backend=c10d",
                "--rdzv-endpoint=$MASTER_ADDR:29500",
                "--rdzv-id=$SLURM_JOB_ID",
            )
        )
    return Scheduling(
        k8s_resource=K8S_RESOURCE.get(o.gpu.vendor, "nvidia.com/gpu"),
        k8s_per_pod=per_pod,
        k8s_pods=pods,
        k8s_node_selector=selector,
        slurm=tuple(slurm),
        skypilot=sky,
        torchrun=torchrun,
    )


def _serving_unit(o: Option) -> tuple[int, int]:
    """(GPUs, count) of what a serving plan is scheduled as: its replicas of TP GPUs each (a
    replica larger than a node spans whole nodes), or a disaggregated plan's pools as one unit
    -- every prompt's KV cache moves from a prefill to a decode GPU, so they run together."""
    serve = o.serve
    if serve is None:
        return o.gpus_per_node, o.nodes
    dis = serve.disaggregated
    if dis is not None:
        return dis.prefill_gpus + dis.decode_gpus, 1
    return serve.tensor_parallel, serve.replicas
