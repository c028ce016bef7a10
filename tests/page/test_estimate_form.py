"""Estimate offers every field POST /v1/estimate takes, grouped, with the API's defaults shown
(issue 29, item 1 and the serving defaults of item 11), and an ambiguous GPU name offers the
candidates (item 8). What the page shows is checked against what the API answers."""

from __future__ import annotations

from typing import Any

import httpx

from tests.page.conftest import PageProblems, Served, assert_accessible, new_page
from tests.page.test_views import open_view


def _schema_fields(served: Served) -> tuple[set[str], dict[str, Any]]:
    doc = httpx.get(f"{served.url}/openapi.json", timeout=30).json()
    props = doc["components"]["schemas"]["EstimateRequest"]["properties"]
    names: set[str] = set()
    for name, prop in props.items():
        ref = next((b["$ref"] for b in prop.get("anyOf", []) if "$ref" in b), None)
        if ref and name != "hf_config":
            inner = doc["components"]["schemas"][ref.rsplit("/", 1)[1]]["properties"]
            names |= {f"{name}.{k}" for k in inner}
        else:
            names.add(name)
    return names, props


def _fields(page: Any) -> list[str]:
    return page.locator("form.estimate-form [data-field]").evaluate_all(
        "els => els.map(e => e.dataset.field)"
    )


def test_the_form_offers_every_field_of_the_request_grouped_with_its_default(
    page: Any, served: Served
) -> None:
    open_view(page, served, "#/estimate")
    names, props = _schema_fields(served)
    assert len(names) > 40
    assert sorted(_fields(page)) == sorted(names)  # every field, each once
    legends = page.locator("form.estimate-form fieldset > legend").all_inner_texts()
    assert legends == ["Job", "Parallelism", "Serving load"]
    assert page.locator("form.estimate-form details.advanced > summary").inner_text() == "Advanced"
    # every field has a label in words in both languages, never the API's key
    labels = page.evaluate(
        """async () => { const f = await import('/static/views/estimate_form.js');
             const i = await import('/static/i18n.js');
             return Object.fromEntries(Object.entries(f.LABELS).map(([k, key]) =>
               [k, [i.STRINGS.en[key] ?? null, i.STRINGS.zh[key] ?? null]])); }"""
    )
    assert set(labels) == names
    assert all(en and zh and en != zh for en, zh in labels.values()), labels
    # the serving defaults are shown (the API's 1024 / 256), as the hint and the value
    page.get_by_label("Job").select_option("inference")
    for label, key in [
        ("Input tokens", "input_len"),
        ("Output tokens", "output_len"),
        ("Tensor parallel", "tensor_parallel"),
    ]:
        control = page.get_by_label(label)
        default = props[key]["default"]
        assert control.input_value() == str(default)
        hint = page.locator(f'[data-field="{key}"] .field-hint').inner_text()
        assert hint == f"API default: {default}"
    assert "(default)" in page.locator('[data-field="kv_cache_dtype"] option:checked').inner_text()
    assert page.get_by_label("Sharding (DDP / FSDP / ZeRO)").is_hidden()  # a training field
    assert (
        page.locator('[data-field="sharding"] .field-hint').inner_text() == props["sharding"]["description"]
    )
    assert_accessible(page)


def _verdict(page: Any) -> Any:
    page.wait_for_selector("main:not([aria-busy]) .estimate-result")
    return page.locator(".memory .verdict")


def test_a_13b_full_fine_tune_on_four_l40_fits_with_fsdp(page: Any, served: Served) -> None:
    """The question Recommend answered and Estimate could not ask: with DDP the 13B full fine-tune
    does not fit on 48 GB cards, with FSDP over four it does."""
    open_view(page, served, "#/estimate")
    page.get_by_label("Model (preset or Hugging Face id)").fill("llama2-13b")
    page.get_by_label("GPU (any name the catalog resolves)").fill("L40")
    page.get_by_label("GPU count").fill("4")
    page.get_by_label("Job").select_option("fine-tuning")
    page.get_by_label("Fine-tuning method").select_option("full")
    page.get_by_label("Gradient checkpointing").uncheck()
    page.get_by_role("button", name="Submit").click()
    ddp = httpx.post(
        f"{served.url}/v1/estimate",
        json={"model": "llama2-13b", "gpu": "L40", "gpu_count": 4, "mode": "fine-tuning", "finetune": "full"},
        timeout=30,
    ).json()
    assert ddp["memory"]["fits"] is False
    assert _verdict(page).inner_text().startswith("Does not fit")
    page.get_by_label("Sharding (DDP / FSDP / ZeRO)").select_option("fsdp")
    page.get_by_role("button", name="Submit").click()
    page.wait_for_function("() => location.hash.includes('sharding=fsdp')")
    fsdp = httpx.post(
        f"{served.url}/v1/estimate",
        json={
            "model": "llama2-13b",
            "gpu": "L40",
            "gpu_count": 4,
            "mode": "fine-tuning",
            "finetune": "full",
            "sharding": "fsdp",
        },
        timeout=30,
    ).json()
    assert fsdp["memory"]["fits"] is True
    page.wait_for_selector('.memory .verdict[data-fits="true"]')
    assert _verdict(page).inner_text().startswith("Fits")
    curl = page.locator(".api-example code").text_content()
    assert '"sharding":"fsdp"' in curl and '"gpu_count":4' in curl
    assert '"input_len"' not in curl  # a serving field is not sent for a fine-tune


