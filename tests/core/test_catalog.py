"""Pure catalog rules: the document layers (merge, smallest override, changed paths), ETags,
the names a document is found under, name/PCI resolution, listing order, prices and FX."""

from __future__ import annotations

import copy
import datetime as dt
from decimal import Decimal
from typing import Any

from service.core.catalog.records import (
    AliasName,
    FxRate,
    GpuRecord,
    PriceRow,
    aliases_of,
    as_pci_id,
    changed_paths,
    compute_etag,
    convert,
    deep_merge,
    diff,
    resolve_ident,
    sort_records,
    sort_value,
    view_price,
)
from service.core.catalog.specs import AliasEntry

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _doc(slug: str = "nvidia-x1", **over: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "slug": slug,
        "vendor": "nvidia",
        "name": f"NVIDIA {slug.upper()}",
        "memory": {"usable_memory_bytes": 80, "bandwidth_gb_per_s": 2000.0},
        "power": {"tdp_w": 700.0},
        "peaks": {"bf16_tflops": 989.0, "fp8_tflops": None},
        "identity": {"pci_device_ids": []},
        "aliases": [],
    }
    doc.update(over)
    return doc


def _record(doc: dict[str, Any], **over: Any) -> GpuRecord:
    fields: dict[str, Any] = {
        "slug": doc["slug"],
        "document": doc,
        "catalog_document": doc,
        "override_document": None,
        "origin": "catalog",
        "revision": 1,
        "catalog_version": "v1",
        "updated_at": T0,
    }
    fields.update(over)
    return GpuRecord(**fields)


# ---- documents ---------------------------------------------------------------------------


def test_deep_merge_merges_nested_and_lets_none_unset_a_figure() -> None:
    base = _doc()
    over = {"power": {"tdp_w": 600.0}, "memory": {"bandwidth_gb_per_s": None}, "notes": "capped"}
    merged = deep_merge(base, over)
    assert merged["power"] == {"tdp_w": 600.0}
    assert merged["memory"] == {"usable_memory_bytes": 80, "bandwidth_gb_per_s": None}
    assert merged["notes"] == "capped" and merged["peaks"] == base["peaks"]
    # a non-mapping replaces a mapping and vice versa
    assert deep_merge({"a": {"b": 1}}, {"a": 3}) == {"a": 3}
    assert deep_merge({"a": 3}, {"a": {"b": 1}}) == {"a": {"b": 1}}


def test_deep_merge_changes_neither_input_and_shares_nothing_mutable() -> None:
    base, over = _doc(), {"memory": {"usable_memory_bytes": 81}, "aliases": [{"name": "X1", "kind": "short"}]}
    base_before, over_before = copy.deepcopy(base), copy.deepcopy(over)
    merged = deep_merge(base, over)
    merged["memory"]["usable_memory_bytes"] = 1
    merged["aliases"].append({"name": "Y", "kind": "short"})
    merged["peaks"]["bf16_tflops"] = 0.0
    assert base == base_before and over == over_before


def test_diff_is_the_smallest_override_that_merges_back() -> None:
    base = _doc()
    target = deep_merge(base, {"power": {"tdp_w": 600.0}, "peaks": {"fp8_tflops": 1979.0}})
    over = diff(base, target)
    assert over == {"power": {"tdp_w": 600.0}, "peaks": {"fp8_tflops": 1979.0}}
    assert deep_merge(base, over) == target
    assert diff(base, copy.deepcopy(base)) == {}
    # setting a figure back to unknown is an override too
    assert diff(base, deep_merge(base, {"memory": {"bandwidth_gb_per_s": None}})) == {
        "memory": {"bandwidth_gb_per_s": None}
    }


def test_changed_paths_lists_only_real_changes_sorted() -> None:
    base = _doc()
    over = {
        "power": {"tdp_w": 600.0},
        "memory": {"usable_memory_bytes": 80, "bandwidth_gb_per_s": 1.0},
        "chip": "GH100",
    }
    assert changed_paths(base, over) == ["chip", "memory.bandwidth_gb_per_s", "power.tdp_w"]
    assert changed_paths(base, {}) == []


