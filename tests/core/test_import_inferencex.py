"""The InferenceX importer (benchmarks/import_inferencex.py): its selection rule, the derived
output share, the latency cross-check, and that the shipped table is what the importer writes
from the shipped transcription."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from benchmarks import import_inferencex as ix
from service.core.evidence.published import get_table


def _rec(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "page": 0,
        "hardware": "h200",
        "framework": "sglang",
        "model": "dsr1",
        "precision": "fp8",
        "spec_method": "none",
        "disagg": False,
        "is_multinode": False,
        "prefill_tp": 8,
        "decode_tp": 8,
        "decode_ep": 1,
        "decode_dp_attention": False,
        "num_prefill_gpu": 8,
        "num_decode_gpu": 8,
        "isl": 1024,
        "osl": 1024,
        "conc": 4,
        "output_tput_per_gpu": 40.0,
        "tput_per_gpu": 80.0,
        "median_tpot": 0.012,
        "mean_e2el": 12.8,  # 4 x 1024 / (12.8 x 8) = 40 tokens/s per GPU
        "date": "2026-01-01",
        "run_url": "https://github.com/SemiAnalysisAI/InferenceX/actions/runs/1/attempts/1",
    }
    base.update(kw)
    return base


def test_selection_keeps_single_node_pure_tensor_parallel_runs_only() -> None:
    kept, skipped = ix.select(
        [
            _rec(),
            _rec(disagg=True),
            _rec(is_multinode=True),
            _rec(spec_method="mtp"),
            _rec(decode_ep=8),
            _rec(decode_dp_attention=True),
            _rec(num_decode_gpu=64),
            _rec(hardware="h20"),
            _rec(model="kimi"),
            _rec(hardware="gb200"),
        ]
    )
    assert sorted(r["hardware"] for r in kept) == ["gb200", "h200"] and _rec() in kept
    assert skipped == {
        "disaggregated or multi-node": 2,
        "speculative decoding": 1,
        "not pure tensor parallelism": 3,
        "GPU not catalogued": 1,
        "model not a catalog preset": 1,
    }


def test_the_newest_run_of_a_configuration_is_kept() -> None:
    old, new = _rec(date="2025-11-02", output_tput_per_gpu=30.0), _rec(date="2026-02-03")
    for order in ([old, new], [new, old]):
        kept, skipped = ix.select(order)
        assert [r["date"] for r in kept] == ["2026-02-03"]
        assert skipped == {"an older run of a kept configuration": 1}


def test_rerun_spread_compares_runs_of_one_configuration_only() -> None:
    runs = [
        _rec(date="2025-11-02", tput_per_gpu=100.0),
        _rec(date="2026-02-03", tput_per_gpu=110.0),
        _rec(date="2026-03-01", tput_per_gpu=105.0),
        _rec(conc=8, tput_per_gpu=300.0),  # another configuration, run once: no spread
        _rec(conc=16, tput_per_gpu=None),  # nothing to compare
    ]
    assert ix.rerun_spread(runs) == [pytest.approx(0.10)]


def test_output_share_is_derived_only_where_the_record_lacks_it() -> None:
    assert ix.output_per_gpu(_rec()) == (40.0, "output_tput_per_gpu")
    v, how = ix.output_per_gpu(_rec(output_tput_per_gpu=None, tput_per_gpu=90.0, isl=8192, osl=1024))
    assert v == pytest.approx(10.0) and how.startswith("derived")


def test_a_copying_slip_disagrees_with_the_records_own_latency() -> None:
    assert ix.check([_rec()]) == []
    assert len(ix.check([_rec(output_tput_per_gpu=400.0)])) == 1


def test_rows_carry_engine_concurrency_and_run() -> None:
    r = ix.row(_rec(hardware="mi355x", precision="fp4"))
    assert r.slug == "amd-mi355x" and r.precision == "mxfp4" and r.model == "deepseek-r1"
    assert (r.workload, r.metric, r.tp, r.gpu_count, r.concurrency) == (
        "llm-serve-online",
        "output_tokens_per_s_per_gpu",
        8,
        8,
        4,
    )
    assert r.system.startswith("sglang ") and "actions/runs/1" in r.note
    assert ix.row(_rec(precision="fp4")).precision == "fp4"  # NVFP4 on NVIDIA


def test_the_shipped_table_is_the_importers_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "table.py"
    monkeypatch.setattr(ix, "OUT", out)
    monkeypatch.setattr(ix, "ROOT", tmp_path)
    assert ix.main([]) == 0
    spec = importlib.util.spec_from_file_location("generated_inferencex", out)
    assert spec and spec.loader
    generated = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generated)
    t = get_table(ix.TABLE_ID)
    assert t == generated.TABLE  # the shipped module is the importer's output (formatted)
    assert t.publisher == "SemiAnalysis" and t.files[0].commit == ix.COMMIT
    assert len(t.rows) == len(ix.select(ix.records())[0]) > 200
    assert ix.check(ix.records()) == []


def test_every_named_gpu_maps_to_its_catalog_entry() -> None:
    """The site's hardware names map to catalog slugs wherever the catalog has the part (the
    GB200 and GB300 NVL72 since the catalog added them), so no row loses its GPU figures."""
    from service.catalog.loader import load_shipped

    slugs = {g["slug"] for g in load_shipped().gpus}
    assert all(slug in slugs for _, slug in ix.HARDWARE.values())
    assert ix.HARDWARE["gb200"][1] == "nvidia-gb200" and ix.HARDWARE["gb300"][1] == "nvidia-gb300"
