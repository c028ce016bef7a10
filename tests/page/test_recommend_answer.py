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
    """While the API answers, Submit is disabled and says so; when the answer comes it is
    scrolled into view. The request is held until the busy state has been read, then let go:
    no sleep, so the check cannot race the answer however loaded the machine is."""
    held: list[Any] = []

    def hold(route: Any) -> None:
        held.append(route)

    page.set_viewport_size({"width": 390, "height": 844})
    open_view(page, served, "#/recommend")
    page.route("**/v1/recommend", hold)
    submit = page.locator('form.recommend-form button[type="submit"]')
    submit.click()
    page.wait_for_function("() => document.querySelector('form.recommend-form button[type=submit]').disabled")
    deadline = time.monotonic() + 30
    while not held and time.monotonic() < deadline:  # the route handler runs on Playwright's events
        page.wait_for_timeout(20)
    assert len(held) == 1, "the form asked the API once"
    assert submit.is_disabled() and submit.inner_text() == "Asking…"
    assert page.locator("form.recommend-form").get_attribute("aria-busy") == "true"
    held[0].continue_()
    page.wait_for_selector(".recommend-result")
    assert submit.is_enabled() and submit.inner_text() == "Submit"
    top = page.evaluate("() => document.querySelector('.recommend-result').getBoundingClientRect().top")
    assert -5 <= top < 200, "the answer is scrolled into view"


def test_recommend_can_ask_buy_with_the_tco_inputs(page: Any, served: Served) -> None:
    """Issue 29, item 12: the purchase budget and TCO inputs the API takes are on the form, and
    each option says what owning would cost (or why it cannot)."""
    open_view(page, served, "#/recommend")
    page.get_by_label("Budget to buy the GPUs (USD)").fill("500000")
    page.get_by_label("Utilisation of owned GPUs (0–1)").fill("0.5")
    page.get_by_label("Electricity (USD per kWh)").fill("0.2")
    assert page.locator('[data-field="cost.amortisation_years"] .field-hint').inner_text() == "API default: 5"
    page.get_by_role("button", name="Submit").click()
    page.wait_for_selector(".recommend-result")
    rid = page.locator(".recommend-result").get_attribute("data-recommendation-id")
    answer = httpx.get(f"{served.url}/v1/recommendations/{rid}", timeout=30).json()
    assert answer["asked"]["constraints"]["budget"]["purchase"] == 500000
    assert (
        answer["asked"]["cost"]["utilisation"] == 0.5
        and answer["asked"]["cost"]["electricity_usd_per_kwh"] == 0.2
    )
    for card, option in zip(page.locator("article.option").all(), answer["options"], strict=True):
        tco = (option.get("cost") or {}).get("tco")
        if not tco:
            continue
        shown = card.locator("dd.tco").inner_text()
        if tco["available"]:
            assert shown.startswith(f"{tco['per_hour']:,.2f} {tco['currency']}/h")
            assert tco["assumptions"]["utilisation"] == 0.5
        else:
            assert shown == f"not available ({tco['reason']})"
    assert_accessible(page)


def test_options_compare_per_gpu_whatever_most_gpus_allowed(page: Any, served: Served) -> None:
    """Item 12: with "Most GPUs" 8 the options are whole nodes of each GPU; a per-GPU table
    divides each option's throughput and price by the GPUs it uses, so cards compare."""
    answer = _ask(served, WIDE)
    options = answer["options"]
    open_view(page, served, f"#/recommend?id={answer['recommendation_id']}")
    table = page.locator("table.per-gpu")
    table.wait_for()
    assert table.locator("caption").inner_text() == "Per GPU: each option divided by the GPUs it uses"
    rows = table.locator("tbody tr")
    assert rows.count() == len(options) > 1
    for i, o in enumerate(options):
        row = rows.nth(i)
        n = o["strategy"]["gpu_count"]
        assert row.get_attribute("data-gpu") == o["gpu"]["slug"]
        assert row.locator("td").first.inner_text() == str(n)
        tps = o["training"]["tokens_per_s"] / n
        assert row.locator(".per-gpu-tps").inner_text() == f"{tps:,.0f} tokens/s"
        cost = o.get("cost") or {}
        if cost.get("per_hour") is not None:
            per = cost["per_hour"] / (cost.get("gpus_paid") or n)
            two = f"{per:,.2f}".rstrip("0").rstrip(".")  # Intl: at most 2 digits
            assert row.locator(".per-gpu-price").inner_text() == f"{two} {cost['currency']}/h"
    assert any(o["strategy"]["gpu_count"] > 1 for o in options)  # what made cards hard to compare
    assert_accessible(page)


def test_a_family_name_in_the_allowed_list_says_which_variants_it_matched(page: Any, served: Served) -> None:
    """Item 8: "A100" in the allowed list keeps matching all four variants (the API considers
    each), and the page lists them (the candidates of GET /v1/gpus/A100)."""
    body = {
        "workload": {"model": "llama3-8b", "mode": "fine-tuning", "batch_size": 1, "seq_len": 2048},
        "constraints": {"allowed_gpus": ["A100", "L40"], "max_gpus": 1},
        "objective": "cheapest",
    }
    answer = _ask(served, body)
    family = httpx.get(f"{served.url}/v1/gpus/A100", timeout=30)
    assert family.status_code == 300
    names = [c["name"] for c in family.json()["candidates"]]
    slugs = {c["slug"] for c in family.json()["candidates"]}
    considered = {o["gpu"]["slug"] for o in answer["options"]} | {
        e["gpu"]["slug"] for e in answer["excluded"] if e["code"] != "NOT_ALLOWED"
    }
    assert slugs <= considered, "every variant is an option or excluded for a reason of its own"
    open_view(page, served, f"#/recommend?id={answer['recommendation_id']}")
    item = page.locator('.allowed-matches li[data-name="A100"]')
    item.wait_for()
    assert item.inner_text() == f"only A100 → {len(names)}: {', '.join(names)}"
    assert page.locator(".allowed-matches li").count() == 1  # L40 is one GPU
    assert_accessible(page)


