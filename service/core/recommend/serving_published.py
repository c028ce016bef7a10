"""The reasons a serving plan carries about published runs: its throughput is a published run of
its exact configuration (``service.core.estimation.estimate_time._published``), or its engine's
published runs of the model on the GPU at other configurations ran at some multiple of the model
(``service.core.estimation.serving_record``)."""

from __future__ import annotations

from service.core.catalog.specs import GpuSpec
from service.core.estimation.estimate import Estimate
from service.core.estimation.memory import InferenceConfig
from service.core.estimation.serving_engines import ENGINE_CLASSES
from service.core.estimation.serving_record import engine_record
from service.core.recommend.reasons import Reason

__all__ = ["published_record", "published_run"]


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


def published_record(
    cfg: InferenceConfig, gpu: GpuSpec, gpu_name: str, full: Estimate | None
) -> tuple[Reason, ...]:
    """``PUBLISHED_RECORD`` where no published run or measured cell gives the plan its figure
    (``full``: its estimate, None for a plan at a rate) but its engine's published runs of the
    model in its weight format on this GPU give a record
    (:func:`~service.core.estimation.serving_record.engine_record`): told beside the figure the
    plan is ranked by, which stays the model's."""
    sv = full.serving if full is not None else None
    if sv is not None and (sv.sources or sv.provenance == "measured"):
        return ()
    if ENGINE_CLASSES[cfg.engine].batching != "continuous":
        return ()
    record = engine_record(cfg, gpu)
    if record is None:
        return ()
    return (
        Reason(
            "PUBLISHED_RECORD",
            {
                "gpu": gpu_name,
                "engine": cfg.engine,
                "runs": record.runs,
                "ratio": round(record.median_ratio, 2),
                "low": round(record.low_ratio, 2),
                "high": round(record.high_ratio, 2),
                "source": record.dated,
                **({"tensor_parallel": record.tensor_parallel} if record.tensor_parallel else {}),
            },
        ),
    )
