"""Wire models of ``GET /v1/measurement-plan`` (issue 27): the cells agents should measure next,
each with why."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from service.schemas.common import DataVersion, UtcDatetime


class PlanGpuOut(BaseModel):
    slug: str
    name: str


class PlanAnswerOut(BaseModel):
    """One stored answer the cell's measurement would narrow: the job as asked, on this GPU."""

    recommendation_id: str | None = Field(
        description="the stored recommendation; null unless it was asked with the caller's key (or the caller "
        "is an admin): the plan never says who asked what"
    )
    asked_at: UtcDatetime
    figure: Literal["step_time_s", "tpot_s"] = Field(
        description="the figure whose band is compared: step time (training, batch inference) or time per "
        "output token (serving)"
    )
    provenance: str = Field(description="that figure's provenance now")
    band_now_pct: float = Field(description="its 80% band now: (high - low) / mid, %")
    band_after_pct: float = Field(
        description="the band once this cell is measured (the estimator's measured-cell floor; repeats that "
        "spread more widen it): a lower bound"
    )


class LastMeasuredOut(BaseModel):
    measured_at: UtcDatetime = Field(description="newest result of the cell's newest stack")
    suite_version: str | None
    engine_versions: dict[str, str] = Field(default_factory=dict)


class PlanCellOut(BaseModel):
    rank: int = Field(description="1-based position in the plan (after the filters), across pages")
    gpu: PlanGpuOut
    workload: str
    parameters: dict[str, Any] = Field(description="canonical parameters: what an agent plan entry takes")
    parameters_hash: str
    reasons: list[Literal["narrows", "stale"]]
    narrowing_pct: float = Field(
        description="sum over the answers below of (band now - band after), percentage points of relative width"
    )
    answer_count: int = Field(
        description="answers this measurement would narrow (all of them, not only those listed)"
    )
    answers: list[PlanAnswerOut] = Field(description="the most narrowed answers first (at most 10)")
    stale: list[str] = Field(description="why the last measurement is out of date; empty when it is not")
    last_measured: LastMeasuredOut | None
    why: str = Field(description="one sentence")


class MeasurementPlanOut(BaseModel):
    items: list[PlanCellOut]
    count: int = Field(description="cells on the whole plan (after the filters)")
    next_cursor: str | None = Field(description="pass as ?cursor= for the next page; null on the last page")
    since_days: int = Field(description="stored recommendations of this many days are the questions")
    questions: int = Field(description="stored recommendations read (the newest, at most 200)")
    questions_without_cell: int = Field(
        description="questions no preset benchmark cell measures exactly (model by config or size, non-eager or "
        "pipeline-parallel training, tensor-parallel or rate-driven serving): counted, not planned"
    )
    questions_unreadable: int = Field(description="stored requests that no longer parse as a question")
    suite_version: str = Field(description="the suite version a measurement is stale against")
    data_version: DataVersion
