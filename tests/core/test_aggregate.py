"""Pure statistics and rules behind benchmark aggregates: quantiles, the MAD test with its
floor, latest-measured selection, provenance, catalog quarantine checks."""

from __future__ import annotations

import datetime as dt

import pytest

from service.core.catalog.specs import GpuSpec
from service.core.evidence.aggregate import (
    Point,
    center_and_scale,
    choose_fingerprint,
    fingerprint_stats,
    latest_measured,
    outlier_verdicts,
    quantile,
    summarise,
)
from service.core.evidence.quarantine import (
    ABOVE_CATALOG_PEAK,
    ABOVE_USABLE_MEMORY,
    effective_state,
    in_outlier_baseline,
    static_findings,
)

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def test_type7_quantiles_match_numpy() -> None:
    xs = [1.0, 2.0, 3.0, 4.0, 10.0]
    assert quantile(xs, 0.5) == 3.0
    assert quantile(xs, 0.1) == pytest.approx(1.4)  # numpy.percentile(xs, 10)
    assert quantile(xs, 0.9) == pytest.approx(7.6)
    assert quantile([5.0], 0.9) == 5.0
    s = summarise([4.0, 1.0, 3.0, 2.0])
    assert s is not None and (s.count, s.median, s.min, s.max) == (4, 2.5, 1.0, 4.0)
    assert summarise([]) is None
    with pytest.raises(ValueError):
        quantile([], 0.5)


def test_mad_scale_and_floor() -> None:
    m, scale = center_and_scale([10.0, 11.0, 12.0, 13.0, 100.0], floor_fraction=0.0)
    assert m == 12.0 and scale == pytest.approx(1.4826)  # MAD = 1
    m, scale = center_and_scale([100.0, 100.0, 100.0], floor_fraction=0.05)
    assert (m, scale) == (100.0, 5.0)  # MAD 0: the floor, 5% of the median


def test_outlier_verdicts() -> None:
    v = outlier_verdicts([10.0, 11.0, 12.0, 13.0, 100.0], threshold=5.0, floor_fraction=0.05)
    assert [x.outlier for x in v] == [False, False, False, False, True]
    assert v[-1].score == pytest.approx(88 / 1.4826)
    assert "scaled MADs" in v[-1].describe(100.0, "throughput", "images/s")
    # two points can never be told apart; identical repeats with a 2% wobble stay in
    assert not any(x.outlier for x in outlier_verdicts([1.0, 100.0], threshold=5.0, floor_fraction=0.05))
    assert not any(
        x.outlier for x in outlier_verdicts([100.0, 100.0, 100.0, 102.0], threshold=5.0, floor_fraction=0.05)
    )
    assert outlier_verdicts([], threshold=5.0, floor_fraction=0.05) == []


def _p(
    fp: str,
    v: float | None,
    *,
    day: int,
    host: str = "h1",
    status: str = "ok",
    q: bool = False,
    trusted: bool = False,
) -> Point:
    return Point(
        result_id=day * 100 + int(v or 0),
        fingerprint_hash=fp,
        host=host,
        trusted=trusted,
        status=status,
        quarantined=q,
        measured_at=T0 + dt.timedelta(days=day),
        metrics={"throughput": v} if v is not None else {},
    )


def test_latest_measured_rule() -> None:
    old = [_p("old", v, day=1) for v in (10.0, 11.0, 12.0, 13.0)]
    new = [_p("new", v, day=5) for v in (20.0, 21.0)]
    v = latest_measured(old + new, k=3)
    assert (v.fingerprint_hash, v.thin, v.count) == ("old", False, 4)
    assert v.metrics["throughput"].median == 11.5
    assert [o.fingerprint_hash for o in v.other_fingerprints] == ["new"]
    v = latest_measured([*old, *new, _p("new", 22.0, day=6)], k=3)
    assert (v.fingerprint_hash, v.thin, v.count) == ("new", False, 3)
    # nobody has k: the best-populated, thin
    v = latest_measured(old + new, k=10)
    assert (v.fingerprint_hash, v.thin) == ("old", True)
    # quarantined and non-ok results do not count towards k
    v = latest_measured(
        [*new, _p("new", 99.0, day=7, q=True), _p("new", None, day=7, status="oom"), *old], k=3
    )
    assert v.fingerprint_hash == "old"
    # only OOMs: the cell says so
    v = latest_measured([_p("x", None, day=1, status="oom"), _p("x", None, day=2, status="oom")], k=3)
    assert (v.count, v.oom_count_all_fingerprints, v.thin, v.provenance_code) == (
        0,
        2,
        True,
        "no_usable_results",
    )


def test_choose_fingerprint_ties_break_on_recency() -> None:
    stats = fingerprint_stats([_p("a", 1.0, day=1), _p("b", 1.0, day=2)])
    assert choose_fingerprint(stats, k=1)[0].fingerprint_hash == "b"
    with pytest.raises(ValueError):
        choose_fingerprint([], k=1)