def test_etag_depends_on_revision_and_content_not_key_order() -> None:
    doc = _doc()
    tag = compute_etag(3, doc)
    assert tag.startswith('"3-') and tag.endswith('"') and len(tag) == len('"3-"') + 12
    reordered = dict(reversed(list(doc.items())))
    assert compute_etag(3, reordered) == tag
    assert compute_etag(4, doc) != tag
    assert compute_etag(3, deep_merge(doc, {"power": {"tdp_w": 1.0}})) != tag


def test_aliases_of_adds_slug_name_and_pci_ids_once() -> None:
    doc = _doc(
        "nvidia-h100-sxm",
        name="NVIDIA H100 SXM5 80GB",
        aliases=[
            {"name": "H100", "kind": "short", "default": True},
            {"name": "NVIDIA H100 80GB HBM3", "kind": "nvml", "default": False},
            {"name": "h-100", "kind": "short", "default": False},  # same key and kind: the later wins
        ],
        identity={"pci_device_ids": ["0x2330"]},
    )
    assert aliases_of(doc) == (
        AliasName("h-100", "h100", "short", False),
        AliasName("NVIDIA H100 80GB HBM3", "nvidiah10080gbhbm3", "nvml", False),
        AliasName("nvidia-h100-sxm", "nvidiah100sxm", "slug", False),
        AliasName("NVIDIA H100 SXM5 80GB", "nvidiah100sxm580gb", "name", False),
        AliasName("h100-sxm", "h100sxm", "slug", False),  # the slug without its vendor prefix
        AliasName("0x2330", "0x2330", "pci", False),
    )
    # an alias of kind "slug" already covering the slug is kept as given
    covered = aliases_of(_doc(aliases=[{"name": "NVIDIA-X1", "kind": "slug", "default": True}]))
    assert [a for a in covered if a.kind == "slug"] == [
        AliasName("NVIDIA-X1", "nvidiax1", "slug", True),
        AliasName("x1", "x1", "slug", False),
    ]


def test_record_properties() -> None:
    doc = _doc()
    admin = _record(doc, catalog_document=None, override_document=doc, origin="admin", revision=2)
    assert admin.overridden_fields == [] and admin.name == "NVIDIA NVIDIA-X1"
    assert admin.etag == compute_etag(2, doc)
    over = {"power": {"tdp_w": 600.0}}
    edited = _record(deep_merge(doc, over), catalog_document=doc, override_document=over)
    assert edited.overridden_fields == ["power.tdp_w"]
    assert _record(doc, override_document={"power": {"tdp_w": 700.0}}).overridden_fields == []


# ---- names -------------------------------------------------------------------------------


def test_pci_ids_in_every_written_form() -> None:
    for ident in ("0x2335", "10de:2335", "0x233510DE", "pci-0x2335", " 0X2335 "):
        assert as_pci_id(ident) == "0x2335", ident
    for ident in ("H100", "2335", "0xnothex", "nvidia-h100"):
        assert as_pci_id(ident) is None, ident


def test_resolve_ident_by_pci_id_then_by_name() -> None:
    index = {
        "0x2330": [AliasEntry("nvidia-h100-sxm")],
        "h100": [AliasEntry("nvidia-h100-sxm", True), AliasEntry("nvidia-h100-pcie")],
        "nvidiah100sxm": [AliasEntry("nvidia-h100-sxm")],
    }
    assert resolve_ident("10de:2330", index).slugs == ("nvidia-h100-sxm",)
    res = resolve_ident("NVIDIA-H100-SHARED", index)
    assert res.slugs == ("nvidia-h100-pcie", "nvidia-h100-sxm") and res.default_slug == "nvidia-h100-sxm"
    assert res.shared
    # a PCI id nobody carries falls through to name resolution (and finds nothing)
    miss = resolve_ident("0x9999", index)
    assert miss.slugs == ()


# ---- listing -----------------------------------------------------------------------------


def test_sort_value_reads_sections_and_peaks() -> None:
    doc = _doc(launch_year=2022)
    assert sort_value(doc, "usable_memory_bytes") == 80
    assert sort_value(doc, "tdp_w") == 700.0
    assert sort_value(doc, "bf16_tflops") == 989.0
    assert sort_value(doc, "fp8_tflops") is None
    assert sort_value(doc, "launch_year") == 2022 and sort_value(doc, "slug") == "nvidia-x1"


