"""How Recommend's answer reads (issue 29, items 3, 5, 7, 12): how many feasible GPUs there are
and a control for the rest; the excluded GPUs grouped by reason with "not allowed" folded and
the what-ifs above them; a shared link that restores the whole question; Submit disabled while
the API answers."""

from __future__ import annotations

import time
from typing import Any

import httpx

from tests.page.conftest import Served, assert_accessible
from tests.page.test_views import open_view

WIDE = {
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


def _ask(served: Served, body: dict[str, Any]) -> dict[str, Any]:
    r = httpx.post(f"{served.url}/v1/recommend", json=body, timeout=180)
    assert r.status_code in (200, 201), r.text
    return dict(r.json())


def test_the_answer_says_how_many_are_feasible_and_shows_the_rest(page: Any, served: Served) -> None:
    answer = _ask(served, WIDE)
    feasible, unsized = answer["considered"]["feasible"], len(answer["considered"]["not_ranked"])
    assert len(answer["options"]) == 5 < feasible, "more feasible GPUs than the default limit"
    open_view(page, served, f"#/recommend?id={answer['recommendation_id']}")
    note = page.locator(".shown-of-feasible").inner_text()
    assert note.startswith(f"5 of {feasible} feasible GPUs shown.")
    if unsized:
        assert f"{unsized} more not sized" in note
    limit = min(feasible + unsized, 50)
    page.get_by_role("button", name=f"Show up to {limit}").click()
    page.wait_for_function("() => document.querySelectorAll('article.option').length > 5")
    more = httpx.get(f"{served.url}/v1/recommendations/" + page.url.split("id=")[1], timeout=30).json()
    assert more["asked"]["limit"] == limit and more["asked"]["workload"]["tokens"] == 1e8
    assert (
        page.locator("article.option").count()
        == len(more["options"])
        == min(limit, more["considered"]["feasible"])
    )
    shown = page.locator(".shown-of-feasible").inner_text()
    assert shown.startswith(
        f"{len(more['options'])} of {more['considered']['feasible']} feasible GPUs shown."
    )
    assert [a.get_attribute("data-gpu") for a in page.locator("article.option").all()] == [
        o["gpu"]["slug"] for o in more["options"]
    ]
    assert_accessible(page)


def test_excluded_gpus_are_grouped_with_not_allowed_folded_after_the_what_ifs(
    page: Any, served: Served
) -> None:
    body = {
        "workload": {
            "model": "llama2-13b",
            "mode": "fine-tuning",
            "finetune": "full",
            "batch_size": 1,
            "seq_len": 2048,
        },
        "constraints": {"allowed_gpus": ["L40", "L20", "RTX 4090", "nvidia-a100-pcie-40gb"], "max_gpus": 1},
    }
    answer = _ask(served, body)
    codes = {e["code"] for e in answer["excluded"]}
    assert "NOT_ALLOWED" in codes and len(codes) >= 2
    open_view(page, served, f"#/recommend?id={answer['recommendation_id']}")
    headings = page.locator(".recommend-result h2").all_inner_texts()
    if answer["what_if"]:
        assert headings.index("What if") < headings.index("Excluded GPUs")
    if not answer["options"]:
        assert "No GPU meets this question" in page.locator(".nothing-fits").inner_text()
        assert "None" not in page.locator(".recommend-result").inner_text().split()
    groups = page.locator("table.excluded tbody[data-code]")
    relevant = [g.get_attribute("data-code") for g in groups.all()]
    assert "NOT_ALLOWED" not in relevant and set(relevant) == codes - {"NOT_ALLOWED"}
    for code in relevant:
        rows = page.locator(f'table.excluded tbody[data-code="{code}"] tr[data-gpu]')
        n = sum(1 for e in answer["excluded"] if e["code"] == code)
        assert rows.count() == n
        assert page.locator(f'tbody[data-code="{code}"] tr.group').inner_text() == f"{code} ({n})"
    folded = page.locator("details.excluded-other")
    not_allowed = sum(1 for e in answer["excluded"] if e["code"] == "NOT_ALLOWED")
    assert folded.get_attribute("open") is None
    assert folded.locator("summary").inner_text() == f"Not in the allowed list ({not_allowed})"
    assert not folded.locator("tr[data-gpu]").first.is_visible()
    folded.locator("summary").click()
    assert folded.locator("tr[data-gpu]").count() == not_allowed
    assert_accessible(page)


def test_a_shared_link_restores_the_whole_question(page: Any, served: Served) -> None:
    body = {
        "workload": {
            "model": "llama3-8b",
            "mode": "fine-tuning",
            "batch_size": 2,
            "seq_len": 1024,
            "tokens": 5e8,
        },
        "constraints": {
            "allowed_gpus": ["L40", "H100 SXM"],
            "max_gpus": 4,
            "budget": {"per_hour": 40, "currency": "USD"},
            "max_power_w_per_gpu": 700,
        },
        "objective": "cheapest",
        "cost": {"utilisation": 0.5, "pricing_models": ["on_demand", "spot"]},
        "limit": 3,
    }
    answer = _ask(served, body)
    rid = answer["recommendation_id"]
    open_view(page, served, f"#/recommend?id={rid}")
    page.wait_for_selector(".recommend-result")
    assert page.get_by_label("Only these GPUs (comma-separated)").input_value() == "L40, H100 SXM"
    assert page.get_by_label("Budget per hour (USD)").input_value() == "40"
    assert page.get_by_label("Most GPUs").input_value() == "4"
    assert page.get_by_label("Objective").input_value() == "cheapest"
    assert page.get_by_label("Tokens to train on").input_value() == "500000000"
    # asking again from the restored form asks the same question: the same stored answer
    page.get_by_role("button", name="Submit").click()
    page.wait_for_function(
        "rid => document.querySelector('.recommend-result')?.dataset.recommendationId === rid "
        "&& !document.querySelector('form.recommend-form').hasAttribute('aria-busy')",
        arg=rid,
    )
    assert page.url.endswith(f"id={rid}")


def test_submit_is_disabled_while_asking_and_the_answer_is_scrolled_to(page: Any, served: Served) -> None:
    def slow(route: Any) -> None:
        time.sleep(1.5)
        route.continue_()

    page.set_viewport_size({"width": 390, "height": 844})
    open_view(page, served, "#/recommend")
    page.route("**/v1/recommend", slow)
    submit = page.locator('form.recommend-form button[type="submit"]')
    submit.click()
    page.wait_for_function("() => document.querySelector('form.recommend-form button[type=submit]').disabled")
    assert submit.inner_text() == "Asking…"
    page.wait_for_selector(".recommend-result")
    assert submit.is_enabled() and submit.inner_text() == "Submit"
    top = page.evaluate("() => document.querySelector('.recommend-result').getBoundingClientRect().top")
    assert -5 <= top < 200, "the answer is scrolled into view"
