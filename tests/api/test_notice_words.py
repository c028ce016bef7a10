"""Every warning and note code the API emits has an English and a Chinese text: estimate
warnings (:class:`NoticeCode`, also on recommend options, and the GPU-name warnings of
compare and the GPU document) and price-quote notes (:data:`QUOTE_NOTES`), enumerated from
their declarations; real answers in ``Accept-Language: zh`` carry the Chinese sentence, never the
bare code."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import service
from service.api.presenters.notice_words import NOTICE_ZH, QUOTE_NOTE_WORDS, notice_text, quote_note_text
from service.api.presenters.recommend_words import placeholders
from service.core.estimation.estimate_answers import Notice, NoticeCode
from service.core.pricing import quotes

CJK = re.compile(r"[\u4e00-\u9fff]")
ZH = {"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.8"}


@pytest.mark.parametrize("code", list(NoticeCode))
def test_every_warning_code_has_chinese_templates_told_apart_by_their_parameters(code: NoticeCode) -> None:
    templates = NOTICE_ZH[code]
    assert templates and all(CJK.search(t) for t in templates)
    sets = [frozenset(placeholders(t)) for t in templates]
    assert len(set(sets)) == len(sets)  # one template per set of figures
    for t in templates:  # every template renders from its own parameters
        params = {k: 7 for k in placeholders(t)}
        said = notice_text(code, "the English sentence", params, "zh")
        assert CJK.search(said) and code.value not in said and "{" not in said
        assert notice_text(code, "the English sentence", params, "en") == "the English sentence"


def test_every_quote_note_has_both_languages() -> None:
    assert set(QUOTE_NOTE_WORDS) == set(quotes.QUOTE_NOTES)
    for code in quotes.QUOTE_NOTES:
        en, zh = quote_note_text(code, "en"), quote_note_text(code, "zh")
        assert en != code and not CJK.search(en) and CJK.search(zh), code
    # every lower-case code constant of the quotes module is a declared note
    declared = {v for k, v in vars(quotes).items() if k.isupper() and isinstance(v, str) and v.islower()}
    assert declared == set(quotes.QUOTE_NOTES), declared ^ set(quotes.QUOTE_NOTES)


def test_every_warning_code_written_in_the_service_is_declared() -> None:
    """A code written at a ``Notice(...)`` or ``GpuWarning(...)`` call is declared (the
    constructor refuses an undeclared one too)."""
    root = Path(service.__file__).parent
    pattern = r'(?:Notice|GpuWarning)\(\s*"([a-z_0-9]+)"'
    written = {c for f in root.rglob("*.py") for c in re.findall(pattern, f.read_text(encoding="utf-8"))}
    assert len(written) >= 12
    assert written <= {c.value for c in NoticeCode}, written - {c.value for c in NoticeCode}
    with pytest.raises(ValueError):
        Notice("not_declared", "an English sentence")


def _zh_warning(items: list[dict[str, Any]], code: str) -> str:
    found = [w["message"] for w in items if w["code"] == code]
    assert found, (code, [w["code"] for w in items])
    assert CJK.search(found[0]) and code not in found[0], found[0]
    return str(found[0])


def test_estimate_warnings_are_worded_in_the_language_asked_for(client: TestClient) -> None:
    body = {
        "model": "meta-llama/Llama-2-13b-hf",
        "gpu": "nvidia-l40",
        "gpu_count": 2,
        "mode": "fine-tuning",
        "precision": "bf16",
        "batch_size": 1,
        "seq_len": 2048,
        "gradient_checkpointing": True,
    }
    en = client.post("/v1/estimate", json=body)
    zh = client.post("/v1/estimate", json=body, headers=ZH)
    assert en.status_code == zh.status_code == 200, zh.text
    en_w, zh_w = en.json()["warnings"], zh.json()["warnings"]
    assert [w["code"] for w in en_w] == [w["code"] for w in zh_w]
    said = _zh_warning(zh_w, "pcie_multi_gpu_unvalidated")
    assert "PCIe" in said
    assert all(not CJK.search(w["message"]) for w in en_w)
    batch = client.post("/v1/estimate/batch", json={"items": [body]}, headers=ZH)
    assert batch.status_code == 200
    _zh_warning(batch.json()["items"][0]["result"]["warnings"], "pcie_multi_gpu_unvalidated")


def test_gpu_name_warnings_are_worded_in_chinese_on_compare_and_the_gpu_document(client: TestClient) -> None:
    r = client.get("/v1/compare?gpus=l40,A100-80GB&on_ambiguous=default", headers=ZH)
    assert r.status_code == 200 and r.headers["vary"] == "Accept-Language"
    said = _zh_warning(r.json()["gpus"][1]["warnings"], "assumed_variant")
    assert r.json()["gpus"][1]["slug"] in said  # the variant assumed, named
    en = client.get("/v1/compare?gpus=l40,A100-80GB&on_ambiguous=default")
    assert not CJK.search(en.json()["gpus"][1]["warnings"][0]["message"])
    r = client.get("/v1/gpus/NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", headers=ZH)
    assert "1g.5gb" in _zh_warning(r.json()["warnings"], "mig_slice")
    r = client.get("/v1/gpus/NVIDIA-H100-80GB-HBM3-SHARED", headers=ZH)
    _zh_warning(r.json()["warnings"], "shared_gpu")


def test_recommend_option_warnings_are_worded_in_chinese(client: TestClient) -> None:
    body = {
        "workload": {"model": "meta-llama/Llama-2-13b-hf", "mode": "fine-tuning", "seq_len": 2048},
        "constraints": {"allowed_gpus": ["nvidia-l40"], "max_gpus": 2},
    }
    zh = client.post("/v1/recommend", json=body, headers=ZH)
    assert zh.status_code == 200, zh.text
    warned = [(w, o) for o in zh.json()["options"] for w in o["warnings"]]
    assert warned, "a 2-GPU PCIe plan carries the PCIe warning"
    for w, _o in warned:
        assert CJK.search(w["message"]) and w["code"] not in w["message"], w
    # the stored answer, read back in Chinese, says the same
    rid = zh.json()["recommendation_id"]
    again = client.get(f"/v1/recommendations/{rid}", headers=ZH).json()
    assert [w["message"] for o in again["options"] for w in o["warnings"]] == [
        w["message"] for w, _ in warned
    ]
