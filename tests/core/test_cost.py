"""core.pricing.cost: rent from instance shapes, run cost, cost per token, TCO. Every expected figure
is computed by hand from the rows written here."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from service.core.catalog.records import FxRate, PriceRow
from service.core.errors import InvalidConfiguration
from service.core.pricing.cost import (
    CURRENCY_CONVERTED,
    HOST_NOT_INCLUDED,
    HOURS_PER_YEAR,
    MULTI_INSTANCE,
    NO_POWER_FIGURE,
    NO_PURCHASE_PRICE,
    PAYS_FOR_IDLE_GPUS,
    SPOT_INTERRUPTIBLE,
    STALE_PRICE,
    CostAssumptions,
    PriceBook,
    cost_per_million_tokens,
    run_cost,
    tco,
    tco_exclusion,
)

TODAY = dt.date(2027, 1, 10)
_ids = iter(range(1, 10_000))


def row(
    slug: str,
    provider: str,
    instance: str,
    gpus: int,
    amount: str,
    *,
    model: str = "on_demand",
    currency: str = "USD",
    date: dt.date = dt.date(2027, 1, 1),
    region: str = "r1",
) -> PriceRow:
    return PriceRow(
        id=next(_ids),
        gpu_slug=slug,
        provider=provider,
        region=region,
        instance_type=instance,
        gpus_per_instance=gpus,
        pricing_model=model,
        currency=currency,
        amount=Decimal(amount),
        effective_date=date,
        source=f"test {provider}",
        is_estimate=False,
        origin="catalog",
    )


RATES = (
    FxRate("USD", "CNY", Decimal("7.0"), dt.date(2026, 1, 1), "test parity"),
    FxRate("USD", "CNY", Decimal("8.0"), dt.date(2024, 1, 1), "older parity"),
)


def book(*rows: PriceRow, rates: tuple[FxRate, ...] = RATES) -> PriceBook:
    by: dict[str, list[PriceRow]] = {}
    for r in rows:
        by.setdefault(r.gpu_slug, []).append(r)
    return PriceBook.build(by, rates, today=TODAY)


USD = CostAssumptions()


def test_one_gpu_on_an_eight_gpu_only_shape_pays_for_eight_and_says_so() -> None:
    b = book(row("h", "aws", "p5.48xlarge", 8, "55.04"))
    q = b.rent("h", 1, USD)
    assert q is not None
    assert (q.instances, q.gpus_paid, q.gpus_per_instance) == (1, 8, 8)
    assert q.per_hour == pytest.approx(55.04)
    assert q.per_gpu_hour == pytest.approx(55.04)  # the whole instance, for the one GPU used
    assert q.per_paid_gpu_hour == pytest.approx(6.88)
    assert PAYS_FOR_IDLE_GPUS in q.notes
    full = b.rent("h", 8, USD)
    assert (
        full is not None and full.per_gpu_hour == pytest.approx(6.88) and PAYS_FOR_IDLE_GPUS not in full.notes
    )


def test_cheapest_shape_covering_the_count_in_whole_instances() -> None:
    b = book(
        row("g", "c1", "one", 1, "2.00"),  # 1 GPU: 3 x 2.00 = 6.00 for 3 GPUs
        row("g", "c2", "four", 4, "7.00"),  # 4 GPUs: 7.00 for 3 GPUs (one idle)
        row("g", "c3", "two", 2, "3.10"),  # 2 GPUs: 2 x 3.10 = 6.20
    )
    q = b.rent("g", 3, USD)
    assert q is not None and (q.provider, q.instances, q.gpus_paid) == ("c1", 3, 3)
    assert q.per_hour == pytest.approx(6.00) and q.per_gpu_hour == pytest.approx(2.00)
    assert MULTI_INSTANCE in q.notes and PAYS_FOR_IDLE_GPUS not in q.notes
    q4 = b.rent("g", 4, USD)  # 4 x 2.00 = 8.00 vs 7.00 vs 6.20
    assert q4 is not None and (q4.provider, q4.instances, q4.per_hour) == ("c3", 2, pytest.approx(6.20))
    q5 = b.rent("g", 5, USD)  # 10.00 vs 14.00 vs 3 x 3.10 = 9.30 (one idle)
    assert q5 is not None and q5.provider == "c3" and q5.gpus_paid == 6 and q5.per_hour == pytest.approx(9.30)
    assert PAYS_FOR_IDLE_GPUS in q5.notes


def test_providers_filter() -> None:
    b = book(row("g", "cheap", "a", 1, "1.00"), row("g", "dear", "b", 1, "3.00"))
    q = b.rent("g", 1, CostAssumptions(providers=frozenset({"dear"})))
    assert q is not None and q.provider == "dear" and q.per_hour == pytest.approx(3.00)
    assert b.rent("g", 1, CostAssumptions(providers=frozenset({"nowhere"}))) is None


def test_spot_is_opt_in() -> None:
    b = book(row("g", "c", "a", 1, "4.00"), row("g", "c", "a", 1, "1.50", model="spot"))
    q = b.rent("g", 1, USD)
    assert q is not None and q.pricing_model == "on_demand" and q.per_hour == pytest.approx(4.00)
    q2 = b.rent("g", 1, CostAssumptions(pricing_models=("on_demand", "spot")))
    assert q2 is not None and q2.pricing_model == "spot" and q2.per_hour == pytest.approx(1.50)
    assert SPOT_INTERRUPTIBLE in q2.notes
    only_spot = book(row("s", "c", "a", 1, "1.00", model="spot"))
    assert only_spot.rent("s", 1, USD) is None


def test_stale_flag_by_age() -> None:
    old = dt.date(2026, 1, 1)  # 374 days before TODAY
    b = book(row("g", "c", "a", 1, "1.00", date=old))
    q = b.rent("g", 1, USD)
    assert q is not None and q.age_days == 374 and q.stale and STALE_PRICE in q.notes
    q2 = b.rent("g", 1, CostAssumptions(stale_after_days=400))
    assert q2 is not None and not q2.stale and STALE_PRICE not in q2.notes


def test_at_equal_price_the_fresher_row_wins() -> None:
    b = book(row("g", "a-old", "x", 1, "1.00", date=dt.date(2025, 1, 1)), row("g", "b-new", "y", 1, "1.00"))
    q = b.rent("g", 1, USD)
    assert q is not None and q.provider == "b-new" and not q.stale


def test_cny_conversion_at_the_rows_date() -> None:
    # a 2027 row converts at the 2026 rate (newest on or before its date): 2.00 USD = 14.00 CNY
    b = book(row("g", "c", "a", 1, "2.00"))
    q = b.rent("g", 1, CostAssumptions(currency="CNY"))
    assert q is not None and q.currency == "CNY" and q.per_hour == pytest.approx(14.00)
    assert q.fx_date == dt.date(2026, 1, 1) and CURRENCY_CONVERTED in q.notes
    # a 2025 row converts at the 2024 rate: 2.00 USD = 16.00 CNY
    b2 = book(row("g", "c", "a", 1, "2.00", date=dt.date(2025, 6, 1)))
    q2 = b2.rent("g", 1, CostAssumptions(currency="CNY"))
    assert q2 is not None and q2.per_hour == pytest.approx(16.00) and q2.fx_date == dt.date(2024, 1, 1)
    # a CNY row quoted in USD: the inverse rate
    b3 = book(row("g", "cn", "a", 1, "70.00", currency="CNY"))
    q3 = b3.rent("g", 1, USD)
    assert q3 is not None and q3.per_hour == pytest.approx(10.00)
    # no rate: not quoted in the other currency, never guessed
    b4 = book(row("g", "c", "a", 1, "2.00"), rates=())
    assert b4.rent("g", 1, CostAssumptions(currency="CNY")) is None
    assert b4.rent("g", 1, USD) is not None


def test_cheapest_by_provider_uses_the_per_gpu_rate_of_whole_shapes() -> None:
    b = book(
        row("g", "aws", "big", 8, "16.00"),  # 2.00 per GPU-hour
        row("g", "aws", "small", 1, "2.50"),
        row("g", "lambda", "one", 1, "1.80"),
        row("g", "lambda", "one", 1, "0.90", model="spot"),
    )
    quotes = b.cheapest_by_provider("g", USD)
    assert [(q.provider, q.instance_type, round(q.per_gpu_hour, 4)) for q in quotes] == [
        ("lambda", "one", 1.8),
        ("aws", "big", 2.0),
    ]
    assert all(PAYS_FOR_IDLE_GPUS not in q.notes for q in quotes)
    assert b.cheapest_by_provider("unpriced", USD) == ()


def test_no_price_is_none_never_invented() -> None:
    b = book(row("a", "c", "x", 1, "1.00"))
    assert b.rent("sibling-of-a", 1, USD) is None
    assert b.purchase("a") is None
    assert tco(b, "a", gpu_count=1, tdp_w=300, assumptions=USD) is None
    assert tco_exclusion(b, "a", tdp_w=300) == NO_PURCHASE_PRICE


def test_run_cost_band_follows_the_time_band() -> None:
    q = book(row("g", "c", "a", 2, "3.00")).rent("g", 2, USD)
    assert q is not None
    rc = run_cost(q, 10.0, hours_low=8.0, hours_high=13.0)
    assert (rc.amount, rc.low, rc.high, rc.currency) == (
        pytest.approx(30.0),
        pytest.approx(24.0),
        pytest.approx(39.0),
        "USD",
    )
    assert run_cost(q, 2.0).low == run_cost(q, 2.0).high == pytest.approx(6.0)
    with pytest.raises(InvalidConfiguration):
        run_cost(q, 10.0, hours_low=11.0)


def test_cost_per_million_tokens_charges_idle_capacity() -> None:
    # 3.60 per hour at 1,000 tokens/s served: 3.6e6 tokens per hour -> 1.00 per million
    assert cost_per_million_tokens(
        3.60, capacity_tokens_per_s=1000, served_tokens_per_s=1000
    ) == pytest.approx(1.0)
    # the same hour at a quarter of the load: four times as much per token
    assert cost_per_million_tokens(
        3.60, capacity_tokens_per_s=1000, served_tokens_per_s=250
    ) == pytest.approx(4.0)
    with pytest.raises(InvalidConfiguration) as e:
        cost_per_million_tokens(3.60, capacity_tokens_per_s=1000, served_tokens_per_s=1500)
    assert e.value.field == "served_tokens_per_s"
    with pytest.raises(InvalidConfiguration):
        cost_per_million_tokens(3.60, capacity_tokens_per_s=1000, served_tokens_per_s=0)


SIMPLE = CostAssumptions(
    utilisation=0.5,
    pue=1.5,
    electricity_usd_per_kwh=0.10,
    amortisation_years=1.0,
    node_overhead_fraction=0.25,
    host_power_fraction=0.0,
)


def test_tco_per_card_with_tdp_power() -> None:
    b = book(row("card", "global", "card", 1, "8766", model="purchase"))
    t = tco(b, "card", gpu_count=2, tdp_w=400, assumptions=SIMPLE, hours=10, hours_low=5, hours_high=20)
    assert t is not None
    # capex 2 x 8766 over 1 year (8766 h) = 2.00 per wall-clock hour; / utilisation 0.5 = 4.00
    assert t.capex == pytest.approx(2 * 8766) and t.capex_per_hour == pytest.approx(4.0)
    # energy 2 x 400 W x PUE 1.5 = 1.2 kW x 0.10 = 0.12 per hour
    assert t.power_source == "tdp" and t.power_w == 400 and t.energy_kw == pytest.approx(1.2)
    assert t.energy_per_hour == pytest.approx(0.12)
    assert t.per_hour == pytest.approx(4.12) and t.per_gpu_hour == pytest.approx(2.06)
    assert t.run is not None and (t.run.amount, t.run.low, t.run.high) == (
        pytest.approx(41.2),
        pytest.approx(20.6),
        pytest.approx(82.4),
    )
    assert HOST_NOT_INCLUDED in t.notes and not t.per_node
    assert t.price_row_ids == (b.purchases["card"].price_row_id,)


def test_tco_power_source_measured_beats_tdp() -> None:
    b = book(row("card", "global", "card", 1, "8766", model="purchase"))
    t = tco(b, "card", gpu_count=1, tdp_w=400, avg_power_w=250, assumptions=SIMPLE)
    assert t is not None and t.power_source == "measured" and t.power_w == 250
    assert t.energy_per_hour == pytest.approx(0.25 * 1.5 * 0.10)
    assert tco_exclusion(b, "card", tdp_w=None) == NO_POWER_FIGURE
    assert tco(b, "card", gpu_count=1, tdp_w=None, assumptions=SIMPLE) is None
    assert tco(b, "card", gpu_count=1, tdp_w=None, avg_power_w=250, assumptions=SIMPLE) is not None


def test_tco_per_node_part_buys_whole_nodes_with_host_overhead() -> None:
    b = book(row("oam", "global", "8-OAM kit", 8, "125000", model="purchase"))
    t = tco(b, "oam", gpu_count=1, tdp_w=900, assumptions=SIMPLE)
    assert t is not None and t.per_node and (t.units, t.gpus_paid) == (1, 8)
    assert t.capex == pytest.approx(125000 * 1.25)
    assert t.capex_per_hour == pytest.approx(125000 * 1.25 / HOURS_PER_YEAR / 0.5)
    assert PAYS_FOR_IDLE_GPUS in t.notes and HOST_NOT_INCLUDED not in t.notes
    t9 = tco(b, "oam", gpu_count=9, tdp_w=900, assumptions=SIMPLE)
    assert t9 is not None and (t9.units, t9.gpus_paid) == (2, 16)


def test_tco_host_power_and_defaults_are_applied() -> None:
    b = book(row("card", "global", "card", 1, "1000", model="purchase", date=dt.date(2022, 9, 20)))
    t = tco(b, "card", gpu_count=1, tdp_w=450, assumptions=CostAssumptions())
    assert t is not None
    a = CostAssumptions()
    assert t.energy_kw == pytest.approx(0.450 * (1 + a.host_power_fraction) * a.pue)
    assert t.capex_per_hour == pytest.approx(1000 / (a.amortisation_years * HOURS_PER_YEAR) / a.utilisation)
    assert t.stale and STALE_PRICE in t.notes and t.age_days == (TODAY - dt.date(2022, 9, 20)).days


def test_tco_in_cny_converts_purchase_and_electricity() -> None:
    b = book(row("card", "global", "card", 1, "8766", model="purchase"))
    t = tco(
        b,
        "card",
        gpu_count=1,
        tdp_w=1000,
        assumptions=CostAssumptions(
            currency="CNY",
            utilisation=1.0,
            pue=1.0,
            amortisation_years=1.0,
            host_power_fraction=0.0,
            electricity_usd_per_kwh=0.10,
        ),
    )
    assert t is not None and t.currency == "CNY"
    # 8766 USD -> 61,362 CNY (rate 7.0 at the row's date) over 8766 h = 7.00; 1 kW x 0.10 USD x 7.0 = 0.70
    assert t.capex_per_hour == pytest.approx(7.0) and t.energy_per_hour == pytest.approx(0.70)


def test_newest_purchase_row_is_used() -> None:
    old = row("c", "global", "card", 1, "2000", model="purchase", date=dt.date(2023, 1, 1))
    new = row("c", "global", "card", 1, "1500", model="purchase", date=dt.date(2025, 1, 1))
    p = book(old, new).purchase("c")
    assert p is not None and p.amount == 1500 and p.price_row_id == new.id


def test_assumptions_are_checked_naming_the_field() -> None:
    for kwargs, name in [
        ({"currency": "EUR"}, "currency"),
        ({"pricing_models": ("purchase",)}, "pricing_models"),
        ({"pricing_models": ()}, "pricing_models"),
        ({"utilisation": 0.0}, "utilisation"),
        ({"pue": 0.9}, "pue"),
        ({"amortisation_years": 0}, "amortisation_years"),
    ]:
        with pytest.raises(InvalidConfiguration) as e:
            CostAssumptions(**kwargs)  # type: ignore[arg-type]
        assert e.value.field == name


def test_the_book_memoises_and_answers_fast() -> None:
    rows = [row(f"g{i % 40}", f"p{i % 7}", f"t{i}", 1 + i % 8, f"{1 + i % 13}.25") for i in range(2000)]
    b = book(*rows)
    import time

    t0 = time.perf_counter()
    for _ in range(5):
        for i in range(40):
            for n in (1, 2, 4, 8, 16):
                b.rent(f"g{i}", n, USD)
    per_call_us = (time.perf_counter() - t0) / (5 * 40 * 5) * 1e6
    assert b.rent("g1", 8, USD) is b.rent("g1", 8, USD)
    # 50 rows per GPU, cold: a few microseconds a row on a slow shared core; memoised after
    assert per_call_us < 1000, per_call_us
    t0 = time.perf_counter()
    for i in range(40):
        b.rent(f"g{i}", 8, USD)
    assert (time.perf_counter() - t0) / 40 * 1e6 < 50


def test_the_memo_is_bounded_however_many_distinct_questions_come() -> None:
    """A book lives a day; every distinct cost assumption is a new memo key. Past the bound the
    memo starts over, and answers stay the same."""
    from dataclasses import replace as _replace

    from service.core.pricing.memo import MEMO_ENTRIES

    b = book(row("h", "aws", "p5.48xlarge", 8, "55.04"))
    first = b.rent("h", 8, USD)
    for i in range(MEMO_ENTRIES + 50):
        b.rent("h", 8, _replace(USD, stale_after_days=1 + i))
        assert len(b._memo) <= MEMO_ENTRIES
    again = b.rent("h", 8, USD)
    assert again is not None and first is not None and again.per_hour == first.per_hour
