"""Kubernetes manifests: serving as a Deployment (a LeaderWorkerSet when one replica spans
nodes), training as a Job (a JobSet for several nodes); GPUs by the vendor's device plugin,
nodes by the vendor's feature-discovery labels, ``/dev/shm`` sized for NCCL."""

from __future__ import annotations

import shlex
from typing import Any

from service.core.deploy.commands import (
    FILL,
    K8S_RESOURCE,
    RDZV_PORT,
    SERVE_PORT,
    fill_ins,
    model_value,
    ray_cluster,
    serve_argv,
    shm_bytes,
    torchrun_argv,
    train_env,
    with_node,
)
from service.core.deploy.plan import DeployOption, DeployPlan

JOBSET_API = "jobset.x-k8s.io/v1alpha2"
LWS_API = "leaderworkerset.x-k8s.io/v1"


def name_of(plan: DeployPlan, o: DeployOption) -> str:
    """A DNS-1035 name short enough for JobSet's pod host names."""
    return f"ga-{plan.recommendation_id.removeprefix('rec_')[:12]}-r{o.rank}".lower()


def _metadata(plan: DeployPlan, o: DeployOption, name: str) -> dict[str, Any]:
    return {
        "name": name,
        "labels": {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "gpu-advisor"},
        "annotations": {
            "gpu-advisor/recommendation-id": plan.recommendation_id,
            "gpu-advisor/data-version": plan.data_version,
            "gpu-advisor/option-rank": str(o.rank),
            "gpu-advisor/option": o.describe(),
            "gpu-advisor/fill-in": "; ".join(f"{f.name}: {f.what}" for f in fill_ins(plan, o)),
        },
    }


def _placement(o: DeployOption) -> dict[str, Any]:
    """Node selection by feature-discovery labels: NVIDIA GFD's ``nvidia.com/gpu.product``, the
    AMD node labeller's ``amd.com/gpu.device-id`` (PCI device id); Intel Gaudi has none."""
    n = o.names
    resource = K8S_RESOURCE.get(n.vendor, "nvidia.com/gpu")
    out: dict[str, Any] = {
        "tolerations": [{"key": resource, "operator": "Exists", "effect": "NoSchedule"}],
    }
    if n.vendor == "nvidia" and n.gfd:
        out["nodeSelector"] = {"nvidia.com/gpu.product": n.gfd}
    elif n.vendor == "amd" and n.pci_device_ids:
        ids = [d.lower().removeprefix("0x") for d in n.pci_device_ids]
        term = {"matchExpressions": [{"key": "amd.com/gpu.device-id", "operator": "In", "values": ids}]}
        out["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        }
    return out


def _env(extra: dict[str, str], plan: DeployPlan, o: DeployOption) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = [
        {"name": "MODEL", "value": model_value(plan, o) or f"{FILL}: {fill_ins(plan, o)[1].what}"},
        {
            "name": "HF_TOKEN",
            "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token", "optional": True}},
        },
    ]
    return env + [{"name": k, "value": v} for k, v in extra.items()]


def _pod(
    plan: DeployPlan, o: DeployOption, script: str, *, env: dict[str, str], restart: str | None
) -> dict[str, Any]:
    gpus = o.gpus_per_pod
    resource = K8S_RESOURCE.get(o.names.vendor, "nvidia.com/gpu")
    container: dict[str, Any] = {
        "name": "main",
        "image": f"{FILL}: container image ({fill_ins(plan, o)[0].what})",
        "command": ["/bin/bash", "-c"],
        "args": [script],
        "env": _env(env, plan, o),
        "resources": {"limits": {resource: gpus}, "requests": {resource: gpus}},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }
    if o.serving:
        container["ports"] = [{"name": "http", "containerPort": SERVE_PORT}]
    spec: dict[str, Any] = {
        "containers": [container],
        "volumes": [
            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{shm_bytes(gpus) // 2**30}Gi"}}
        ],
        **_placement(o),
    }
    if restart:
        spec["restartPolicy"] = restart
    return spec


def _serve_script(plan: DeployPlan, o: DeployOption) -> str:
    return shlex.join(serve_argv(plan, o, "MODEL_PLACEHOLDER")).replace("MODEL_PLACEHOLDER", '"$MODEL"')


def _deployment(plan: DeployPlan, o: DeployOption) -> list[dict[str, Any]]:
    name = name_of(plan, o)
    meta = _metadata(plan, o, name)
    pod = _pod(plan, o, "exec " + _serve_script(plan, o), env={}, restart=None)
    pod["containers"][0]["readinessProbe"] = {
        "httpGet": {"path": "/health", "port": SERVE_PORT},
        "periodSeconds": 10,
        "failureThreshold": 60,
    }
    selector = {"app.kubernetes.io/name": name}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {
            "replicas": o.replicas,
            "selector": {"matchLabels": selector},
            "template": {"metadata": {"labels": meta["labels"]}, "spec": pod},
        },
    }
    return [deployment, _service(meta, selector)]


