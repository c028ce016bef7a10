"""A SkyPilot task: ``resources.ordered`` lists the ranked options SkyPilot may fall back to, in
rank order; serving adds a SkyServe ``service`` section with the replica count."""

from __future__ import annotations

import shlex
from typing import Any

from service.core.deploy.commands import (
    FILL,
    RDZV_PORT,
    SERVE_PORT,
    fill_ins,
    model_value,
    network_note,
    ray_cluster,
    serve_argv,
    train_env,
    with_node,
)
from service.core.deploy.plan import DeployOption, DeployPlan


def _shape(o: DeployOption) -> tuple[int, int | None]:
    """What a task fixes for all its resources: nodes (per replica) and the replica count."""
    return (o.nodes_per_replica, o.replicas) if o.serving else (o.nodes, None)


def _accelerators(o: DeployOption) -> str | None:
    return f"{o.names.skypilot}:{o.gpus_per_pod}" if o.names.skypilot else None


def listed(plan: DeployPlan, chosen: DeployOption) -> tuple[list[DeployOption], list[str]]:
    """The options the task can list (the chosen one first, then by rank), and why others are not:
    ``num_nodes`` and the replica count belong to the task, not to one resource."""
    take = [chosen]
    left: list[str] = []
    for o in plan.options:
        if o is chosen:
            continue
        if _accelerators(o) is None:
            left.append(f"rank {o.rank} ({o.gpu_name}): no SkyPilot accelerator name in the catalog")
        elif _shape(o) != _shape(chosen):
            left.append(f"rank {o.rank} ({o.describe()}): another node or replica count (option={o.rank})")
        elif any(_accelerators(t) == _accelerators(o) for t in take):
            left.append(f"rank {o.rank} ({o.gpu_name}): the same SkyPilot accelerator as a listed rank")
        else:
            take.append(o)
    return take, left


def _run(plan: DeployPlan, o: DeployOption) -> str:
    if o.serving:
        # each listed resource brings its own GPU count: tensor parallelism follows it
        one_node = o.nodes_per_replica == 1
        argv = serve_argv(plan, o, "MODEL_PLACEHOLDER", tp="TP_PLACEHOLDER" if one_node else None)
        cmd = shlex.join(argv).replace("MODEL_PLACEHOLDER", '"$MODEL"')
        cmd = cmd.replace("TP_PLACEHOLDER", '"$SKYPILOT_NUM_GPUS_PER_NODE"')
        if one_node:
            return cmd + "\n"
        head = 'HEAD_ADDR="$(echo "$SKYPILOT_NODE_IPS" | head -n1)"\n'
        if not ray_cluster(o):  # SGLang: the server on every node, ranked
            return head + with_node(cmd, '"$SKYPILOT_NODE_RANK"', '"$HEAD_ADDR"') + "\n"
        # vLLM over Ray: rank 0 heads the cluster and serves, the others join it
        return (
            head + 'if [ "$SKYPILOT_NODE_RANK" = "0" ]; then\n'
            "  ray start --head --port=6379 --disable-usage-stats\n"
            f"  sleep 30\n  {cmd}\n"
            'else\n  ray start --address="$HEAD_ADDR:6379" --block\nfi\n'
        )
    return (
        'MASTER_ADDR="$(echo "$SKYPILOT_NODE_IPS" | head -n1)"\n'
        'torchrun --nnodes="$SKYPILOT_NUM_NODES" --nproc-per-node="$SKYPILOT_NUM_GPUS_PER_NODE" '
        f'--node-rank="$SKYPILOT_NODE_RANK" --master-addr="$MASTER_ADDR" --master-port={RDZV_PORT} '
        '"$TRAIN_SCRIPT"\n'
    )


def task(plan: DeployPlan, chosen: DeployOption) -> tuple[dict[str, Any], list[str]]:
    """The task document and its header comments."""
    take, left = listed(plan, chosen)
    envs: dict[str, Any] = {"MODEL": model_value(plan, chosen) or f"{FILL}: {fill_ins(plan, chosen)[1].what}"}
    if not chosen.serving:
        envs.update({"TRAIN_SCRIPT": f"{FILL}: your training entry point", **train_env(chosen)})
    doc: dict[str, Any] = {
        "name": f"ga-{plan.recommendation_id.removeprefix('rec_')[:12]}-r{chosen.rank}",
        "resources": {"ordered": [{"accelerators": _accelerators(o)} for o in take]},
        "num_nodes": _shape(chosen)[0],
        "envs": envs,
    }
    if chosen.serving:
        # SkyServe routes to the one port the task opens: without it `sky serve up` refuses the task
        doc["resources"]["ports"] = SERVE_PORT
        doc["service"] = {"readiness_probe": "/health", "replicas": chosen.replicas}
    doc["run"] = _run(plan, chosen)
    comments = [f"rank {o.rank}: {o.describe()}" for o in take]
    comments += [f"not listed: {why}" for why in left]
    if not chosen.serving and len(take) > 1:
        comments.append(f"GPU_ADVISOR_* settings are rank {chosen.rank}'s")
    note = network_note(plan, chosen)
    if note:
        comments.append(note)
    comments += [f"{FILL} {f.name}: {f.what}" for f in fill_ins(plan, chosen) if f.name != "IMAGE"]
    comments.append("HF_TOKEN: pass it with `sky launch --secret HF_TOKEN` (gated weights)")
    return doc, comments
