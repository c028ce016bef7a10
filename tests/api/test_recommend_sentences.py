"""Reasons as data: every reason code declares its wordings' parameters (names and types), every
wording has an English and a Chinese template whose placeholders are exactly those parameters,
a reason cannot be built with a missing or undeclared parameter, and the answers to real
``POST /v1/recommend`` questions read without a "?" or a bare code in either language."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, get_args

import pytest
from fastapi.testclient import TestClient

import service.core.recommend.search as rec
from service.api.presenters.recommend_words import EN, TEMPLATES, ZH, placeholders, sentence
from service.core.recommend.models import WhatIf
from service.core.recommend.reasons import (
    FORMS,
    REASON_CODES,
    Reason,
    ReasonCode,
    ReasonCodeName,
    ReasonParamsError,
    form_of,
)

CJK = re.compile(r"[\u4e00-\u9fff]")
SAMPLE: dict[type, Any] = {str: "x", int: 3, float: 2.5, bool: True, list: ["a", "b"]}


def test_the_literal_names_and_the_tuple_are_the_enum() -> None:
    assert set(get_args(ReasonCodeName)) == {c.value for c in ReasonCode}
    assert tuple(c.value for c in ReasonCode) == REASON_CODES
    assert set(FORMS) == set(ReasonCode)


@pytest.mark.parametrize("code", list(ReasonCode))
def test_each_form_has_both_templates_with_exactly_its_parameters(code: ReasonCode) -> None:
    for lang, table in TEMPLATES.items():
        assert set(table[code]) == {f.name for f in FORMS[code]}, (lang, code)
        for form in FORMS[code]:
            assert placeholders(table[code][form.name]) == set(form.params), (lang, code, form.name)
    # the forms of one code are told apart by their keys and their `when` values (or a check)
    plain = [f for f in FORMS[code] if f.check is None]
    assert len({(f.keys, tuple(sorted(f.when.items()))) for f in plain}) == len(plain)


@pytest.mark.parametrize("code", list(ReasonCode))
def test_every_form_renders_in_both_languages_and_differs_between_them(code: ReasonCode) -> None:
    for form in FORMS[code]:
        tries = [
            {k: SAMPLE[t] if t is not int else 2 + i * step for i, (k, t) in enumerate(form.params.items())}
            | dict(form.when)
            for step in (1, -1)
        ]  # counts that differ, either way round, so a form's check can pick it
        params = next(p for p in tries if form.picks(p))
        r = Reason(code, params)
        assert form_of(r.code, r.params) is form
        en, zh = sentence(code, params, "en"), sentence(code, params, "zh")
        assert en and zh and en != zh and "?" not in en and "?" not in zh
        assert CJK.search(zh) and not CJK.search(en), (code, form.name)


def test_a_reason_with_a_missing_undeclared_or_mistyped_parameter_cannot_be_built() -> None:
    ok = {"gpu": "H100", "tdp_w": 700, "cap_w": 400, "per": "gpu"}
    assert Reason("OVER_POWER_CAP", ok).code is ReasonCode.OVER_POWER_CAP
    with pytest.raises(ReasonParamsError, match="no wording"):
        Reason("OVER_POWER_CAP", {k: v for k, v in ok.items() if k != "cap_w"})
    with pytest.raises(ReasonParamsError, match="undeclared"):
        Reason("OVER_POWER_CAP", {**ok, "cap_watts": 400})
    with pytest.raises(ReasonParamsError, match="no wording"):
        Reason("OVER_POWER_CAP", {**ok, "per": "rack"})  # a `when` value no form declares
    with pytest.raises(ReasonParamsError, match="wrong type"):
        Reason("OVER_POWER_CAP", {**ok, "tdp_w": "700"})
    with pytest.raises(ReasonParamsError, match="unknown"):
        Reason("NOT_A_CODE", {})  # type: ignore[arg-type]
    with pytest.raises(ReasonParamsError):
        WhatIf("WITH_QLORA", None, 1, {}, {"gpu": "L4"})  # type: ignore[arg-type]


def test_a_stored_sentence_stands_when_its_parameters_match_no_form() -> None:
    """An answer stored before a code's parameters changed keeps its stored sentence (never
    re-rendered with "?")."""
    assert sentence("FITS", {"gpu": "L4"}, "zh") is None
    assert sentence("NO_SUCH_CODE", {}, "en") is None


def test_every_code_the_recommender_writes_is_declared() -> None:
    """Codes are written as string literals at the call sites (the type checker holds them to
    :data:`ReasonCodeName`); this reads them back from the source as a second net."""
    written = {
        code
        for f in Path(rec.__file__).parent.glob("*.py")
        for code in re.findall(r'(?:Reason|WhatIf)\(\s*"([A-Z_0-9]+)"', f.read_text(encoding="utf-8"))
    }
    assert len(written) > 20
    assert written <= set(REASON_CODES), written - set(REASON_CODES)
    assert set(EN) == set(ZH) == set(ReasonCode)


# ---- real answers, both languages ------------------------------------------------------------

QUESTIONS: list[dict[str, Any]] = [
    {  # full fine-tune that needs sharding; many GPUs excluded by memory
        "workload": {"model": "meta-llama/Llama-2-13b-hf", "mode": "training", "precision": "amp_bf16",
                     "optimizer": "adamw", "seq_len": 2048, "batch_size": 4},
        "constraints": {"max_gpus": 2},
    },
    {  # one GPU only: optimizer-recipe assumption, what-ifs
        "workload": {"model": "llama3-8b", "mode": "fine-tuning", "finetune": "full", "seq_len": 2048},
        "constraints": {"allowed_gpus": ["nvidia-h100-sxm", "nvidia-l4"], "max_gpus": 1},
    },
    {  # a deadline no plan meets
        "workload": {"model": "llama3-8b", "mode": "training", "batch_size": 2, "seq_len": 4096, "tokens": 1e12},
        "constraints": {"allowed_gpus": ["nvidia-h200-sxm", "nvidia-a100-sxm4-80gb"], "max_gpus": 16,
                        "deadline_hours": 720},
        "objective": "fastest",
    },
    {  # cheapest with a budget, vendor, form-factor and power constraints
        "workload": {"model": "llama3-8b", "mode": "fine-tuning", "finetune": "lora", "seq_len": 2048},
        "constraints": {"max_gpus": 4, "vendors": ["nvidia"], "form_factors": ["pcie"], "max_power_w_per_gpu": 350,
                        "budget": {"per_hour": 1.0}, "excluded_gpus": ["L4"], "min_provenance": "spec",
                        "max_band_pct": 60},
        "objective": "cheapest",
    },
    {  # serving at a rate with both latency targets and quantisation allowed
        "workload": {"model": "Qwen/Qwen2.5-72B-Instruct", "mode": "inference", "engine": "vllm",
                     "input_len": 1024, "output_len": 256, "requests_per_s": 2,
                     "ttft_target_ms": 2000, "tpot_target_ms": 50},
        "constraints": {"max_gpus": 8, "allow_quantization": True},
        "objective": "fastest",
    },
    {  # closed-loop concurrency, no engine given (assumed), one target
        "workload": {"model": "llama3-8b", "mode": "inference", "input_len": 100_000, "output_len": 256,
                     "concurrency": 4, "tpot_target_ms": 60},
        "constraints": {"max_gpus": 8},
    },
    {  # an owned inventory and a total power cap
        "workload": {"model": "llama3-8b", "mode": "fine-tuning", "finetune": "lora", "seq_len": 2048},
        "constraints": {"inventory": [{"gpu": "L40", "gpus_per_node": 4, "nodes": 2}], "max_power_w_total": 1000,
                        "budget": {"purchase": 1000}},
        "objective": "cheapest",
    },
    {  # a published run of the exact configuration (PUBLISHED_RUN)
        "workload": {"model": "deepseek-ai/DeepSeek-R1", "mode": "inference", "engine": "sglang",
                     "quant_method": "fp8", "input_len": 1024, "output_len": 1024, "concurrency": 32},
        "constraints": {"allowed_gpus": ["amd-mi300x", "nvidia-h200-sxm"], "max_gpus": 8},
        "objective": "fastest",
    },
]  # fmt: skip


def _items(doc: dict[str, Any]) -> list[dict[str, Any]]:
    out = [*doc["warnings"], *doc["assumptions"], *doc["what_if"]]
    for o in doc["options"]:
        out += o["reasons"]
    for e in doc["excluded"]:
        out += [e, *e["also"]]
    return out


def test_real_answers_read_without_placeholders_or_bare_codes_in_both_languages(client: TestClient) -> None:
    codes: set[str] = set()
    for body in QUESTIONS:
        en = client.post("/v1/recommend", json=body)
        zh = client.post("/v1/recommend", json=body, headers={"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.5"})
        assert en.status_code == zh.status_code == 200, (en.text[:300], zh.text[:300])
        en_items, zh_items = _items(en.json()), _items(zh.json())
        assert [i["code"] for i in en_items] == [i["code"] for i in zh_items]
        for e, z in zip(en_items, zh_items, strict=True):
            assert e["params"] == z["params"]  # numbers and codes never change with the language
            form_of(e["code"], e["params"])
            for text in (e["message"], z["message"]):
                assert "?" not in text and "None" not in text and e["code"] not in text, (e["code"], text)
            assert not CJK.search(e["message"]) and CJK.search(z["message"]), (e["code"], z["message"])
            assert z["message"] == sentence(e["code"], e["params"], "zh")
            codes.add(e["code"])
    # the questions reach the codes of every part of an answer
    assert len(codes) >= 35, sorted(codes)
    assert {"FITS", "MEMORY_INSUFFICIENT", "NO_PLAN_MEETS_DEADLINE", "MEETS_TARGETS", "ASSUMED_BAND"} <= codes
    assert "PUBLISHED_RUN" in codes
    assert "PUBLISHED_RECORD" in codes  # the MI300X plan of that question: SGLang's record, no run