def test_the_form_shows_the_apis_defaults(page: Any, served: Served) -> None:
    """Item 11: the serving defaults (input and output tokens) and the other defaults the API
    states are on the form, read from the served schema."""
    doc = httpx.get(f"{served.url}/openapi.json", timeout=30).json()["components"]["schemas"]
    workload, constraints = doc["WorkloadIn"]["properties"], doc["ConstraintsIn"]["properties"]
    open_view(page, served, "#/recommend")
    page.get_by_label("Job").select_option("inference")

    def hint(name: str) -> str:
        return str(page.locator(f'[data-field="{name}"] .field-hint').inner_text())

    assert (
        hint("workload.input_len")
        == f"API default: {workload['input_len']['default']}"
        == "API default: 1024"
    )
    assert (
        hint("workload.output_len")
        == f"API default: {workload['output_len']['default']}"
        == "API default: 256"
    )
    assert hint("constraints.max_gpus") == f"API default: {constraints['max_gpus']['default']}"
    assert hint("constraints.allowed_gpus") == constraints["allowed_gpus"]["description"]
    assert hint("constraints.allow_gradient_checkpointing") == "API default: yes"
    assert_accessible(page)


def test_a_family_name_in_the_excluded_list_excludes_every_variant(page: Any, served: Served) -> None:
    """Item 8, the other list: "Never these GPUs" on the form; "A100" there rules out all four
    variants, and the answer says which it matched."""
    open_view(page, served, "#/recommend")
    page.get_by_label("Never these GPUs (comma-separated)").fill("A100")
    page.get_by_role("button", name="Submit").click()
    page.wait_for_selector(".recommend-result")
    rid = page.locator(".recommend-result").get_attribute("data-recommendation-id")
    answer = httpx.get(f"{served.url}/v1/recommendations/{rid}", timeout=30).json()
    assert answer["asked"]["constraints"]["excluded_gpus"] == ["A100"]
    family = httpx.get(f"{served.url}/v1/gpus/A100", timeout=30).json()["candidates"]
    slugs = {c["slug"] for c in family}
    assert not slugs & {o["gpu"]["slug"] for o in answer["options"]}
    item = page.locator('.allowed-matches li[data-list="excluded"]')
    item.wait_for()
    assert item.inner_text() == f"never A100 → {len(family)}: {', '.join(c['name'] for c in family)}"
    # the shared link restores the field
    page.goto(f"{served.url}/#/recommend?id={rid}")
    page.wait_for_selector("main:not([aria-busy]) .recommend-result")
    assert page.get_by_label("Never these GPUs (comma-separated)").input_value() == "A100"


def test_recommend_asks_with_the_2026_serving_inputs(page: Any, served: Served) -> None:
    """Issue 28: prefix caching, speculative decoding, LoRA and the two layout switches are on
    the form (inference only), reach the API as nested fields, and an option names its layout
    and its price per million input and output tokens."""
    open_view(page, served, "#/recommend")
    page.get_by_label("Job", exact=True).select_option("inference")
    page.get_by_label("Model").fill("meta-llama/Llama-3.1-8B")
    page.get_by_label("Serving engine").select_option("vllm")
    page.get_by_label("Input tokens").fill("4096")
    page.get_by_label("Output tokens").fill("256")
    page.get_by_label("Requests per second").fill("30")
    page.get_by_label("TTFT target").fill("1000")
    page.get_by_label("TPOT target").fill("20")
    page.get_by_label("Prefix cache hit rate (0–1)").fill("0.5")
    page.get_by_label("LoRA adapters served").fill("4")
    page.get_by_label("LoRA adapters resident at once").fill("4")
    page.get_by_label("May use expert parallelism (MoE)").uncheck()
    page.get_by_label("Most GPUs").fill("16")
    page.get_by_label("Only these GPUs").fill("nvidia-h100-sxm")
    page.get_by_role("button", name="Submit").click()
    page.wait_for_selector(".recommend-result")
    rid = page.locator(".recommend-result").get_attribute("data-recommendation-id")
    answer = httpx.get(f"{served.url}/v1/recommendations/{rid}", timeout=30).json()
    w = answer["asked"]["workload"]
    assert w["prefix_cache_hit_rate"] == 0.5 and w["lora"]["adapters"] == 4 and w["lora"]["max_loras"] == 4
    assert w.get("speculative") is None  # method left off: no speculative fields sent
    assert answer["asked"]["constraints"]["allow_expert_parallel"] is False
    assert answer["asked"]["constraints"]["allow_disaggregation"] is True  # checked: the API's default
    first, card = answer["options"][0], page.locator("article.option").first
    pools = first["strategy"]["disaggregated"]  # 30 req/s of long prompts, TPOT <= 20 ms: split pools
    assert f"prefill {pools['prefill_gpus']} + decode {pools['decode_gpus']} GPU" in card.inner_text()
    assert f"{first['cost']['per_million_input']:,.3f} in / " in card.inner_text()
    # the shared link restores the switches and the nested fields
    open_view(page, served, f"#/recommend?id={rid}")
    page.wait_for_selector(".recommend-result")
    assert not page.get_by_label("May use expert parallelism (MoE)").is_checked()
    assert page.get_by_label("May split prefill and decode into separate pools").is_checked()
    assert page.get_by_label("LoRA adapters served").input_value() == "4"
    assert_accessible(page)
