"""An sbatch script: training as one step of torchrun per node; serving as a job array of one
job per replica. ``--gres`` type names are site-specific (gres.conf): the catalog slug without its vendor prefix
stands in, marked for the user to check."""

from __future__ import annotations

import math
import shlex

from service.core.catalog.records import bare_slug
from service.core.deploy.commands import (
    FILL,
    RDZV_PORT,
    fill_ins,
    model_value,
    network_note,
    ray_cluster,
    serve_argv,
    train_env,
    with_node,
)
from service.core.deploy.plan import DeployOption, DeployPlan


def walltime(seconds: float) -> str:
    """Slurm ``--time`` (D-HH:MM:SS), rounded up to the minute."""
    minutes = max(1, math.ceil(seconds / 60.0))
    d, rem = divmod(minutes, 24 * 60)
    h, m = divmod(rem, 60)
    return f"{d}-{h:02d}:{m:02d}:00" if d else f"{h:02d}:{m:02d}:00"


def _gres_type(o: DeployOption) -> str:
    """The gres type placeholder: the catalog slug without its vendor prefix (``a100-sxm4-80gb``,
    ``b200``), one rule for every GPU -- the short aliases mixed ``a100`` for one variant with
    ``a100-40gb`` for another and a whole slug where a GPU had none."""
    return bare_slug(o.gpu_slug, o.names.vendor).lower()


def _directives(plan: DeployPlan, o: DeployOption) -> list[str]:
    nodes = o.nodes_per_replica if o.serving else o.nodes
    lines = [
        f"#SBATCH --job-name=ga-{plan.recommendation_id.removeprefix('rec_')[:12]}-r{o.rank}",
        f"#SBATCH --nodes={nodes}",
        "#SBATCH --ntasks-per-node=1",
        f"#SBATCH --gres=gpu:{_gres_type(o)}:{o.gpus_per_pod}",
        "#SBATCH --exclusive" if o.gpus_per_pod >= o.gpus_per_node and nodes > 1 else "",
    ]
    if o.serving and (o.replicas or 1) > 1:
        lines.append(f"#SBATCH --array=0-{(o.replicas or 1) - 1}")
    if o.walltime_s:
        lines.append(f"#SBATCH --time={walltime(o.walltime_s)}")
    return [x for x in lines if x]


def _header(plan: DeployPlan, o: DeployOption) -> list[str]:
    lines = [
        f"# GPU Advisor answer {plan.recommendation_id} (data_version {plan.data_version}), option rank {o.rank}:",
        f"#   {o.describe()}" + (f"; one array job per replica ({o.replicas})" if o.serving else ""),
        f"# {FILL} --gres: '{_gres_type(o)}' is the catalog slug without its vendor prefix; gres type names are",
        "#   site-specific: use the one your gres.conf gives this GPU.",
    ]
    if o.serving:
        lines.append(f"# {FILL} --time: a server runs until cancelled; your partition's limit applies.")
    note = network_note(plan, o)
    if note:
        lines.append(f"# {note}")
    lines += [f"# {FILL} {f.name}: {f.what}" for f in fill_ins(plan, o) if f.name != "IMAGE"]
    lines.append(f"# {FILL} ENV_SETUP: a script that activates the software (modules, venv or container)")
    return lines


def _setup(plan: DeployPlan, o: DeployOption) -> list[str]:
    model = shlex.quote(m) if (m := model_value(plan, o)) else f'"{FILL}"'
    return [
        "set -euo pipefail",
        "# shellcheck source=/dev/null",
        'if [[ -n "${ENV_SETUP:-}" ]]; then source "$ENV_SETUP"; fi',
        f'export MODEL="${{MODEL:-{model.strip(chr(39))}}}"',
    ]


def _train_body(o: DeployOption) -> list[str]:
    lines = [f'export TRAIN_SCRIPT="${{TRAIN_SCRIPT:?{FILL}: your training entry point}}"']
    lines += [f"export {k}={shlex.quote(v)}" for k, v in train_env(o).items()]
    lines += [
        'MASTER_ADDR="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"',
        "export MASTER_ADDR",
        "# the node rank is each task's own: expanded by the shell srun starts, not here",
        "# shellcheck disable=SC2016",
        "srun bash -c 'exec torchrun "
        + (
            f"--standalone --nnodes=1 --nproc-per-node={o.gpus_per_node}"
            if o.nodes == 1
            else f"--nnodes={o.nodes} --nproc-per-node={o.gpus_per_node} "
            f'--node-rank="$SLURM_NODEID" --master-addr="$MASTER_ADDR" --master-port={RDZV_PORT}'
        )
        + ' "$TRAIN_SCRIPT"\'',
    ]
    return lines


def _serve_body(plan: DeployPlan, o: DeployOption) -> list[str]:
    cmd = shlex.join(serve_argv(plan, o, "MODEL_PLACEHOLDER")).replace("MODEL_PLACEHOLDER", '"$MODEL"')
    if o.nodes_per_replica == 1:
        return [f"srun {cmd}"]
    if not ray_cluster(o):  # every node runs the server with its own rank
        n = o.nodes_per_replica
        ranked = with_node(cmd, '"$SLURM_NODEID"', '"$HEAD"')
        return [
            'HEAD="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"',
            "export HEAD",
            "# the node rank is each task's own: expanded by the shell srun starts, not here",
            "# shellcheck disable=SC2016",
            f"srun --nodes={n} --ntasks={n} --ntasks-per-node=1 bash -c {shlex.quote('exec ' + ranked)}",
        ]
    workers = o.nodes_per_replica - 1
    return [
        'HEAD="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"',
        'srun --nodes=1 --ntasks=1 -w "$HEAD" ray start --head --port=6379 --block &',
        "sleep 30",
        f'srun --nodes={workers} --ntasks={workers} --exclude="$HEAD" ray start --address="$HEAD:6379" --block &',
        "sleep 30",
        f'srun --nodes=1 --ntasks=1 --overlap -w "$HEAD" {cmd}',
    ]


def script(plan: DeployPlan, o: DeployOption) -> str:
    body = _serve_body(plan, o) if o.serving else _train_body(o)
    lines = ["#!/bin/bash", *_directives(plan, o), *_header(plan, o), *_setup(plan, o), *body]
    return "\n".join(lines) + "\n"