def test_sort_records_puts_unknowns_last_both_ways_and_breaks_ties_by_slug() -> None:
    recs = [
        _record(_doc("nvidia-c", power={"tdp_w": 300.0})),
        _record(_doc("nvidia-a", power={"tdp_w": None})),
        _record(_doc("nvidia-b", power={"tdp_w": 300.0})),
        _record(_doc("nvidia-d", power={"tdp_w": 700.0})),
    ]
    up = [r.slug for r in sort_records(recs, "tdp_w", descending=False)]
    down = [r.slug for r in sort_records(recs, "tdp_w", descending=True)]
    assert up == ["nvidia-b", "nvidia-c", "nvidia-d", "nvidia-a"]
    assert down == ["nvidia-d", "nvidia-b", "nvidia-c", "nvidia-a"]
    assert [r.slug for r in sort_records(recs, "slug", descending=True)] == [
        "nvidia-d",
        "nvidia-c",
        "nvidia-b",
        "nvidia-a",
    ]


# ---- prices and FX -----------------------------------------------------------------------


def _rate(base: str, quote: str, rate: str, day: dt.date) -> FxRate:
    return FxRate(base=base, quote=quote, rate=Decimal(rate), effective_date=day, source="test")


def _price(**over: Any) -> PriceRow:
    fields: dict[str, Any] = {
        "id": 1,
        "gpu_slug": "nvidia-x1",
        "provider": "aws",
        "region": "us-east-1",
        "instance_type": "p5.48xlarge",
        "gpus_per_instance": 8,
        "pricing_model": "on_demand",
        "currency": "USD",
        "amount": Decimal("98.32"),
        "effective_date": dt.date(2025, 1, 1),
        "source": "test",
        "is_estimate": True,
        "origin": "catalog",
    }
    fields.update(over)
    return PriceRow(**fields)


def test_convert_uses_the_newest_rate_on_or_before_the_date_else_the_oldest_after() -> None:
    rates = [  # newest first, as the repository returns them
        _rate("USD", "CNY", "7.30", dt.date(2025, 6, 1)),
        _rate("CNY", "USD", "0.14", dt.date(2025, 1, 1)),
        _rate("USD", "CNY", "7.00", dt.date(2024, 6, 1)),
    ]
    assert convert(Decimal("10"), "USD", "CNY", rates, dt.date(2025, 7, 1)) == (
        Decimal("73.0000"),
        dt.date(2025, 6, 1),
    )
    # an inverse pair is inverted
    assert convert(Decimal("7"), "USD", "CNY", rates, dt.date(2025, 3, 1)) == (
        Decimal("50.0000"),
        dt.date(2025, 1, 1),
    )
    assert convert(Decimal("10"), "CNY", "USD", rates, dt.date(2024, 7, 1)) == (
        Decimal("1.4286"),
        dt.date(2024, 6, 1),
    )
    assert convert(Decimal("10"), "USD", "CNY", rates, dt.date(2020, 1, 1)) == (
        Decimal("70.0000"),
        dt.date(2024, 6, 1),
    )
    assert convert(Decimal("10"), "USD", "EUR", rates, dt.date(2025, 7, 1)) is None


def test_view_price_derives_per_gpu_hour_age_staleness_and_conversion() -> None:
    rates = [_rate("USD", "CNY", "7.25", dt.date(2024, 12, 1))]
    v = view_price(_price(), rates, today=dt.date(2025, 3, 1), stale_days=30)
    assert v.per_gpu_hour == Decimal("12.2900") and v.age_days == 59 and v.stale
    assert v.converted == {"CNY": Decimal("712.8200")} and v.fx_date == dt.date(2024, 12, 1)
    fresh = view_price(_price(), rates, today=dt.date(2025, 1, 31), stale_days=30)
    assert fresh.age_days == 30 and not fresh.stale
    bought = view_price(
        _price(pricing_model="purchase", currency="CNY", amount=Decimal("725")),
        rates,
        today=dt.date(2025, 1, 1),
        stale_days=30,
    )
    assert bought.per_gpu_hour is None and bought.converted == {"USD": Decimal("100.0000")}
    assert view_price(_price(), [], today=dt.date(2025, 1, 1), stale_days=30).converted == {}
