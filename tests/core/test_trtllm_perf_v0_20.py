"""TensorRT-LLM v0.20 Perf Overview table: cells as published, catalog ids, cross-GPU pairs."""

from __future__ import annotations

from collections import Counter, defaultdict

from service.core.catalog.models import PRESETS, get_model
from service.core.evidence.published.schema import PRECISIONS
from service.core.evidence.published.trtllm_perf_v0_20 import TABLE, TABLE_ID


def _cell(**kw: object) -> float:
    hits = [r for r in TABLE.rows if all(getattr(r, k) == v for k, v in kw.items())]
    assert len(hits) == 1, (kw, hits)
    return hits[0].value


def test_pinned_cells_as_published() -> None:
    """Cells re-read from docs/source/performance/perf-overview.md at dominicshanshan/TensorRT-LLM
    ab4143e1d3c82df550f0d5673090a8feee84c7bd (thousands separators removed)."""
    b200, h200, h100 = "nvidia-b200", "nvidia-h200-sxm", "nvidia-h100-sxm"
    # Llama 3.3 70B FP4, B200: 128/128 TP1 "10,994.48", 20000/2000 TP8 "3,429.03"
    assert _cell(slug=b200, model="llama3.1-70b", tp=1, input_len=128, output_len=128) == 10994.48
    assert _cell(slug=b200, model="llama3.1-70b", tp=8, input_len=20000, output_len=2000) == 3429.03
    # Llama 3.1 405B FP4, B200 TP4: 1000/1000 "4,848.00"
    assert _cell(slug=b200, model="llama3.1-405b", tp=4, input_len=1000, output_len=1000) == 4848.0
    # Llama 3.1 8B FP8 128/128: H200 "27,970.14", H100 "27,688.36"
    assert _cell(slug=h200, model="llama3.1-8b", input_len=128, output_len=128) == 27970.14
    assert _cell(slug=h100, model="llama3.1-8b", input_len=128, output_len=128) == 27688.36
    # Llama 3.3 70B FP8: H100 TP1 5000/500 "204.94"; H200 TP8 2048/2048 "10,412.85" (only cell of that row)
    assert _cell(slug=h100, model="llama3.1-70b", tp=1, input_len=5000, output_len=500) == 204.94
    assert _cell(slug=h200, model="llama3.1-70b", tp=8, input_len=2048, output_len=2048) == 10412.85
    assert len([r for r in TABLE.rows if (r.input_len, r.output_len) == (2048, 2048)]) == 1
    # Llama 3.1 405B FP8 TP8: 2048/128 H200 "443.10", H100 "449.02"; 20000/2000 H100 "372.12"
    assert _cell(slug=h200, model="llama3.1-405b", tp=8, input_len=2048, output_len=128) == 443.10
    assert _cell(slug=h100, model="llama3.1-405b", tp=8, input_len=2048, output_len=128) == 449.02
    assert _cell(slug=h100, model="llama3.1-405b", tp=8, input_len=20000, output_len=2000) == 372.12


def test_rows_resolve_in_the_catalog() -> None:
    for r in TABLE.rows:
        assert r.slug is not None, r  # every GPU of this table is catalogued
        assert r.model in PRESETS and get_model(r.model).id == r.model, r.model
        assert r.table_id == TABLE_ID and r.metric == "output_tokens_per_s"
        assert r.gpu_count == r.tp and r.pp == 1 and r.input_len and r.output_len, r
        assert r.kv_cache_dtype is None, r
        assert r.note.startswith("checkpoint nvidia/"), r.note
    names = {(r.gpu_name, r.slug, r.precision) for r in TABLE.rows}
    assert names == {
        ("B200", "nvidia-b200", "fp4"),
        ("H200 141GB HBM3", "nvidia-h200-sxm", "fp8"),
        ("H100 80GB HBM3", "nvidia-h100-sxm", "fp8"),
    }
    assert {r.model for r in TABLE.rows} == {"llama3.1-8b", "llama3.1-70b", "llama3.1-405b"}  # no Maverick


def test_row_counts_per_gpu() -> None:
    assert Counter(r.slug for r in TABLE.rows) == {
        "nvidia-b200": 60,
        "nvidia-h200-sxm": 57,
        "nvidia-h100-sxm": 50,
    }


def test_configurations_pair_across_gpus() -> None:
    """H200 and H100 pair on every FP8 configuration (8B TP1, 70B TP1/2/4/8, 405B TP8); B200 is the
    only FP4 GPU of this page, so its rows pair with nothing here."""
    groups: dict[tuple[object, ...], set[str]] = defaultdict(set)
    for r in TABLE.rows:
        assert r.slug is not None
        groups[(r.model, r.tp, r.input_len, r.output_len, PRECISIONS[r.precision])].add(r.slug)
    paired = {k for k, v in groups.items() if len(v) >= 2}
    assert all(groups[k] == {"nvidia-h200-sxm", "nvidia-h100-sxm"} for k in paired)
    assert {(k[0], k[1]) for k in paired} == {
        ("llama3.1-8b", 1),
        ("llama3.1-70b", 1),
        ("llama3.1-70b", 2),
        ("llama3.1-70b", 4),
        ("llama3.1-70b", 8),
        ("llama3.1-405b", 8),
    }
    # 8B 10 + 70B TP1 6 / TP2 10 / TP4 9 / TP8 7 + 405B 5 lengths where both GPUs have a value
    assert len(paired) == 47
    assert {k[4] for k, v in groups.items() if len(v) < 2} == {"fp4", "fp8"}
    assert all(v == {"nvidia-b200"} for k, v in groups.items() if k[4] == "fp4")
