"""``GET /v1/compare`` answers: the use case's comparison as the wire model, with ratios to the
first GPU, speed-ups and which rows differ."""

from __future__ import annotations

import datetime as dt

from service.api.presenters.gpus import gpu_url, warning_json
from service.schemas.common import Warning_
from service.schemas.compare import (
    CapabilityRow,
    CompareGpu,
    CompareOut,
    GpuPrices,
    ProviderPrice,
    ResultCell,
    ResultRow,
    SpecFigure,
    SpecRow,
)
from service.usecases.compare import Cell, Comparison


def _ratio(v: float | int | None, first: float | int | None) -> float | None:
    if v is None or first is None or not first:
        return None
    return round(float(v) / float(first), 4)


def _speedup(c: Cell, first: Cell, higher_is_better: bool) -> float | None:
    if c.value is None or first.value is None or c.value <= 0 or first.value <= 0:
        return None
    return round(c.value / first.value if higher_is_better else first.value / c.value, 4)


def _spec_rows(c: Comparison) -> list[SpecRow]:
    """Spec figures with their ratio to the first GPU's and whether the row differs."""
    specs = []
    for line in c.specs:
        first = line.figures[0].value
        specs.append(
            SpecRow(
                key=line.key,
                label=line.label,
                group=line.group,
                unit=line.unit,
                higher_is_better=line.higher_is_better,
                values=[
                    SpecFigure(
                        value=f.value,
                        ratio_to_first=_ratio(f.value, first),
                        provenance=f.provenance,
                        source_kind=f.source_kind,
                        source_title=f.source_title,
                        source_url=f.source_url,
                        derivation=f.derivation,
                        marketed=f.marketed,
                    )
                    for f in line.figures
                ],
                differs=len({f.value for f in line.figures}) > 1,
            )
        )
    return specs


def _result_rows(c: Comparison) -> list[ResultRow]:
    """Measured or estimated cells per workload row, with the speed-up over the first GPU."""
    results = []
    for r in c.results:
        first_cell = r.cells[0]
        results.append(
            ResultRow(
                workload=r.workload,
                parameters=dict(r.parameters),
                parameters_hash=r.parameters_hash,
                metric=r.metric,
                unit=r.unit,
                higher_is_better=r.higher_is_better,
                common_stack=r.common_stack,
                stack=dict(r.stack) if r.stack is not None else None,
                cells=[
                    ResultCell(
                        source=x.source,
                        value=x.value,
                        low=x.low,
                        high=x.high,
                        provenance=x.provenance,
                        oom=x.oom,
                        thin=x.thin,
                        count=x.count,
                        speedup_vs_first=_speedup(x, first_cell, r.higher_is_better),
                        fingerprint_hash=x.fingerprint_hash,
                        newest_measured_at=x.newest_measured_at,
                        source_gpus=list(x.source_gpus),
                        reason=x.reason,
                    )
                    for x in r.cells
                ],
            )
        )
    return results


def _prices(c: Comparison) -> list[GpuPrices]:
    """Each GPU's offers, the cheapest per GPU-hour and its ratio to the first GPU's."""
    cheapest = [round(p.providers[0].per_gpu_hour, 6) if p.providers else None for p in c.prices]
    return [
        GpuPrices(
            slug=p.slug,
            cheapest_per_gpu_hour=cheapest[i],
            ratio_to_first=_ratio(cheapest[i], cheapest[0]),
            reason=p.reason,
            providers=[
                ProviderPrice(
                    provider=q.provider,
                    region=q.region,
                    instance_type=q.instance_type,
                    gpus_per_instance=q.gpus_per_instance,
                    pricing_model=q.pricing_model,
                    currency=q.currency,
                    per_gpu_hour=round(q.per_gpu_hour, 6),
                    per_instance_hour=round(q.per_hour, 6),
                    effective_date=q.effective_date,
                    age_days=q.age_days,
                    stale=q.stale,
                    fx_date=q.fx_date,
                    price_row_ids=list(q.price_row_ids),
                    source=q.source,
                )
                for q in p.providers
            ],
        )
        for i, p in enumerate(c.prices)
    ]


def compare_out(c: Comparison, *, as_of: dt.datetime, data_version: str, lang: str = "en") -> CompareOut:
    return CompareOut(
        gpus=[
            CompareGpu(
                query=q,
                slug=v.record.slug,
                name=v.record.name,
                url=gpu_url(v.record.slug),
                vendor=str(v.record.document.get("vendor")),
                architecture=v.record.document.get("architecture"),
                form_factor=v.record.document.get("form_factor"),
                warnings=[Warning_(**warning_json(w, lang)) for w in v.warnings],
            )
            for q, v in zip(c.queries, c.gpus, strict=True)
        ],
        specs=_spec_rows(c),
        capabilities=[
            CapabilityRow(
                key=x.key, label=x.label, values=list(x.values), differs=len({str(v) for v in x.values}) > 1
            )
            for x in c.capabilities
        ],
        results=_result_rows(c),
        currency=c.currency,
        prices=_prices(c),
        stale_after_days=c.stale_after_days,
        as_of=as_of,
        data_version=data_version,
        notes=list(c.notes),
    )
