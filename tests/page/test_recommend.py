"""The Recommend view in a real browser against POST /v1/recommend and
GET /v1/recommendations/{id} on the real app."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from tests.page.conftest import PageProblems, Served, assert_accessible, new_page
from tests.page.test_views import open_view

QUESTION = {
    "workload": {
        "model": "llama3-8b",
        "mode": "fine-tuning",
        "precision": "bf16",
        "batch_size": 1,
        "seq_len": 2048,
        "tokens": 100000000,
    },
    "constraints": {"max_gpus": 8},
    "objective": "fastest",
}


@pytest.fixture(scope="module")
def recommend_available(served: Served) -> None:
    paths = httpx.get(f"{served.url}/openapi.json", timeout=30).json()["paths"]
    assert "/v1/recommend" in paths and "/v1/recommendations/{recommendation_id}" in paths, sorted(paths)


def fill_question(page: Any) -> None:
    page.get_by_label("Model (preset or Hugging Face id)").fill("llama3-8b")
    page.get_by_label("Job", exact=True).select_option("fine-tuning")
    page.get_by_label("Precision").select_option("bf16")
    page.get_by_label("Batch size (per GPU)").fill("1")
    page.get_by_label("Sequence length").fill("2048")
    page.get_by_label("Tokens to train on").fill("100000000")
    page.get_by_label("Most GPUs").fill("8")
    page.get_by_label("Objective").select_option("fastest")


def test_recommend_round_trip_shows_ranked_options_and_the_frontier(
    page: Any, served: Served, recommend_available: None
) -> None:
    open_view(page, served, "#/recommend")
    fill_question(page)
    page.get_by_role("button", name="Submit").click()
    page.wait_for_selector(".recommend-result")
    rid = page.locator(".recommend-result").get_attribute("data-recommendation-id")
    assert rid and re.fullmatch(r"rec_[0-9a-f]{24}", rid)
    answer = httpx.get(f"{served.url}/v1/recommendations/{rid}", timeout=30).json()
    # ranked options, in the API's order, each with its reasons
    cards = page.locator("article.option")
    assert cards.count() == len(answer["options"]) >= 1
    for card, option in zip(cards.all(), answer["options"], strict=True):
        assert card.get_attribute("data-rank") == str(option["rank"])
        assert card.get_attribute("data-gpu") == option["gpu"]["slug"]
        assert card.locator("ul.reasons li").all_inner_texts() == [r["message"] for r in option["reasons"]]
    # the frontier as a chart: one point per frontier point, joined, with error bars
    assert answer["frontier"], "the answer has a time-vs-cost frontier"
    chart = page.locator("figure.chart svg")
    assert chart.locator("g.point.on-frontier").count() == len(answer["frontier"])
    if len(answer["frontier"]) > 1:
        assert chart.locator("polyline.frontier-line").count() == 1
    assert chart.locator("g.point .whisker").count() >= 1
    # excluded GPUs with their reasons
    excluded = page.locator("table.excluded tbody tr[data-gpu]")
    assert excluded.count() == len(answer["excluded"])
    first = answer["excluded"][0]
    assert (
        first["message"]
        in page.locator(f'table.excluded tr[data-gpu="{first["gpu"]["slug"]}"]').first.inner_text()
    )
    # the URL is the shareable link
    assert page.url.endswith(f"#/recommend?id={rid}")
    assert page.locator(".share-link").inner_text() == page.url
    assert_accessible(page)


def test_the_shared_link_reproduces_the_answer_and_the_hint_copies(
    page: Any, served: Served, recommend_available: None, browser: Any
) -> None:
    r = httpx.post(f"{served.url}/v1/recommend", json=QUESTION, timeout=120)
    assert r.status_code in (200, 201), r.text
    answer = r.json()
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    open_view(page, served, f"#/recommend?id={answer['recommendation_id']}")
    page.wait_for_selector(".recommend-result")
    shown = [
        (c.get_attribute("data-rank"), c.get_attribute("data-gpu"))
        for c in page.locator("article.option").all()
    ]
    assert shown == [(str(o["rank"]), o["gpu"]["slug"]) for o in answer["options"]]
    assert page.get_by_label("Model (preset or Hugging Face id)").input_value() == "llama3-8b"
    assert page.get_by_label("Job", exact=True).input_value() == "fine-tuning"
    first = page.locator("article.option").first
    hint = first.locator("pre.hint").inner_text()
    assert "#SBATCH" in hint or "nodeSelector" in hint
    first.locator(".scheduling button.copy").click()
    page.wait_for_function(
        "() => document.querySelector('article.option .scheduling button.copy').textContent === 'Copied'"
    )
    assert page.evaluate("() => navigator.clipboard.readText()") == hint


def test_an_option_shows_its_deployment_file_ready_to_copy(
    page: Any, served: Served, recommend_available: None
) -> None:
    """Issue 30: each option's card fetches the full artifact of its target from the artifacts
    route (the text the API gives, byte for byte), with its FILL-IN list and a copy button."""
    r = httpx.post(f"{served.url}/v1/recommend", json=QUESTION, timeout=120)
    assert r.status_code in (200, 201), r.text
    answer = r.json()
    rid = answer["recommendation_id"]
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    open_view(page, served, f"#/recommend?id={rid}")
    page.wait_for_selector(".recommend-result")
    second = page.locator("article.option").nth(1 if len(answer["options"]) > 1 else 0)
    rank = second.get_attribute("data-rank")
    for target in ("kubernetes", "slurm"):
        second.locator(f'.artifact-targets button[data-target="{target}"]').click()
        shown = second.locator(f'pre.artifact[data-target="{target}"]')
        shown.wait_for()
        api = httpx.get(
            f"{served.url}/v1/recommendations/{rid}/artifacts",
            params={"target": target, "option": rank},
            timeout=60,
        ).json()
        assert shown.inner_text().rstrip("\n") == api["content"].rstrip("\n")
        assert second.locator("ul.fill-in li").all_inner_texts() == api["fill_in"]
    second.locator(".artifacts button.copy").click()
    page.wait_for_function(
        "(el) => el.querySelector('.artifacts button.copy').textContent === 'Copied'",
        arg=second.element_handle(),
    )
    assert page.evaluate("() => navigator.clipboard.readText()") == api["content"]
    assert_accessible(page)


def test_a_bad_recommend_input_shows_the_apis_problem_next_to_the_field(
    page: Any, served: Served, recommend_available: None, problems: PageProblems
) -> None:
    problems.expect_status(422)
    open_view(page, served, "#/recommend")
    fill_question(page)
    page.get_by_label("Batch size (per GPU)").fill("0")
    page.get_by_role("button", name="Submit").click()
    err = page.locator('[data-field="workload.batch_size"] .field-error')
    err.wait_for()
    bad = {**QUESTION, "workload": {**QUESTION["workload"], "batch_size": 0}}
    problem = httpx.post(f"{served.url}/v1/recommend", json=bad, timeout=60).json()
    (expected,) = [e["msg"] for e in problem["errors"] if e["loc"] == ["body", "workload", "batch_size"]]
    assert err.inner_text() == expected
    assert page.get_by_label("Batch size (per GPU)").get_attribute("aria-invalid") == "true"
    assert page.locator(".recommend-result").count() == 0


def test_reasons_come_in_the_browsers_language(
    browser: Any, served: Served, recommend_available: None
) -> None:
    problems = PageProblems()
    zh = new_page(browser, problems, locale="zh-CN")
    try:
        open_view(zh, served, "#/recommend")
        assert zh.locator("main h1").inner_text() == "GPU 推荐"
        zh.locator("form.recommend-form button[type=submit]").click()
        zh.wait_for_selector(".recommend-result")
        reasons = " ".join(zh.locator("ul.reasons li").all_inner_texts())
        assert re.search(r"[\u4e00-\u9fff]", reasons), reasons
    finally:
        zh.context.close()
    assert problems.errors == [] and problems.dialogs == []
