"""Price quality and shape-aware pricing on the shipped SkyPilot rows (issue 24): the placeholder
and anomaly checks flag the rows the issue names and no ordinary list price; a plan's node shape
is priced only on instance types that hold it."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from service.catalog.loader import load_shipped
from service.catalog.skypilot_snapshot import build_snapshot, instance_shapes
from service.core.catalog.records import PriceRow
from service.core.catalog.specs import gpu_spec_from_doc
from service.core.pricing import quality
from service.core.pricing.cost import CostAssumptions, NoMatchingInstance, PriceBook, ShapePrice
from service.core.pricing.shapes import NO_MATCHING_INSTANCE, DeployShape, GpuLink

SHIPPED = load_shipped()
TODAY = dt.date(2026, 12, 4)


def _rows() -> dict[str, list[PriceRow]]:
    out: dict[str, list[PriceRow]] = {}
    for i, p in enumerate(build_snapshot(SHIPPED.gpus).prices, start=1):
        out.setdefault(str(p["gpu_slug"]), []).append(
            PriceRow(
                id=i,
                gpu_slug=str(p["gpu_slug"]),
                provider=str(p["provider"]),
                region=str(p["region"]),
                instance_type=str(p["instance_type"]),
                gpus_per_instance=int(p["gpus_per_instance"]),  # type: ignore[call-overload]
                pricing_model=str(p["pricing_model"]),
                currency=str(p["currency"]),
                amount=Decimal(str(p["amount"])),
                effective_date=dt.date.fromisoformat(str(p["effective_date"])),
                source=str(p["source"]),
                is_estimate=False,
                origin="catalog",
                date_basis=str(p["date_basis"]),
            )
        )
    return out


ROWS = _rows()
ALL = [r for rs in ROWS.values() for r in rs]
FLAGS = quality.assess(ALL)
SPECS = {g["slug"]: gpu_spec_from_doc(g) for g in SHIPPED.gpus}
LINKS = {s: GpuLink(v.form_factor, v.node.nvlink_domain_size, v.vendor) for s, v in SPECS.items()}
BOOK = PriceBook.build(ROWS, [], today=TODAY, shapes=instance_shapes(), links=LINKS)
OD = CostAssumptions()


def codes(r: PriceRow) -> set[str]:
    return {s.code for s in FLAGS.get(r.id, ())}


def test_the_one_dollar_provider_is_flagged_as_a_placeholder_on_every_row() -> None:
    mithril = [r for r in ALL if r.provider == "mithril"]
    assert mithril and {r.gpu_slug for r in mithril} == {"nvidia-h100-sxm", "nvidia-h200-sxm"}
    for r in mithril:
        assert quality.UNIFORM_PRICE in codes(r), r
    spot = [r for r in mithril if r.pricing_model == "spot"]
    assert all(quality.SPOT_EQUALS_ON_DEMAND in codes(r) for r in spot)
    # $1.00 for an H200 is also far below what the other providers ask for one
    h200 = next(r for r in mithril if r.gpu_slug == "nvidia-h200-sxm" and r.pricing_model == "on_demand")
    assert quality.FAR_BELOW_MEDIAN in codes(h200)
    assert "1 USD per GPU-hour" in FLAGS[h200.id][0].detail


def test_a_spot_column_copied_from_on_demand_flags_the_spot_rows_only() -> None:
    runpod = [r for r in ALL if r.provider == "runpod"]
    for r in runpod:
        if r.pricing_model == "spot":
            assert quality.SPOT_EQUALS_ON_DEMAND in codes(r), r
        else:
            assert quality.SPOT_EQUALS_ON_DEMAND not in codes(r)
    # a provider whose spot prices are real discounts is not flagged
    aws_spot = [r for r in ALL if r.provider == "aws" and r.pricing_model == "spot"]
    assert aws_spot and not any(quality.SPOT_EQUALS_ON_DEMAND in codes(r) for r in aws_spot)


def test_ordinary_list_prices_are_not_flagged() -> None:
    def od(provider: str, it: str) -> PriceRow:
        return next(
            r for r in ALL if (r.provider, r.instance_type, r.pricing_model) == (provider, it, "on_demand")
        )

    # the hyperscaler premium (AWS p5 at 2.6x the median) and the cheap neoclouds are real prices
    for provider, it in [
        ("aws", "p5.48xlarge"),
        ("lambda", "gpu_8x_h100_sxm5"),
        ("hyperbolic", "2x-H100-149-1443"),
    ]:
        assert not codes(od(provider, it)), (provider, it, FLAGS.get(od(provider, it).id))
    flagged = {r.provider for r in ALL if r.id in FLAGS and r.pricing_model == "on_demand"}
    assert "lambda" not in flagged and "azure" not in flagged


def test_real_regional_premiums_are_not_outliers_but_a_miscounted_instance_is() -> None:
    ew4 = next(
        r
        for r in ALL
        if (r.provider, r.instance_type, r.region, r.pricing_model)
        == ("gcp", "a3-highgpu-8g", "europe-west4", "on_demand")
    )
    assert not codes(ew4)  # 5.5x the median: GCP's real europe-west4 list price
    p5 = next(
        r
        for r in ALL
        if (r.provider, r.instance_type, r.pricing_model) == ("aws", "p5.48xlarge", "on_demand")
    )
    # the same row with its 8-GPU instance price booked against one GPU
    wrong = PriceRow(
        **{**{f: getattr(p5, f) for f in PriceRow.__slots__}, "id": 10**6, "gpus_per_instance": 1}
    )
    flags = quality.assess([*ALL, wrong])
    assert [s.code for s in flags[wrong.id]] == [quality.FAR_ABOVE_MEDIAN]
    assert "above 6x the median" in flags[wrong.id][0].detail


def test_outliers_need_three_providers() -> None:
    two = [r for r in ALL if r.gpu_slug == "nvidia-rtx-4090" and r.pricing_model == "on_demand"]
    assert {r.provider for r in two} == {"runpod", "vast"}
    assert not any(quality.FAR_BELOW_MEDIAN in codes(r) for r in two)


def test_suspect_rows_never_decide_the_cheapest_unless_allowed() -> None:
    q = BOOK.rent("nvidia-h200-sxm", 8, OD)
    assert q is not None and q.provider != "mithril" and not q.suspect
    allowed = BOOK.rent("nvidia-h200-sxm", 8, CostAssumptions(allow_suspect=True))
    assert (
        allowed is not None and allowed.provider == "mithril" and allowed.per_gpu_hour == pytest.approx(1.0)
    )
    assert allowed.suspect and "suspect_price" in allowed.notes
    assert all(q.provider != "mithril" for q in BOOK.cheapest_by_provider("nvidia-h100-sxm", OD))


def test_shipped_rows_state_their_age_is_a_lower_bound() -> None:
    q = BOOK.rent("nvidia-h100-sxm", 8, OD)
    assert q is not None and q.age_is_lower_bound and "price_age_lower_bound" in q.notes


def test_one_node_of_eight_a100_is_one_eight_gpu_instance_never_three_rentals() -> None:
    shape = DeployShape(gpus_per_node=8, nodes=1, needs_gpu_link=True)
    p = BOOK.rent_shape("nvidia-a100-sxm4-80gb", shape, OD)
    assert isinstance(p, ShapePrice)
    assert p.quote.instances == 1 and p.quote.gpus_per_instance >= 8
    assert p.network.intra_node == "nvlink" and p.network.gpu_link_gpus >= 8
    # the old rule would have taken RunPod's 3-GPU shape three times (cheaper per GPU-hour)
    old = BOOK.rent("nvidia-a100-sxm4-80gb", 8, OD)
    assert old is not None and old.instance_type == "3x_A100-80GB-SXM_SECURE" and old.instances == 3


def test_tensor_parallel_pairs_never_land_on_single_gpu_instances() -> None:
    for slug in ("nvidia-h100-sxm", "nvidia-a100-sxm4-80gb", "nvidia-b200"):
        for tp in (2, 4):
            p = BOOK.rent_shape(slug, DeployShape(tp, 1, needs_gpu_link=True), OD)
            assert isinstance(p, ShapePrice), (slug, tp, p)
            assert p.quote.gpus_per_instance >= tp and p.quote.instances == 1
            assert p.network.gpu_link_gpus >= tp


def test_pcie_cards_without_stated_bridges_do_not_count_as_nvlinked() -> None:
    p = BOOK.rent_shape("nvidia-a100-pcie-80gb", DeployShape(8, 1, needs_gpu_link=True), OD)
    assert isinstance(p, NoMatchingInstance) and p.reason == NO_MATCHING_INSTANCE
    assert "NVLink" in p.detail
    # the same cards without a link requirement (data parallel over PCIe) are sold in 8s
    q = BOOK.rent_shape("nvidia-a100-pcie-80gb", DeployShape(8, 1), OD)
    assert isinstance(q, ShapePrice) and q.quote.gpus_per_instance == 8


def test_multi_node_only_on_types_with_a_stated_network() -> None:
    p = BOOK.rent_shape("nvidia-h100-sxm", DeployShape(8, 2, needs_gpu_link=True), OD)
    assert isinstance(p, ShapePrice)
    assert (p.quote.provider, p.quote.instance_type, p.quote.instances) == ("aws", "p5.48xlarge", 2)
    assert p.network.inter_node_gbps == 3200 and p.network.rdma == "efa" and p.network.inter_basis == "table"
    # B200 is sold in 8s by several providers, none with a network stated in the sources read
    b = BOOK.rent_shape("nvidia-b200", DeployShape(8, 2, needs_gpu_link=True), OD)
    assert isinstance(b, NoMatchingInstance) and "inter-node network" in b.detail


def test_only_suspect_rows_holding_a_shape_say_so() -> None:
    rows = {"x": [r for r in ROWS["nvidia-h200-sxm"] if r.provider == "mithril"]}
    book = PriceBook.build(rows | {"y": ROWS["nvidia-h100-sxm"]}, [], today=TODAY, links=LINKS)
    p = book.rent_shape("x", DeployShape(8, 1), OD)
    assert isinstance(p, NoMatchingInstance) and p.suspect_only and "allow_suspect_prices" in p.detail


def test_the_per_gpu_hour_floor_is_below_every_shape_price() -> None:
    """RunPod's 3 x A100 80 GB at 1.59 per GPU-hour is the lowest rate; 8 GPUs rented in whole
    3-GPU instances pay for 9, so rent(8)/8 (1.79) is above it and is no lower bound."""
    floor = BOOK.min_gpu_hour("nvidia-a100-sxm4-80gb", OD)
    assert floor == pytest.approx(1.59)
    eight = BOOK.rent("nvidia-a100-sxm4-80gb", 8, OD)
    assert eight is not None and eight.per_hour / 8 > floor
    for n in (1, 2, 3, 4, 8):
        p = BOOK.rent_shape("nvidia-a100-sxm4-80gb", DeployShape(n, 1, needs_gpu_link=n > 1), OD)
        if isinstance(p, ShapePrice):
            assert p.quote.per_hour / n >= floor - 1e-12
