"""One artifact per (target, option): the text a scheduler takes, and what to fill in."""

from __future__ import annotations

from dataclasses import dataclass

from service.core.deploy import kubernetes, skypilot, slurm
from service.core.deploy.commands import FILL, fill_ins, network_note
from service.core.deploy.plan import DeployOption, DeployPlan
from service.core.deploy.yamltext import dump

TARGETS: tuple[str, ...] = ("kubernetes", "skypilot", "slurm")


class UnknownOption(LookupError):
    """The answer has no option of that rank (or no option at all)."""


class NotRenderable(ValueError):
    """The option cannot be expressed for the target (e.g. a GPU without a SkyPilot name)."""


@dataclass(frozen=True, slots=True)
class Artifact:
    target: str
    rank: int
    media_type: str
    filename: str
    content: str
    fill_in: tuple[str, ...]
    """``NAME: what`` for each placeholder (all marked FILL-IN in the content)."""


def _k8s(plan: DeployPlan, o: DeployOption) -> str:
    head = [
        f"GPU Advisor answer {plan.recommendation_id} (data_version {plan.data_version}), option rank {o.rank}",
        o.describe(),
        *[f"{FILL} {f.name}: {f.what}" for f in fill_ins(plan, o)],
    ]
    note = network_note(plan, o)
    if note:
        head.append(note)
    docs = kubernetes.manifests(plan, o)
    return "---\n".join(dump(d, head if i == 0 else ()) for i, d in enumerate(docs))


def render(plan: DeployPlan, target: str, rank: int = 1) -> Artifact:
    """The artifact of ``target`` for the option ranked ``rank``."""
    o = plan.option(rank)
    if o is None:
        raise UnknownOption(
            f"the answer has no option ranked {rank}"
            + (f" (ranks 1-{len(plan.options)})" if plan.options else " (it has no options)")
        )
    if o.disaggregated is not None:
        raise NotRenderable(
            f"option {rank} serves from disaggregated pools ({o.disaggregated}): a prefill and a decode "
            "deployment joined by a KV-cache connector and a router, which these artifacts do not render "
            "(aggregated replicas would not be the layout that was sized); deploy it with the engine's "
            "disaggregation (vLLM --kv-transfer-config, SGLang --disaggregation-mode) or render another option"
        )
    fill = tuple(f"{f.name}: {f.what}" for f in fill_ins(plan, o))
    base = kubernetes.name_of(plan, o)
    if target == "kubernetes":
        return Artifact(target, rank, "application/yaml", f"{base}.yaml", _k8s(plan, o), fill)
    if target == "skypilot":
        if o.names.skypilot is None:
            raise NotRenderable(f"{o.gpu_name} has no SkyPilot accelerator name in the catalog")
        doc, comments = skypilot.task(plan, o)
        head = [f"GPU Advisor answer {plan.recommendation_id} (data_version {plan.data_version})", *comments]
        return Artifact(target, rank, "application/yaml", f"{base}.sky.yaml", dump(doc, head), fill)
    if target == "slurm":
        return Artifact(target, rank, "text/x-shellscript", f"{base}.sbatch", slurm.script(plan, o), fill)
    raise ValueError(f"unknown target {target!r}: one of {', '.join(TARGETS)}")
