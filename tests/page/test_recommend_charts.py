"""Recommend's time-vs-cost chart states units that match its data (issue 29, item 2): read
from the page, the axis labels name the units the API states for the frontier (time_unit,
cost_unit), and every point sits where its value falls between the axis's own tick labels."""

from __future__ import annotations

import math
from typing import Any

import httpx
import pytest

from tests.api.test_recommend_serving_2026 import LLAMA70_SPLIT_POOLS
from tests.page.conftest import Served, assert_accessible
from tests.page.test_views import open_view

SERVING = {
    "workload": {
        "model": "llama3-8b",
        "mode": "inference",
        "engine": "vllm",
        "input_len": 1024,
        "output_len": 256,
        "requests_per_s": 2,
    },
    "constraints": {
        "allowed_gpus": ["L40", "L40S", "H100 SXM", "nvidia-a100-sxm4-80gb", "RTX 4090"],
        "max_gpus": 4,
    },
    "objective": "cheapest",
}
SPLIT = LLAMA70_SPLIT_POOLS  # its frontier holds a disaggregated MI300X point
TRAINING = {
    "workload": {
        "model": "llama3-8b",
        "mode": "fine-tuning",
        "batch_size": 1,
        "seq_len": 2048,
        "tokens": 1e8,
    },
    "constraints": {"max_gpus": 8},
    "objective": "fastest",
}


def _number(label: str) -> float:
    return float(label.replace(",", "").replace("\u2212", "-"))


def _value_at(ticks: list[tuple[float, float]], px: float) -> float:
    """The data value at pixel ``px`` from the tick labels' values and positions: a linear axis
    when the labels are evenly spaced in value, else a log axis (evenly spaced in log value)."""
    (v0, p0), (v1, p1) = ticks[0], ticks[-1]
    linear = all(
        math.isclose((v - v0) / (v1 - v0), (p - p0) / (p1 - p0), rel_tol=1e-3, abs_tol=1e-6) for v, p in ticks
    )
    if linear:
        return v0 + (px - p0) * (v1 - v0) / (p1 - p0)
    l0, l1 = math.log(v0), math.log(v1)
    return math.exp(l0 + (px - p0) * (l1 - l0) / (p1 - p0))


def _axis(chart: Any) -> dict[str, Any]:
    return chart.evaluate(
        """svg => {
          const ax = svg.querySelector('g.axes');
          const base = Number(ax.querySelector('line.axis').getAttribute('y1'));
          const labels = [...ax.querySelectorAll('text.tick-label')];
          const xs = labels.filter(t => t.getAttribute('text-anchor') === 'middle')
            .map(t => [t.textContent, Number(t.getAttribute('x'))]);
          const ys = labels.filter(t => t.getAttribute('text-anchor') === 'end')
            .map(t => [t.textContent, Number(t.getAttribute('y')) - 4]);
          const names = [...ax.querySelectorAll('text.axis-label')].map(t => t.textContent);
          const points = [...svg.querySelectorAll('g.point circle')].map(c => [Number(c.getAttribute('cx')), Number(c.getAttribute('cy'))]);
          const labels_ = [...svg.querySelectorAll('g.point text.point-label')].map(t => t.textContent);
          const tips = [...svg.querySelectorAll('g.point circle title')].map(t => t.textContent);
          return {xs, ys, names, points, labels: labels_, tips, left: Number(ax.querySelector('line.axis').getAttribute('x1'))};
        }"""
    )


def _layout(p: dict[str, Any]) -> str:
    """A point's plan as the page should label it: TP (EP for spread experts) x replicas, the two
    pools where prefill and decode are split, the sharding when training."""
    if p["replicas"] is None:
        return str(p["sharding"])
    tp = f"{'EP' if p['expert_parallel'] else 'TP'}{p['tensor_parallel']}"
    pools = p["disaggregated"]
    return f"{tp} P{pools['prefill_gpus']}+D{pools['decode_gpus']}" if pools else f"{tp}×{p['replicas']}"


@pytest.mark.parametrize("question", [SERVING, SPLIT, TRAINING], ids=["serving", "split-pools", "training"])
def test_frontier_axes_name_the_units_and_points_sit_at_their_values(
    page: Any, served: Served, question: dict[str, Any]
) -> None:
    r = httpx.post(f"{served.url}/v1/recommend", json=question, timeout=180)
    assert r.status_code in (200, 201), r.text
    answer = r.json()
    frontier = answer["frontier"]
    assert frontier, "the question has a frontier"
    open_view(page, served, f"#/recommend?id={answer['recommendation_id']}")
    page.wait_for_selector(".recommend-result figure.chart svg")
    ax = _axis(page.locator(".recommend-result figure.chart svg").first)
    x_name, y_name = ax["names"]
    time_unit, cost_unit = frontier[0]["time_unit"], frontier[0]["cost_unit"]
    if question is not TRAINING:
        assert time_unit == "s TPOT" and x_name == "TPOT (ms)"
        scale = 1000.0  # the API states TPOT in s; the axis says ms, so the points are drawn in ms
    else:
        assert time_unit == "h" and x_name == "Time to train (h)"
        scale = 1.0
    assert y_name == f"Cost ({cost_unit.replace('/', ' / ')})"
    if question is not TRAINING:
        assert cost_unit in ("USD/1M tokens", "USD/h"), "serving has no run cost"
    xt = [(_number(t), p) for t, p in ax["xs"]]
    yt = [(_number(t), p) for t, p in ax["ys"]]
    assert len(xt) >= 2 and len(yt) >= 2
    drawn = sorted(ax["points"])
    expected = sorted((p["time_value"] * scale, p["cost_value"]) for p in frontier)
    assert len(drawn) == len(expected)
    for (cx, cy), (tx, cy_value) in zip(drawn, expected, strict=True):
        assert _value_at(xt, cx) == pytest.approx(tx, rel=0.02, abs=1e-6)
        assert _value_at(yt, cy) == pytest.approx(cy_value, rel=0.02, abs=1e-6)
        assert cx > ax["left"] + 2, "no point on the y axis's tick labels"
    # each point names its plan (two points of one GPU count are different plans) and, in its
    # tooltip, the rentable shape it is priced on
    plans = [_layout(p) for p in frontier]
    assert all(plans), frontier
    if question is SPLIT:
        assert any(" P" in plan and "+D" in plan for plan in plans), plans
    assert sorted(ax["labels"]) == sorted(
        f"{p['gpu']} ×{p['gpu_count']} · {plan}" for p, plan in zip(frontier, plans, strict=True)
    )
    for p in frontier:
        if p["instance_type"]:
            assert any(f"({p['provider']} {p['instance_type']}" in tip for tip in ax["tips"]), ax["tips"]
    assert_accessible(page)
