"""TensorRT-LLM v0.12.0 Perf Overview table: cells as published, catalog ids, cross-GPU pairs."""

from __future__ import annotations

from collections import Counter, defaultdict

from service.core.catalog.models import PRESETS, get_model
from service.core.evidence.published.schema import PRECISIONS
from service.core.evidence.published.trtllm_perf_v0_12 import TABLE, TABLE_ID


def _cell(**kw: object) -> float:
    hits = [r for r in TABLE.rows if all(getattr(r, k) == v for k, v in kw.items())]
    assert len(hits) == 1, (kw, hits)
    return hits[0].value


def test_pinned_cells_as_published() -> None:
    """Cells re-read from docs/source/performance/perf-overview.md at NVIDIA/TensorRT-LLM
    31ac30e928a2db795799fdcab6be446bfa3a3998 ("generated using version 0.12.0")."""
    h100 = "nvidia-h100-sxm"
    # LLaMA v3 8B 128/128 TP1: H200 "28288.75", H100 FP8 "27399.75", H100 Mixed "15567.44"
    assert _cell(slug="nvidia-h200-sxm", model="llama3-8b", input_len=128, output_len=128) == 28288.75
    assert _cell(slug=h100, precision="fp8", model="llama3-8b", input_len=128, output_len=128) == 27399.75
    assert _cell(slug=h100, precision="fp16", model="llama3-8b", input_len=128, output_len=128) == 15567.44
    # Mistral 7B 2048/2048 TP1: L40S "2154.26"; LLaMA v2 7B 128/4096: A100-SXM4-80GB "957.12"
    assert _cell(slug="nvidia-l40s", model="mistral-7b", input_len=2048, output_len=2048) == 2154.26
    assert _cell(slug="nvidia-a100-sxm4-80gb", model="llama2-7b", input_len=128, output_len=4096) == 957.12
    # Mixtral 8x7B 128/2048: TP2 GH200 120GB "5474.69", TP4 L40S "7467.15"
    assert (
        _cell(gpu_name="GH200 120GB", model="mixtral-8x7b", tp=2, input_len=128, output_len=2048) == 5474.69
    )
    assert _cell(slug="nvidia-l40s", model="mixtral-8x7b", tp=4, input_len=128, output_len=2048) == 7467.15
    # LLaMA v3 70B 2048/2048 TP2: A100 "87.54" (as published); TP8 L40S "895.23"
    assert (
        _cell(slug="nvidia-a100-sxm4-80gb", model="llama3-70b", tp=2, input_len=2048, output_len=2048)
        == 87.54
    )
    assert _cell(slug="nvidia-l40s", model="llama3-70b", tp=8, input_len=2048, output_len=2048) == 895.23
    # LLaMA v2 70B 128/128 TP4: GH200 "10819.19", H100 FP8 "10754.99"; TP8 2048/128 H200 "2015.77"
    assert _cell(gpu_name="GH200 120GB", model="llama2-70b", tp=4, input_len=128, output_len=128) == 10819.19
    assert (
        _cell(slug=h100, precision="fp8", model="llama2-70b", tp=4, input_len=128, output_len=128) == 10754.99
    )
    assert _cell(slug="nvidia-h200-sxm", model="llama2-70b", tp=8, input_len=2048, output_len=128) == 2015.77
    # empty cells are not rows: LLaMA v3 70B TP2 has no GH200, H100 FP8 or L40S value
    assert not [
        r for r in TABLE.rows if r.model == "llama3-70b" and r.tp == 2 and r.slug in (None, "nvidia-l40s")
    ]


def test_rows_resolve_in_the_catalog() -> None:
    for r in TABLE.rows:
        assert r.slug is not None or r.gpu_name == "GH200 120GB", r
        assert r.model in PRESETS and get_model(r.model).id == r.model, r.model
        assert r.table_id == TABLE_ID and r.metric == "output_tokens_per_s"
        assert r.gpu_count == r.tp and r.pp == 1 and r.input_len and r.output_len, r
        assert r.kv_cache_dtype == ("fp8" if r.precision == "fp8" else None), r
    names = {(r.gpu_name, r.slug, r.precision) for r in TABLE.rows}
    assert names == {
        ("H200 141GB HBM3", "nvidia-h200-sxm", "fp8"),
        ("GH200 120GB", None, "fp8"),
        ("H100 80GB HBM3", "nvidia-h100-sxm", "fp8"),
        ("H100 80GB HBM3", "nvidia-h100-sxm", "fp16"),
        ("A100-SXM4-80GB", "nvidia-a100-sxm4-80gb", "fp16"),
        ("L40S", "nvidia-l40s", "fp8"),
    }
    # GPT-J 6B and Falcon 180B have no preset and are left out
    assert {r.model for r in TABLE.rows} == {
        "llama2-7b",
        "llama3-8b",
        "mistral-7b",
        "mixtral-8x7b",
        "llama3-70b",
        "llama2-70b",
    }


def test_row_counts_per_gpu() -> None:
    assert Counter((r.gpu_name, r.precision) for r in TABLE.rows) == {
        ("H200 141GB HBM3", "fp8"): 55,
        ("GH200 120GB", "fp8"): 35,
        ("H100 80GB HBM3", "fp8"): 45,
        ("H100 80GB HBM3", "fp16"): 54,
        ("A100-SXM4-80GB", "fp16"): 55,
        ("L40S", "fp8"): 30,
    }


def test_configurations_pair_across_gpus() -> None:
    """(model, tp, lengths, precision family) groups with at least two catalogued GPUs: all but the
    70B TP2 FP8 rows, which only H200 ran (GH200, H100 FP8 and L40S cells are empty), and LLaMA v3
    70B TP2 2048/2048 FP16, which only A100 has."""
    groups: dict[tuple[object, ...], set[str]] = defaultdict(set)
    for r in TABLE.rows:
        if r.slug is not None:
            groups[(r.model, r.tp, r.input_len, r.output_len, PRECISIONS[r.precision])].add(r.slug)
    unpaired = {k for k, v in groups.items() if len(v) < 2}
    assert {(m, tp, fam) for m, tp, _, _, fam in unpaired} == {
        ("llama2-70b", 2, "fp8"),
        ("llama3-70b", 2, "fp8"),
        ("llama3-70b", 2, "fp16/bf16"),
    }
    assert len(unpaired) == 11 and ("llama3-70b", 2, 2048, 2048, "fp16/bf16") in unpaired
    assert len(groups) == 110  # 55 rows x (fp8, fp16/bf16)
    assert groups[("llama3-8b", 1, 128, 128, "fp8")] == {"nvidia-h200-sxm", "nvidia-h100-sxm", "nvidia-l40s"}
    assert groups[("llama2-70b", 8, 128, 128, "fp16/bf16")] == {"nvidia-h100-sxm", "nvidia-a100-sxm4-80gb"}
    assert groups[("mixtral-8x7b", 4, 2048, 2048, "fp8")] == {
        "nvidia-h200-sxm",
        "nvidia-h100-sxm",
        "nvidia-l40s",
    }