def test_a_72b_serving_estimate_with_tensor_parallel_and_a_request_rate(page: Any, served: Served) -> None:
    query = (
        "model=qwen2.5-72b&gpu=nvidia-h100-sxm5-80gb&mode=inference&engine=vllm&gpu_count=4&tensor_parallel=4"
    )
    open_view(page, served, f"#/estimate?{query}")
    page.wait_for_selector(".result-block.serving")
    assert page.get_by_label("Tensor parallel").input_value() == "4"
    facts = dict(
        zip(
            page.locator(".serving dt").all_inner_texts(),
            page.locator(".serving dd").all_inner_texts(),
            strict=True,
        )
    )
    assert facts["Serving engine"] == "vllm, TP4 × 1"
    # the same at 20 requests/s, solving for the fewest GPUs
    page.get_by_label("Requests per second").fill("20")
    page.get_by_label("Solve for").select_option("min_gpus")
    page.get_by_role("button", name="Submit").click()
    page.wait_for_selector("main:not([aria-busy]) .estimate-result p.solve")
    body = {
        "model": "qwen2.5-72b",
        "gpu": "nvidia-h100-sxm5-80gb",
        "mode": "inference",
        "engine": "vllm",
        "gpu_count": 4,
        "tensor_parallel": 4,
        "requests_per_s": 20,
        "solve_for": "min_gpus",
    }
    solve = httpx.post(f"{served.url}/v1/estimate", json=body, timeout=30).json()["solve"]
    assert page.locator("p.solve").inner_text() == f"min_gpus: {solve['value']} — {solve['detail']}"
    assert "requests_per_s=20" in page.url and "solve_for=min_gpus" in page.url
    assert_accessible(page)


def test_an_ambiguous_gpu_name_offers_the_candidates(
    page: Any, served: Served, problems: PageProblems
) -> None:
    """ "A100" names four GPUs: the API assumes its default and says so; the page lists the four
    (from GET /v1/gpus/A100's 300) and asks again with the one picked."""
    problems.expect_status(300)
    candidates = httpx.get(f"{served.url}/v1/gpus/A100", timeout=30)
    assert candidates.status_code == 300
    slugs = [c["slug"] for c in candidates.json()["candidates"]]
    open_view(page, served, "#/estimate?model=llama3-8b&gpu=A100&mode=inference")
    page.wait_for_selector(".ambiguous")
    buttons = page.locator(".ambiguous ul.candidates button")
    assert [b.get_attribute("data-slug") for b in buttons.all()] == slugs and len(slugs) == 4
    # the warning in words (its code kept as data), not the bare code
    warning = page.locator("ul.warnings li[data-code=assumed_variant]")
    assert "names 4 GPUs" in warning.inner_text() and "assumed_variant" not in warning.inner_text()
    page.locator('.ambiguous button[data-slug="nvidia-a100-sxm4-80gb"]').click()
    page.wait_for_function("() => location.hash.includes('gpu=nvidia-a100-sxm4-80gb')")
    page.wait_for_selector("main:not([aria-busy]) .estimate-result")
    page.wait_for_function("() => !document.querySelector('.ambiguous')")
    assert "NVIDIA A100 80GB SXM4" in page.locator(".estimate-result .lede").inner_text()


def test_the_form_speaks_chinese(browser: Any, served: Served) -> None:
    problems = PageProblems()
    page = new_page(browser, problems, locale="zh-CN")
    try:
        page.goto(f"{served.url}/#/estimate")
        page.wait_for_selector("form.estimate-form")
        legends = page.locator("form.estimate-form fieldset > legend").all_inner_texts()
        assert legends == ["任务", "并行", "服务负载"]
        assert page.locator("details.advanced > summary").inner_text() == "高级"
        assert page.get_by_label("张量并行").input_value() == "1"
        assert page.locator('[data-field="tensor_parallel"] .field-hint').inner_text() == "API 默认值: 1"
    finally:
        page.context.close()
    assert problems.errors == []


def test_a_refused_new_field_shows_the_apis_message_beside_it(
    page: Any, served: Served, problems: PageProblems
) -> None:
    problems.expect_status(422)
    body = {"model": "llama3-8b", "gpu": "L40", "mode": "inference", "engine": "vllm", "tensor_parallel": 0}
    api = httpx.post(f"{served.url}/v1/estimate", json=body, timeout=30)
    assert api.status_code == 422
    msg = next(e["msg"] for e in api.json()["errors"] if e["loc"][-1] == "tensor_parallel")
    open_view(page, served, "#/estimate?" + "&".join(f"{k}={v}" for k, v in body.items()))
    err = page.locator('[data-field="tensor_parallel"] .field-error')
    err.wait_for()
    assert err.inner_text() == msg
    assert page.get_by_label("Tensor parallel").get_attribute("aria-invalid") == "true"
    assert page.locator(".estimate-result").count() == 0
