"""The measurement plan as its wire model (``GET /v1/measurement-plan``)."""

from __future__ import annotations

from service.core.evidence.measurement_plan import Demand, PlanCell
from service.schemas.measurement_plan import (
    LastMeasuredOut,
    MeasurementPlanOut,
    PlanAnswerOut,
    PlanCellOut,
    PlanGpuOut,
)
from service.usecases.measurement_plan import MeasurementPlan

ANSWERS_LISTED = 10
FIGURE_NAMES = {"step_time_s": "step time", "tpot_s": "time per output token"}


def _answer_out(d: Demand, visible: frozenset[str]) -> PlanAnswerOut:
    return PlanAnswerOut(
        recommendation_id=d.question_id if d.question_id in visible else None,
        asked_at=d.asked_at,
        figure=d.metric,  # "step_time_s" | "tpot_s" by band_gain
        provenance=d.provenance,
        band_now_pct=round(d.band_now_pct, 2),
        band_after_pct=round(d.band_after_pct, 2),
    )


def why(c: PlanCell) -> str:
    """One sentence: which answers it narrows and by how much, then why it is stale."""
    bits: list[str] = []
    if "narrows" in c.reasons:
        top = c.demands[0]
        n = len([d for d in c.demands if d.narrowing_pct > 0])
        bits.append(
            f"measuring it would narrow {n} answer{'s' if n != 1 else ''} ({c.narrowing_pct:.1f} points of band "
            f"in all); the widest: {FIGURE_NAMES.get(top.metric, top.metric)} band {top.band_now_pct:.1f}% "
            f"({top.provenance}) -> {top.band_after_pct:.1f}% once measured"
        )
    bits.extend(c.stale)
    return "; ".join(bits)


def cell_out(c: PlanCell, rank: int, name: str, visible: frozenset[str]) -> PlanCellOut:
    last = c.last
    return PlanCellOut(
        rank=rank,
        gpu=PlanGpuOut(slug=c.gpu_slug, name=name),
        workload=c.workload,
        parameters=dict(c.parameters),
        parameters_hash=c.parameters_hash,
        reasons=list(c.reasons),  # "narrows" | "stale"
        narrowing_pct=round(c.narrowing_pct, 2),
        answer_count=len(c.demands),
        answers=[_answer_out(d, visible) for d in c.demands[:ANSWERS_LISTED]],
        stale=list(c.stale),
        last_measured=LastMeasuredOut(
            measured_at=last.measured_at,
            suite_version=last.suite_version,
            engine_versions=dict(last.engine_versions),
        )
        if last is not None
        else None,
        why=why(c),
    )


def measurement_plan_out(p: MeasurementPlan, since_days: int) -> MeasurementPlanOut:
    return MeasurementPlanOut(
        items=[
            cell_out(c, p.position + i + 1, p.gpu_names[c.gpu_slug], p.visible_question_ids)
            for i, c in enumerate(p.cells)
        ],
        count=p.total,
        next_cursor=p.next_cursor,
        since_days=since_days,
        questions=p.questions,
        questions_without_cell=p.questions_without_cell,
        questions_unreadable=p.questions_unreadable,
        suite_version=p.suite_version,
        data_version=p.data_version,
    )