def _service(meta: dict[str, Any], selector: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": meta["name"], "labels": meta["labels"]},
        "spec": {
            "selector": selector,
            "ports": [{"name": "http", "port": SERVE_PORT, "targetPort": SERVE_PORT}],
        },
    }


def _leader_worker_set(plan: DeployPlan, o: DeployOption) -> list[dict[str, Any]]:
    """One replica spans ``nodes_per_replica`` pods: vLLM over a Ray cluster, leader first;
    SGLang's server on every pod, ranked by LeaderWorkerSet's worker index (0 on the leader)."""
    name = name_of(plan, o)
    meta = _metadata(plan, o, name)
    if ray_cluster(o):
        lead = f"ray start --head --port=6379 && exec {_serve_script(plan, o)}"
        work = 'exec ray start --address="$LWS_LEADER_ADDRESS:6379" --block'
    else:
        lead = "exec " + with_node(_serve_script(plan, o), "0", '"$LWS_LEADER_ADDRESS"')
        work = "exec " + with_node(_serve_script(plan, o), '"$LWS_WORKER_INDEX"', '"$LWS_LEADER_ADDRESS"')
    leader = _pod(plan, o, lead, env={}, restart=None)
    worker = _pod(plan, o, work, env={}, restart=None)
    lws = {
        "apiVersion": LWS_API,
        "kind": "LeaderWorkerSet",
        "metadata": meta,
        "spec": {
            "replicas": o.replicas,
            "leaderWorkerTemplate": {
                "size": o.nodes_per_replica,
                "leaderTemplate": {"metadata": {"labels": {"role": "leader"}}, "spec": leader},
                "workerTemplate": {"spec": worker},
            },
        },
    }
    selector = {"leaderworkerset.sigs.k8s.io/name": name, "role": "leader"}
    return [lws, _service(meta, selector)]


def _train_script(o: DeployOption, *, master: str, node_rank: str) -> str:
    """torchrun under bash: the script and the node rank are expanded in the pod."""
    argv = torchrun_argv(o, master=master, node_rank="RANK_PLACEHOLDER", script="TRAIN_PLACEHOLDER")
    text = shlex.join(argv).replace("TRAIN_PLACEHOLDER", '"$TRAIN_SCRIPT"')
    return "exec " + text.replace("RANK_PLACEHOLDER", node_rank)


def _train_env(o: DeployOption) -> dict[str, str]:
    return {"TRAIN_SCRIPT": f"{FILL}: your training entry point", **train_env(o)}


def _job(plan: DeployPlan, o: DeployOption) -> list[dict[str, Any]]:
    script = _train_script(o, master="localhost", node_rank="0")
    pod = _pod(plan, o, script, env=_train_env(o), restart="Never")
    meta = _metadata(plan, o, name_of(plan, o))
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta,
        "spec": {"backoffLimit": 0, "completions": 1, "parallelism": 1, "template": {"spec": pod}},
    }
    return [job]


def _jobset(plan: DeployPlan, o: DeployOption) -> list[dict[str, Any]]:
    """``nodes`` indexed pods of one Job; rank 0's stable host name is the rendezvous."""
    name = name_of(plan, o)
    master = f"{name}-node-0-0.{name}"
    script = _train_script(o, master=master, node_rank='"$JOB_COMPLETION_INDEX"')
    pod = _pod(plan, o, script, env=_train_env(o), restart="Never")
    pod["containers"][0]["ports"] = [{"name": "rendezvous", "containerPort": RDZV_PORT}]
    job_spec: dict[str, Any] = {
        "parallelism": o.nodes,
        "completions": o.nodes,
        "completionMode": "Indexed",
        "backoffLimit": 0,
        "template": {"spec": pod},
    }
    jobset = {
        "apiVersion": JOBSET_API,
        "kind": "JobSet",
        "metadata": _metadata(plan, o, name),
        "spec": {
            "network": {"enableDNSHostnames": True},
            "replicatedJobs": [{"name": "node", "replicas": 1, "template": {"spec": job_spec}}],
        },
    }
    return [jobset]


def manifests(plan: DeployPlan, o: DeployOption) -> list[dict[str, Any]]:
    """The objects to apply for one option, in order."""
    if o.serving:
        return _leader_worker_set(plan, o) if o.nodes_per_replica > 1 else _deployment(plan, o)
    return _jobset(plan, o) if o.nodes > 1 else _job(plan, o)