def test_provenance() -> None:
    one = latest_measured([_p("a", v, day=1) for v in (1.0, 2.0, 3.0)], k=3)
    assert (one.provenance, one.provenance_code) == (None, "single_untrusted_host")
    two = latest_measured([_p("a", 1.0, day=1), _p("a", 2.0, day=1, host="h2")], k=3)
    assert (two.provenance, two.provenance_code, two.host_count) == ("measured", "multiple_hosts", 2)
    tr = latest_measured([_p("a", 1.0, day=1, trusted=True)], k=3)
    assert (tr.provenance, tr.provenance_code) == ("measured", "trusted_agent")
    # a quarantined second host does not count
    q = latest_measured([_p("a", 1.0, day=1), _p("a", 2.0, day=1, host="h2", q=True)], k=3)
    assert q.provenance is None


SPEC = GpuSpec(
    slug="test-gpu",
    vendor="nvidia",
    name="Test",
    architecture=None,
    form_factor="sxm",
    memory_bytes=None,
    usable_memory_bytes=80 * 2**30,
    bandwidth_gb_per_s=3000.0,
    tdp_w=None,
    compute_capability=None,
    peaks={"bf16": 900.0, "int8": 1800.0},
)


def test_static_findings() -> None:
    assert static_findings("gemm", {"precision": "bf16"}, {"tflops": 899.0}, {}, SPEC) == []
    (f,) = static_findings("gemm", {"precision": "amp_bf16"}, {"tflops": 901.0}, {}, SPEC)
    assert f.reason == ABOVE_CATALOG_PEAK and "900 TFLOP/s" in f.detail
    assert (
        static_findings("gemm", {"precision": "int8"}, {"tops": 1900.0}, {}, SPEC)[0].reason
        == ABOVE_CATALOG_PEAK
    )
    assert static_findings("gemm", {"precision": "fp8"}, {"tflops": 5000.0}, {}, SPEC) == []  # unknown peak
    assert (
        static_findings("memory-bandwidth", {}, {"bandwidth_gb_per_s": 3100.0}, {}, SPEC)[0].reason
        == ABOVE_CATALOG_PEAK
    )
    assert static_findings("llm-train", {}, {"mfu": 1.2}, {}, SPEC)[0].reason == ABOVE_CATALOG_PEAK
    mem = static_findings(
        "resnet50-train", {}, {}, {"peak_reserved_bytes": 81 * 2**30, "nvml_used_bytes": None}, SPEC
    )
    assert [x.reason for x in mem] == [ABOVE_USABLE_MEMORY]


def test_effective_state_precedence() -> None:
    kw = {"check_reason": ABOVE_CATALOG_PEAK, "check_detail": "d", "outlier_detail": "o"}
    assert effective_state(**kw, review_state=None, review_reason=None).reason == ABOVE_CATALOG_PEAK
    assert effective_state(**kw, review_state="released", review_reason="ok").quarantined is False
    st = effective_state(
        check_reason=None,
        check_detail=None,
        outlier_detail=None,
        review_state="quarantined",
        review_reason="why",
    )
    assert (st.quarantined, st.reason, st.detail) == (True, "admin", "why")
    st = effective_state(
        check_reason=None, check_detail=None, outlier_detail="o", review_state=None, review_reason=None
    )
    assert st.reason == "statistical_outlier"
    assert in_outlier_baseline("ok", None, None, False)
    assert not in_outlier_baseline("ok", ABOVE_CATALOG_PEAK, None, False)
    assert in_outlier_baseline("ok", ABOVE_CATALOG_PEAK, "released", False)
    assert not in_outlier_baseline("ok", None, None, True)
    assert not in_outlier_baseline("oom", None, None, False)


def test_window_summarises_the_newest_results_of_each_stack() -> None:
    """The rule over materialised stack summaries equals the rule over raw points, and the
    figures come from the newest N non-quarantined results only."""
    from service.core.evidence.aggregate import summarise_stack, view_of

    pts = [_p("a", float(v), day=v) for v in range(1, 11)] + [_p("a", 500.0, day=11, q=True)]
    full = latest_measured(pts, k=3)
    assert full.count == 10 and full.metrics["throughput"].median == 5.5
    last3 = latest_measured(pts, k=3, window=3)
    assert last3.count == 3 and last3.metrics["throughput"].median == 9.0
    assert last3.quarantined_count == 1  # stored after the window's oldest result
    stacks = [summarise_stack([p for p in pts if p.fingerprint_hash == "a"], 3)]
    assert view_of(stacks, 3) == last3


def test_stack_document_round_trip() -> None:
    from service.core.evidence.aggregate import stack_from_doc, stack_to_doc, summarise_stack

    s = summarise_stack([_p("a", float(v), day=v, host=f"h{v % 2}") for v in range(1, 6)], 4)
    assert stack_from_doc(stack_to_doc(s)) == s
    import json

    assert stack_from_doc(json.loads(json.dumps(stack_to_doc(s)))) == s
