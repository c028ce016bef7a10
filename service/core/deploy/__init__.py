"""Deployable artifacts for a stored recommendation: Kubernetes manifests, a SkyPilot task and a
Slurm batch script, rendered from the answer as it was stored (pure: no I/O, no clock)."""

from service.core.deploy.plan import DeployOption, DeployPlan, SchedulerNames, plan_of
from service.core.deploy.render import TARGETS, Artifact, NotRenderable, UnknownOption, render

__all__ = [
    "TARGETS",
    "Artifact",
    "DeployOption",
    "DeployPlan",
    "NotRenderable",
    "SchedulerNames",
    "UnknownOption",
    "plan_of",
    "render",
]
