"""The reason a serving plan carries when its throughput is a published run of its exact
configuration (``service.core.estimation.estimate_time._published``)."""

from __future__ import annotations

from service.core.estimation.estimate import Estimate
from service.core.estimation.memory import InferenceConfig
from service.core.estimation.serving_engines import ENGINE_CLASSES
from service.core.recommend.reasons import Reason

__all__ = ["published_run"]


def published_run(full: Estimate | None, gpu_name: str) -> tuple[Reason, ...]:
    """``PUBLISHED_RUN`` where the plan's throughput is a published run of its exact
    configuration (``estimate_time._published``: a continuous engine's answer names sources only
    when one anchors it)."""
    sv = full.serving if full is not None else None
    if sv is None or sv.provenance != "published" or not sv.sources:
        return ()
    if ENGINE_CLASSES[sv.engine].batching != "continuous":
        return ()
    job = full.job if full is not None else None
    gpus = job.config.gpu_count if job is not None and isinstance(job.config, InferenceConfig) else 1
    return (
        Reason(
            "PUBLISHED_RUN",
            {
                "gpu": gpu_name,
                "engine": sv.engine,
                "tokens_per_s_per_gpu": round(sv.output_tokens_per_s / gpus, 1),
                "source": ", ".join(sv.sources),
            },
        ),
    )
