"""Price use cases: an operator's refresh from a SkyPilot ``vms.csv``.

The pure importer (:func:`service.core.pricing.skypilot.import_vms_csv`) parses, folds zones and maps
names through the aliases of the catalog as it is now (SkyPilot-kind aliases first, then every
alias; sourced instance hints passed in by the caller); this use case refuses a file with any
malformed row before writing anything (nothing half-imported), then upserts the price rows in
one batch and moves the catalog watermark only if a row was added or changed, so re-importing
the same file (same provider, date and source) changes nothing.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from service.core.catalog.records import PriceEntry
from service.core.pricing.skypilot import (
    ImportReport,
    InstanceHint,
    alias_index_from_docs,
    import_vms_csv,
    memory_mib_from_docs,
)
from service.db.uow import UnitOfWork
from service.usecases.errors import FieldError, Invalid
from service.usecases.transaction import commits

# Column widths of the price table (service.db.models.Price): a longer name is refused, not cut.
_WIDTHS = {"provider": 64, "region": 64, "instance_type": 100, "source": 500}

IMPORT_ORIGIN = "admin"
"""Imported rows are an operator's: the shipped-catalog upsert never clobbers them."""


@dataclass(frozen=True, slots=True)
class SkypilotImport:
    """What an import did: the importer's report (records, skipped rows, unmapped names) and
    how many price rows were inserted or changed (0 on a dry run or a re-import)."""

    report: ImportReport
    upserted: int
    dry_run: bool


@commits
def import_skypilot(
    uow: UnitOfWork,
    text: str,
    *,
    provider: str,
    effective_date: dt.date,
    source: str,
    hints: Iterable[InstanceHint] = (),
    dry_run: bool = False,
    date_basis: str = "effective",
) -> SkypilotImport:
    """Import a SkyPilot ``vms.csv`` of ``provider`` as price rows dated ``effective_date``.

    ``date_basis`` is ``retrieved`` when ``effective_date`` is only the day the file was read
    (no ``--as-of``): the rows then say their age is a lower bound.

    Raises :class:`Invalid` naming every malformed row (``line N``, column) and writes nothing
    when the file has one. Unknown, ambiguous and contradicted accelerator names are not errors:
    they are in ``report.issues`` and priced nothing (never guessed)."""
    _check_names(provider, source)
    docs = [r.document for r in uow.catalog.records().values()]
    if not docs:
        raise Invalid(
            "the catalog is empty, so no name can be mapped: run `gpu-advisor migrate` first",
            fields=[FieldError(("catalog",), "no GPUs")],
        )
    report = import_vms_csv(
        text,
        provider=provider,
        effective_date=effective_date,
        source=source,
        indexes=[alias_index_from_docs(docs, kinds={"skypilot"}), alias_index_from_docs(docs)],
        gpu_memory_mib=memory_mib_from_docs(docs),
        hints=hints,
    )
    if report.errors:
        raise Invalid(
            f"{len(report.errors)} malformed row(s) in the {provider} file; nothing was imported",
            fields=[FieldError((f"line {e.line}", e.column or "row"), e.message) for e in report.errors],
        )
    _check_row_widths(report)
    if dry_run:
        return SkypilotImport(report=report, upserted=0, dry_run=True)
    entries = _price_entries(report, date_basis)
    upserted, _unknown = uow.catalog.upsert_prices(
        entries, origin=IMPORT_ORIGIN
    )  # slugs came from the catalog
    if upserted:
        uow.touch_catalog()
    return SkypilotImport(report=report, upserted=upserted, dry_run=False)


def _check_names(provider: str, source: str) -> None:
    """Refuse an empty or over-wide provider or source before reading the file: the price
    table would cut a longer name, and a cut name silently merges providers."""
    if not provider.strip():
        raise Invalid("a provider name is needed", fields=[FieldError(("provider",), "empty")])
    if not source.strip():
        raise Invalid("a source is needed", fields=[FieldError(("source",), "empty")])
    too_long = [
        FieldError((name,), f"longer than {width} characters")
        for name, value in (("provider", provider), ("source", source))
        for width in (_WIDTHS[name],)
        if len(value) > width
    ]
    if too_long:
        raise Invalid("a name is too long for the price table", fields=too_long)


def _check_row_widths(report: ImportReport) -> None:
    """Refuse the whole file when a region or instance type is wider than its column (never cut)."""
    long_fields = sorted(
        {
            (name, getattr(r, name))
            for r in report.records
            for name in ("region", "instance_type")
            if len(getattr(r, name)) > _WIDTHS[name]
        }
    )
    if long_fields:
        raise Invalid(
            "names too long for the price table; nothing was imported",
            fields=[
                FieldError((name, value[:40]), f"longer than {_WIDTHS[name]} characters")
                for name, value in long_fields
            ],
        )


def _price_entries(report: ImportReport, date_basis: str) -> list[tuple[str, PriceEntry]]:
    """The importer's records as (GPU slug, price row) pairs, the operator's measured prices."""
    return [
        (
            r.gpu_slug,
            PriceEntry(
                provider=r.provider,
                region=r.region,
                instance_type=r.instance_type,
                gpus_per_instance=r.gpus_per_instance,
                pricing_model=r.pricing_model,
                currency=r.currency,
                amount=Decimal(r.amount),
                effective_date=r.effective_date,
                source=r.source,
                is_estimate=False,
                date_basis=date_basis,
            ),
        )
        for r in report.records
    ]
