"""TensorRT-LLM v1.0 Perf Overview table: cells as published, catalog ids, cross-GPU pairs."""

from __future__ import annotations

from collections import Counter, defaultdict

from service.core.catalog.models import PRESETS, get_model
from service.core.evidence.published.schema import PRECISIONS
from service.core.evidence.published.trtllm_perf_v1_0 import TABLE, TABLE_ID


def _cell(**kw: object) -> float:
    hits = [r for r in TABLE.rows if all(getattr(r, k) == v for k, v in kw.items())]
    assert len(hits) == 1, (kw, hits)
    return hits[0].value


def test_pinned_cells_as_published() -> None:
    """Cells re-read from docs/source/performance/perf-overview.md at NVIDIA/TensorRT-LLM
    00f37686aa854010d68bcbd0f4ab000221541ca6 (thousands separators removed)."""
    # Llama 3.3 70B table, row 128/128: B200 TP1 (FP4) "11,147", H200 TP1 (FP8) "3,803"
    assert _cell(slug="nvidia-b200", model="llama3.1-70b", tp=1, input_len=128, output_len=128) == 11147
    assert _cell(slug="nvidia-h200-sxm", model="llama3.1-70b", tp=1, input_len=128, output_len=128) == 3803
    # Llama 3.3 70B, row 20000/2000: GB200 TP1 (FP4) "755"; row 5000/500: H100 TP2 (FP8) "898"
    assert _cell(slug="nvidia-gb200", model="llama3.1-70b", tp=1, input_len=20000, output_len=2000) == 755
    assert _cell(slug="nvidia-h100-sxm", model="llama3.1-70b", tp=2, input_len=5000, output_len=500) == 898
    # Llama 3.3 70B RTX 6000 Pro table, "1 GPUs TP1,PP1 (FP4)": 2048/128 "393", 5000/500 "401"
    rtx = "nvidia-rtx-pro-6000-blackwell-server"
    assert _cell(slug=rtx, model="llama3.1-70b", input_len=2048, output_len=128) == 393
    assert _cell(slug=rtx, model="llama3.1-70b", input_len=5000, output_len=500) == 401
    # Llama 3.1 405B, row 128/2048: B200 TP4 (FP4) "8,020"; row 1000/1000: GB200 TP4 (FP4) "5,389"
    assert _cell(slug="nvidia-b200", model="llama3.1-405b", tp=4, input_len=128, output_len=2048) == 8020
    assert _cell(slug="nvidia-gb200", model="llama3.1-405b", tp=4, input_len=1000, output_len=1000) == 5389
    # Llama 3.1 405B, row 2048/2048: H100 TP8 (FP8) "2,296"; row 20000/2000: H200 TP8 (FP8) "505"
    assert _cell(slug="nvidia-h100-sxm", model="llama3.1-405b", tp=8, input_len=2048, output_len=2048) == 2296
    assert _cell(slug="nvidia-h200-sxm", model="llama3.1-405b", tp=8, input_len=20000, output_len=2000) == 505
    # Llama 3.1 8B, row 128/128: H200 TP1 "27,911", H100 TP1 "28,312" (H100 above H200, as published)
    assert _cell(slug="nvidia-h200-sxm", model="llama3.1-8b", input_len=128, output_len=128) == 27911
    assert _cell(slug="nvidia-h100-sxm", model="llama3.1-8b", input_len=128, output_len=128) == 28312
    # Llama 3.1 8B, row 20000/2000: H100 TP1 "1,351"
    assert _cell(slug="nvidia-h100-sxm", model="llama3.1-8b", input_len=20000, output_len=2000) == 1351


def test_rows_resolve_in_the_catalog() -> None:
    for r in TABLE.rows:
        assert r.slug is not None, r  # every GPU of this table is catalogued
        assert r.model in PRESETS and get_model(r.model).id == r.model, r.model
        assert r.table_id == TABLE_ID
        assert r.gpu_count == r.tp and r.pp == 1 and r.input_len and r.output_len, r
        assert r.note.startswith("checkpoint nvidia/"), r.note
    # one name per slug, and the precisions the page gives each GPU
    names = {(r.gpu_name, r.slug, r.precision) for r in TABLE.rows}
    assert len({n for n, _, _ in names}) == len(names) == 5
    assert {s for _, s, p in names if p == "fp4"} == {
        "nvidia-b200",
        "nvidia-gb200",
        "nvidia-rtx-pro-6000-blackwell-server",
    }
    assert {s for _, s, p in names if p == "fp8"} == {"nvidia-h200-sxm", "nvidia-h100-sxm"}


def test_row_counts_per_gpu() -> None:
    assert Counter(r.slug for r in TABLE.rows) == {
        "nvidia-b200": 20,
        "nvidia-gb200": 20,
        "nvidia-h200-sxm": 30,
        "nvidia-h100-sxm": 30,
        "nvidia-rtx-pro-6000-blackwell-server": 10,
    }


def test_configurations_pair_across_gpus() -> None:
    """Configurations the cross-GPU transfer groups (model, tp, lengths, precision class) have at
    least two GPUs, except Llama 3.3 70B FP8, which the page ran at TP1 on H200 but TP2 on H100."""
    groups: dict[tuple[object, ...], set[str]] = defaultdict(set)
    for r in TABLE.rows:
        assert r.slug is not None
        groups[(r.model, r.tp, r.input_len, r.output_len, PRECISIONS[r.precision])].add(r.slug)
    paired = {k for k, v in groups.items() if len(v) >= 2}
    unpaired = {(k[0], k[1], k[4]) for k, v in groups.items() if len(v) < 2}
    assert unpaired == {("llama3.1-70b", 1, "fp8"), ("llama3.1-70b", 2, "fp8")}
    assert len(paired) == 40  # 4 configurations x 10 input/output lengths
    by_config: dict[tuple[object, ...], set[str]] = defaultdict(set)
    for k in paired:
        by_config[(k[0], k[1], k[4])] |= groups[k]
    assert by_config == {
        ("llama3.1-70b", 1, "fp4"): {"nvidia-b200", "nvidia-gb200", "nvidia-rtx-pro-6000-blackwell-server"},
        ("llama3.1-405b", 4, "fp4"): {"nvidia-b200", "nvidia-gb200"},
        ("llama3.1-405b", 8, "fp8"): {"nvidia-h200-sxm", "nvidia-h100-sxm"},
        ("llama3.1-8b", 1, "fp8"): {"nvidia-h200-sxm", "nvidia-h100-sxm"},
    }
    assert all(len(groups[k]) == len(by_config[(k[0], k[1], k[4])]) for k in paired)
