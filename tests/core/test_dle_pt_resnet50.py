"""DeepLearningExamples ResNet-50 v1.5 PyTorch (NGC 21.03): cells as published, configurations, pairs.

Pinned cells are re-read from ``PyTorch/Classification/ConvNets/resnet50v1.5/README.md`` in
NVIDIA/DeepLearningExamples at commit 5843f4e5a1220dd98936e477d8597d8a77320666.
"""

from __future__ import annotations

from collections import defaultdict

from service.core.catalog.models import PRESETS
from service.core.evidence.published import dle_pt_resnet50 as mod
from service.core.evidence.published.schema import PRECISIONS, PublishedRow

T = mod.TABLE


def _cell(**kw: object) -> float:
    hits = [r for r in T.rows if all(getattr(r, k) == v for k, v in kw.items())]
    assert len(hits) == 1, (kw, hits)
    return hits[0].value


def test_pinned_training_cells() -> None:
    # "Training performance: NVIDIA DGX A100 (8x A100 80GB)", row GPUs=1: TF32 938 img/s, mixed 2470 img/s
    a100 = {"slug": "nvidia-a100-sxm4-80gb", "workload": "resnet50-train"}
    assert _cell(**a100, precision="tf32", gpu_count=1) == 938
    assert _cell(**a100, precision="amp_fp16", gpu_count=1) == 2470
    # same table, row GPUs=8: mixed precision 16621 img/s
    assert _cell(**a100, precision="amp_fp16", gpu_count=8) == 16621
    # "Training performance: NVIDIA DGX-1 16GB (8x V100 16GB)", row GPUs=8: FP32 2855 img/s
    assert (
        _cell(slug="nvidia-v100-sxm2-16gb", workload="resnet50-train", precision="fp32", gpu_count=8) == 2855
    )
    # "Training performance: NVIDIA DGX-1 32GB (8x V100 32GB)", row GPUs=1: mixed precision 1156 img/s
    assert (
        _cell(slug="nvidia-v100-sxm2-32gb", workload="resnet50-train", precision="amp_fp16", gpu_count=1)
        == 1156
    )


def test_pinned_inference_cells() -> None:
    inf = {"workload": "resnet50-infer", "gpu_count": 1}
    # "Inference performance: NVIDIA DGX-1 (1x V100 16GB)", "FP32 Inference Latency", batch 16: 1023 img/s, 16.07 ms
    v100 = {"slug": "nvidia-v100-sxm2-16gb", "precision": "fp32", "batch_size": 16, **inf}
    assert _cell(**v100, metric="images_per_s") == 1023
    assert _cell(**v100, metric="latency_ms") == 16.07
    # same GPU, "Mixed Precision Inference Latency", batch 256: 3382 img/s
    assert (
        _cell(
            slug="nvidia-v100-sxm2-16gb", precision="amp_fp16", batch_size=256, metric="images_per_s", **inf
        )
        == 3382
    )
    # "Inference performance: NVIDIA T4", "FP32 Inference Latency", batch 64: 428 img/s, 152.73 ms
    t4 = {"slug": "nvidia-t4", "precision": "fp32", "batch_size": 64, **inf}
    assert _cell(**t4, metric="images_per_s") == 428
    assert _cell(**t4, metric="latency_ms") == 152.73
    # "Inference performance: NVIDIA T4", "Mixed Precision Inference Latency", batch 8: 652 img/s, 12.82 ms
    t4amp = {"slug": "nvidia-t4", "precision": "amp_fp16", "batch_size": 8, **inf}
    assert _cell(**t4amp, metric="images_per_s") == 652
    assert _cell(**t4amp, metric="latency_ms") == 12.82


def test_row_counts() -> None:
    train = [r for r in T.rows if r.workload == "resnet50-train"]
    infer = [r for r in T.rows if r.workload == "resnet50-infer"]
    assert len(train) == 12  # 3 GPUs x 2 precisions x {1, 8} GPUs
    assert len(infer) == 2 * 2 * 9 * 2  # 2 GPUs x 2 precisions x 9 batch sizes x {img/s, latency}
    assert len(T.rows) == len(train) + len(infer)


def test_table_metadata() -> None:
    """What is particular to this table (the generic checks of every table: test_published.py)."""
    assert T.id == mod.TABLE_ID and T.publisher == "NVIDIA" and T.kind == "training"
    assert T.url.startswith("https://github.com/NVIDIA/DeepLearningExamples/blob/")
    assert all(f.repository == "NVIDIA/DeepLearningExamples" for f in T.files)
    assert T.files[0].commit in T.url
    assert "21.03" in T.stack and "21.03" in T.engine


def test_rows_are_the_readme_s_configurations() -> None:
    for r in T.rows:
        assert r.slug is not None, r  # every GPU of this table is catalogued
        assert r.model in PRESETS, r
        assert r.gpu_count in (1, 8), r
        assert r.batch_size is not None and r.batch_size > 0, r
        if r.workload == "resnet50-infer":
            assert r.gpu_count == 1 and r.metric in ("images_per_s", "latency_ms"), r
        else:
            assert r.workload == "resnet50-train" and r.metric == "images_per_s", r
        # FP32 storage: TF32 on the Ampere part, IEEE FP32 on Volta / Turing
        if r.slug == "nvidia-a100-sxm4-80gb":
            assert r.precision in ("tf32", "amp_fp16"), r
        else:
            assert r.precision in ("fp32", "amp_fp16"), r


def _pclass(p: str) -> str:
    return "fp32/tf32" if PRECISIONS[p] in ("fp32", "tf32") else PRECISIONS[p]


def _config(r: PublishedRow) -> tuple[object, ...]:
    # training: each GPU's batch is its own (memory-limited) choice; inference sweeps a fixed batch
    batch = r.batch_size if r.workload == "resnet50-infer" else None
    return (r.workload, r.metric, _pclass(r.precision), r.gpu_count, batch)


def test_every_configuration_pairs_across_gpus() -> None:
    by_config: dict[tuple[object, ...], set[str]] = defaultdict(set)
    for r in T.rows:
        assert r.slug is not None
        by_config[_config(r)].add(r.slug)
    for cfg, gpus in by_config.items():
        assert len(gpus) >= 2, (cfg, gpus)
    train = {c: g for c, g in by_config.items() if c[0] == "resnet50-train"}
    assert len(train) == 4 and all(len(g) == 3 for g in train.values())  # A100, V100 16GB, V100 32GB
    infer = {c: g for c, g in by_config.items() if c[0] == "resnet50-infer"}
    assert all(g == {"nvidia-v100-sxm2-16gb", "nvidia-t4"} for g in infer.values())
