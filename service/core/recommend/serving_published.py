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
    if full is None or full.serving is None or not isinstance(full.job.config, InferenceConfig):
        return ()
    sv = full.serving
    if sv.provenance != "published" or not sv.sources or ENGINE_CLASSES[sv.engine].batching != "continuous":
        return ()
    gpus = full.job.config.gpu_count
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
