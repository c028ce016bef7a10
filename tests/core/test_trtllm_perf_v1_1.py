"""TensorRT-LLM v1.1 Perf Overview table: cells as published, catalog ids, cross-GPU pairs."""

from __future__ import annotations

from collections import Counter, defaultdict

from service.core.catalog.models import PRESETS, get_model
from service.core.evidence.published.schema import PRECISIONS
from service.core.evidence.published.trtllm_perf_v1_1 import TABLE, TABLE_ID

RTX = "nvidia-rtx-pro-6000-blackwell-server"


def _cell(**kw: object) -> float:
    hits = [r for r in TABLE.rows if all(getattr(r, k) == v for k, v in kw.items())]
    assert len(hits) == 1, (kw, hits)
    return hits[0].value


def test_pinned_cells_as_published() -> None:
    """Cells re-read from docs/source/developer-guide/perf-overview.md at NVIDIA/TensorRT-LLM
    03e27c7d5ff0c6e89f8328838c0a8e64f1b34f9d (and, identical, 585c756579dc4d01f21fc13c2f604cdb461ac4f0)."""
    # LLaMA v3.3 70B, 1000/1000: B200 TP1 (FP4) "6,920", GB200 TP1 (FP4) "7,769",
    # H200 TP2 (FP8) "2,587", H100 TP2 (FP8) "2,209"
    assert _cell(slug="nvidia-b200", input_len=1000, output_len=1000) == 6920
    assert _cell(slug="nvidia-gb200", input_len=1000, output_len=1000) == 7769
    assert _cell(slug="nvidia-h200-sxm", tp=2, input_len=1000, output_len=1000) == 2587
    assert _cell(slug="nvidia-h100-sxm", tp=2, input_len=1000, output_len=1000) == 2209
    # 32768/1024: B200 "274", GB200 "302", H200 "120"; 8192/1024: H100 "398"
    assert _cell(slug="nvidia-b200", input_len=32768, output_len=1024) == 274
    assert _cell(slug="nvidia-gb200", input_len=32768, output_len=1024) == 302
    assert _cell(slug="nvidia-h200-sxm", input_len=32768, output_len=1024) == 120
    assert _cell(slug="nvidia-h100-sxm", input_len=8192, output_len=1024) == 398
    # RTX 6000 Pro table, "1 GPUs TP1,PP1 (FP4)": 1000/1000 "1,724", 8192/1024 "296"
    assert _cell(slug=RTX, input_len=1000, output_len=1000) == 1724
    assert _cell(slug=RTX, input_len=8192, output_len=1024) == 296
    # the "2 GPUs TP1,PP2" column (e.g. 1000/1000 "1,901") is not transcribed
    assert not [r for r in TABLE.rows if r.value == 1901 or r.pp != 1]


def test_rows_resolve_in_the_catalog() -> None:
    for r in TABLE.rows:
        assert r.slug is not None, r  # every GPU of this table is catalogued
        assert r.model == "llama3.1-70b" and r.model in PRESETS and get_model(r.model).id == r.model
        assert r.table_id == TABLE_ID and r.metric == "output_tokens_per_s_per_gpu"
        assert r.gpu_count == r.tp and r.pp == 1 and r.input_len and r.output_len, r
        assert r.kv_cache_dtype is None, r
        assert r.note.startswith("checkpoint nvidia/Llama-3.3-70B-Instruct-"), r.note
        assert r.tp == (2 if r.precision == "fp8" else 1), r
    names = {(r.gpu_name, r.slug, r.precision) for r in TABLE.rows}
    assert len({n for n, _, _ in names}) == len(names) == 5
    assert {s for _, s, p in names if p == "fp4"} == {"nvidia-b200", "nvidia-gb200", RTX}
    assert {s for _, s, p in names if p == "fp8"} == {"nvidia-h200-sxm", "nvidia-h100-sxm"}


def test_row_counts_per_gpu() -> None:
    assert Counter(r.slug for r in TABLE.rows) == {
        "nvidia-b200": 5,
        "nvidia-gb200": 5,
        "nvidia-h200-sxm": 5,
        "nvidia-h100-sxm": 2,
        RTX: 3,
    }


def test_configurations_pair_across_gpus() -> None:
    """FP4 TP1: B200, GB200 (and RTX PRO 6000 where it ran); FP8 TP2: H200 and H100 where H100 ran."""
    groups: dict[tuple[object, ...], set[str]] = defaultdict(set)
    for r in TABLE.rows:
        assert r.slug is not None
        groups[(r.model, r.tp, r.input_len, r.output_len, PRECISIONS[r.precision])].add(r.slug)
    paired = {k: v for k, v in groups.items() if len(v) >= 2}
    assert len(paired) == 7  # 5 FP4 lengths + 2 FP8 lengths
    assert paired[("llama3.1-70b", 1, 1000, 1000, "fp4")] == {"nvidia-b200", "nvidia-gb200", RTX}
    assert paired[("llama3.1-70b", 1, 1024, 8192, "fp4")] == {"nvidia-b200", "nvidia-gb200"}
    assert paired[("llama3.1-70b", 2, 8192, 1024, "fp8")] == {"nvidia-h200-sxm", "nvidia-h100-sxm"}
    unpaired = {(k[2], k[3]) for k, v in groups.items() if len(v) < 2}
    assert unpaired == {(1024, 1024), (1024, 8192), (32768, 1024)}  # H200 TP2 alone
