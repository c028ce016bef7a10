"""The Estimate, Data and GPU views in a real browser, on the real app and database."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from tests.api.benchmark_fixtures import fingerprint, gpu_document, new_pci, result, run
from tests.page.conftest import PageProblems, Served, assert_accessible, new_page

XSS = "<img src=x onerror=alert(1)>"
L40_PCI = "0x26b5"
L40_USABLE = 46_068 * 2**20


def open_view(page: Any, served: Served, hash_: str) -> Any:
    """Load the page at a view and wait until the view has rendered (or shown its problem)."""
    page.goto(f"{served.url}/{hash_}")
    page.wait_for_selector("main:not([aria-busy]) > section.view, main:not([aria-busy]) > .problem")
    return page


@pytest.mark.parametrize(
    "hash_, heading",
    [
        ("#/estimate", "Estimate one configuration"),
        ("#/data", "Measurement coverage"),
        ("#/gpus", "GPU catalog"),
        ("#/gpus/nvidia-l40", "NVIDIA L40"),
    ],
)
def test_each_view_loads_without_console_errors(page: Any, served: Served, hash_: str, heading: str) -> None:
    open_view(page, served, hash_)
    assert page.locator("main h1").first.inner_text() == heading
    assert page.locator("main .problem").count() == 0
    assert page.locator(f'nav a[aria-current="page"][data-view="{hash_.split("/")[1]}"]').count() == 1
    assert_accessible(page)
    # the page fixture fails the test on any console error, uncaught exception or dialog


def test_estimate_round_trip_draws_memory_against_usable_memory(page: Any, served: Served) -> None:
    open_view(page, served, "#/estimate")
    page.get_by_label("Model (preset or Hugging Face id)").fill("llama3-8b")
    page.get_by_label("GPU (any name the catalog resolves)").fill("L40")
    page.get_by_label("Job").select_option("fine-tuning")
    page.get_by_label("Batch size (per GPU)").fill("1")
    page.get_by_label("Sequence length").fill("2048")
    page.get_by_label("Gradient checkpointing").check()
    page.get_by_role("button", name="Submit").click()
    page.wait_for_selector(".estimate-result")
    api = httpx.post(
        f"{served.url}/v1/estimate",
        json={
            "model": "llama3-8b",
            "gpu": "L40",
            "mode": "fine-tuning",
            "batch_size": 1,
            "seq_len": 2048,
            "gradient_checkpointing": True,
        },
        timeout=30,
    ).json()
    # the stacked bar: one segment per non-zero component (+ slack/context), the usable-memory line
    nonzero = [k for k, v in api["memory"]["components"].items() if v > 0]
    segments = page.locator(".memory svg rect.seg")
    assert segments.count() in (len(nonzero), len(nonzero) + 1)
    assert page.locator(".memory svg line.capacity").count() == 1
    assert page.locator(".memory svg .capacity-label").text_content() == "usable memory 45 GiB"  # 46,068 MiB
    verdict = page.locator(".memory .verdict")
    assert verdict.get_attribute("data-fits") == str(api["memory"]["fits"]).lower()
    legend = page.locator(".memory ul.legend").inner_text()
    assert all(k in legend for k in nonzero)
    # time with band and provenance, as the API answered
    time_text = page.locator(".result-block.time").inner_text()
    assert api["time"]["provenance"] in time_text and "80% band" in time_text
    assert page.locator(".result-block.time .prov").first.inner_text() == api["time"]["provenance"]
    assert_accessible(page)
    # the URL now reproduces the answer
    assert "gpu=L40" in page.url and "mode=fine-tuning" in page.url
    shared = new_page(page.context.browser, PageProblems())
    try:
        shared.goto(page.url)
        shared.wait_for_selector(".estimate-result")
        assert shared.locator(".memory .verdict").inner_text() == verdict.inner_text()
    finally:
        shared.context.close()


def test_estimate_serving_shows_latencies_with_bands(page: Any, served: Served) -> None:
    query = {
        "model": "llama3-8b",
        "gpu": "L20",
        "mode": "inference",
        "engine": "vllm",
        "batch_size": 8,
        "input_len": 7168,
        "output_len": 1024,
    }
    open_view(page, served, "#/estimate?" + "&".join(f"{k}={v}" for k, v in query.items()))
    page.wait_for_selector(".result-block.serving")
    api = httpx.post(f"{served.url}/v1/estimate", json=query, timeout=30).json()["serving"]
    facts = dict(
        zip(
            page.locator(".serving dt").all_inner_texts(),
            page.locator(".serving dd").all_inner_texts(),
            strict=True,
        )
    )
    ttft, band = api["ttft_ms"], api["ttft_band_ms"]

    def one(x: float) -> str:  # Intl.NumberFormat("en", {maximumFractionDigits: 1})
        return f"{x:,.1f}".removesuffix(".0")

    assert (
        facts["Time to first token"]
        == f"{one(ttft)} ms (80% band {one(band['low'])} ms – {one(band['high'])} ms)"
    )
    assert facts["Provenance"].startswith(api["provenance"])
    assert page.get_by_label("Sequence length").is_hidden() and page.get_by_label("Input tokens").is_visible()


def test_a_bad_input_shows_the_apis_problem_next_to_the_field(
    page: Any, served: Served, problems: PageProblems
) -> None:
    problems.expect_status(422)
    open_view(page, served, "#/estimate")
    page.get_by_label("Batch size (per GPU)").fill("0")
    page.get_by_role("button", name="Submit").click()
    err = page.locator('[data-field="batch_size"] .field-error')
    err.wait_for()
    problem = httpx.post(
        f"{served.url}/v1/estimate",
        json={
            "model": "llama3-8b",
            "gpu": "nvidia-l40",
            "gpu_count": 1,
            "mode": "fine-tuning",
            "batch_size": 0,
            "seq_len": 2048,
            "gradient_checkpointing": True,
        },
        timeout=30,
    ).json()
    (expected,) = [e["msg"] for e in problem["errors"] if e["loc"] == ["body", "batch_size"]]
    assert err.inner_text() == expected
    field = page.get_by_label("Batch size (per GPU)")
    assert field.get_attribute("aria-invalid") == "true"
    assert field.evaluate("el => el === document.activeElement")
    assert page.locator(".form-problem .problem").inner_text().startswith(problem["title"])
    assert page.locator(".estimate-result").count() == 0
    assert_accessible(page)
    # a domain refusal names its field too: an unknown GPU
    page.get_by_label("Batch size (per GPU)").fill("1")
    page.get_by_label("GPU (any name the catalog resolves)").fill("no-such-gpu-9000")
    page.get_by_role("button", name="Submit").click()
    gpu_err = page.locator('[data-field="gpu"] .field-error')
    gpu_err.wait_for()
    assert "no-such-gpu-9000" in gpu_err.inner_text()
    assert page.locator('[data-field="batch_size"] .field-error').inner_text() == ""


def test_gpu_view_lists_the_catalog_and_shows_figures_with_provenance(page: Any, served: Served) -> None:
    open_view(page, served, "#/gpus")
    l20 = page.locator('tr[data-slug="nvidia-l20"]')
    assert "48 GB" in l20.inner_text() and "864 GB/s" in l20.inner_text()
    page.get_by_label("Filter by name, slug or architecture").fill("ada")
    assert page.locator('tr[data-slug="nvidia-l40"]').is_visible()
    assert not page.locator('tr[data-slug="nvidia-h200-sxm"]').is_visible()
    page.locator('tr[data-slug="nvidia-l40"] a').click()
    page.wait_for_selector("table.spec")
    rows = {r.locator("th").inner_text(): r for r in page.locator("table.spec tbody tr").all()}
    assert rows["Memory bandwidth"].locator("td").first.inner_text() == "864 GB/s"
    assert rows["Memory bandwidth"].locator(".prov").inner_text() == "datasheet"
    assert rows["Usable memory"].locator(".prov").inner_text() == "measured"


def submit_run(served: Served, results: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    body = run(results, **kw)
    r = served.post("/v1/benchmark-runs", body, served.submit_key)
    assert r.status_code in (200, 201), r.text
    return body


def test_data_view_grid_and_agent_text_is_rendered_inert(page: Any, served: Served) -> None:
    """A result whose host is markup shows as that literal text: no element, no script, no alert."""
    submit_run(
        served,
        [result("gemm", {"precision": "bf16"}, {"tflops": 150.0}, units={"tflops": "TFLOP/s"})] * 3,
        host=XSS,
        pci=L40_PCI,
        gpu_name="NVIDIA L40",
        memory_total=L40_USABLE,
        fp=fingerprint(L40_PCI, host_id="mid-xss", driver_version="<b>550</b>", power_limit_w=300),
        notes="<script>alert(2)</script>",
    )
    open_view(page, served, "#/data")
    grid = page.locator("table.coverage")
    h200 = grid.locator('tr[data-slug="nvidia-h200-sxm"]')
    assert h200.locator('td[data-state="measured"]').count() >= 1, "the shipped H200 measurements"
    assert grid.locator('td[data-state="missing"]').count() > 0
    page.locator('button.cell-button[data-gpu="nvidia-l40"][data-workload="gemm"]').click()
    page.wait_for_selector("table.results")
    hosts = page.locator("table.results td.host").all_inner_texts()
    assert XSS in hosts, "the literal string is visible"
    assert_accessible(page)
    assert page.locator("main img").count() == 0, "no element was made from it"
    assert page.evaluate("() => document.querySelectorAll('img, script:not([src])').length") == 0
    page.wait_for_timeout(300)  # an onerror would fire right away; the fixture fails on any dialog


def test_admin_panel_keeps_the_key_in_memory_only(page: Any, served: Served, problems: PageProblems) -> None:
    problems.expect_status(401)
    # an unknown GPU (markup in its NVML name) lands in the pending queue
    name = f"<i>Mystery</i> GPU {uuid.uuid4().hex[:4]}"
    submit_run(served, [result()], host="pending-host", pci="0xeffe", gpu_name=name, memory_total=24 * 2**30)
    open_view(page, served, "#/data")
    page.get_by_label("API key (admin scope)").fill("not-a-key")
    page.get_by_role("button", name="Use key").click()
    page.wait_for_selector(".admin .problem")
    assert "Unauthorized" in page.locator(".admin .problem").inner_text()
    page.get_by_label("API key (admin scope)").fill(served.admin_key)
    page.get_by_role("button", name="Use key").click()
    page.wait_for_selector("table.pending")
    assert name in page.locator("table.pending").inner_text()
    assert page.locator("table.pending i").count() == 0
    assert_accessible(page)
    assert page.get_by_label("API key (admin scope)").input_value() == ""
    stored = page.evaluate(
        "() => JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage), document.cookie])"
    )
    assert served.admin_key not in stored and stored == '[[],[],""]'
    assert served.admin_key not in page.url
    page.reload()
    open_view(page, served, "#/data")
    assert page.locator("table.pending").count() == 0, "gone on reload"


def test_the_page_speaks_chinese_to_a_chinese_browser(
    browser: Any, served: Served, problems: PageProblems
) -> None:
    zh = new_page(browser, problems, locale="zh-CN")
    try:
        open_view(zh, served, "#/estimate")
        assert zh.locator("html").get_attribute("lang") == "zh-CN"
        assert zh.locator("main h1").inner_text() == "估算单个配置"
        assert zh.locator('nav a[data-view="compare"]').inner_text() == "对比"
    finally:
        zh.context.close()
    assert problems.errors == [] and problems.dialogs == []


def test_phone_width_has_no_sideways_scrolling(browser: Any, served: Served, problems: PageProblems) -> None:
    phone = new_page(browser, problems, width=375, height=740)
    try:
        for hash_ in (
            "#/estimate?model=llama3-8b&gpu=nvidia-l40&mode=fine-tuning",
            "#/data",
            "#/gpus",
            "#/gpus/nvidia-l40",
            "#/compare",
        ):
            open_view(phone, served, hash_)
            if "estimate" in hash_:
                phone.wait_for_selector(".estimate-result")
            if "compare" in hash_:
                phone.wait_for_selector("table.compare-specs")
            width = phone.evaluate("() => document.documentElement.scrollWidth")
            assert width <= 375, (hash_, width)
    finally:
        phone.context.close()
    assert problems.errors == [] and problems.dialogs == []


def test_catalog_text_and_links_from_an_admin_are_inert(page: Any, served: Served) -> None:
    """An admin-written GPU document: markup in names and notes shows as text, and a source URL
    that is not http(s) never becomes a link."""
    slug = f"nvidia-test-{uuid.uuid4().hex[:8]}"
    doc = gpu_document(slug, new_pci(), name=f"{XSS} GPU")
    doc["notes"] = "<script>alert(3)</script>"
    doc["sources"][0].update(title=f"{XSS} datasheet", url="javascript:alert(4)")
    doc["sources"][2].update(title="vendor page", url="https://example.com/datasheet")
    r = served.post("/v1/gpus", doc, served.admin_key)
    assert r.status_code == 201, r.text
    open_view(page, served, f"#/gpus/{slug}")
    assert page.locator("main h1").inner_text() == f"{XSS} GPU"
    sources = page.locator("ol.sources")
    assert (
        f"{XSS} datasheet" in sources.inner_text()
        and "<script>alert(3)</script>" in page.locator("main").inner_text()
    )
    hrefs = sources.locator("a:not(.prov)").evaluate_all("els => els.map(e => e.getAttribute('href'))")
    assert hrefs == ["https://example.com/datasheet"], hrefs
    chips = sources.locator("a.prov").evaluate_all("els => els.map(e => e.getAttribute('href'))")
    assert all(h.startswith("#/legend?term=") for h in chips), chips  # the legend, nothing else
    assert page.evaluate("() => document.querySelectorAll('main img, main script').length") == 0


def test_every_page_string_exists_in_both_languages(page: Any, served: Served) -> None:
    """The zh and en dictionaries have the same keys, and every key the modules ask for
    (``t("...")``, and the ``nav_<view>`` keys built from the views) is in them: a missing zh
    string would silently fall back to English, a missing key would show the key itself."""
    import re
    from pathlib import Path

    page.goto(served.url)
    keys = page.evaluate(
        "import('/static/i18n.js').then(m => ({en: Object.keys(m.STRINGS.en), zh: Object.keys(m.STRINGS.zh)}))"
    )
    en, zh = set(keys["en"]), set(keys["zh"])
    assert en - zh == set() and zh - en == set()
    static = Path(__file__).resolve().parents[2] / "service" / "web" / "static"
    sources = "\n".join(p.read_text(encoding="utf-8") for p in static.rglob("*.js"))
    used = set(re.findall(r'\bt\("([A-Za-z0-9_]+)"\)', sources))
    assert len(used) > 50  # the pattern still matches how the modules call t()
    views = set(re.findall(r'data-view="([a-z]+)"', page.content()))
    assert views, "the navigation names its views"
    assert used | {f"nav_{v}" for v in views} <= en
