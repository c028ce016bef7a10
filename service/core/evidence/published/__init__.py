"""Imported published benchmark tables (provenance ``published``), each with its source and stack.

Tables are Python literals rather than JSON so they ship with the package without a
package-data entry. Nothing here is measured by this project; the numbers are copied from
the cited source at the cited commit and must not be edited except to re-import.

Registry: :data:`TABLES` lists every table (one source, one software stack each) as a
:class:`PublishedTable` of uniform :class:`PublishedRow` s, so an estimator can iterate them::

    for t in TABLES:
        for r in t.rows:  # r.gpu_name, r.slug, r.workload, r.model, r.precision, r.metric, r.value ...

Tables with ``cross_gpu=False`` are kept for another check (their ``caveats`` say which) and are
skipped by :func:`rows` unless asked for.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from service.core.evidence.published import (
    dle_pt_resnet50,
    dle_tf_resnet50_2006,
    inferencex_3a600f1,
    lambda_pytorch_train,
    lambda_pytorch_train_2020,
    lambda_pytorch_train_2021,
    llm_inference_bench,
    megatron_bridge_25_11,
    mlperf_inference_v5_1,
    mlperf_inference_v6_0,
    mlperf_inference_v6_1,
    mlperf_training_v4_0,
    mlperf_training_v4_1,
    mlperf_training_v5_0,
    mlperf_training_v5_1,
    trtllm_online_v0_14,
    trtllm_perf_v0_9,
    trtllm_perf_v0_12,
    trtllm_perf_v0_14,
    trtllm_perf_v0_17,
    trtllm_perf_v0_20,
    trtllm_perf_v1_0,
    trtllm_perf_v1_1,
)
from service.core.evidence.published.schema import (
    FAMILIES,
    LOWER_IS_BETTER,
    METRICS,
    MLPERF_INFERENCE_MODELS,
    MLPERF_TRAINING_MODELS,
    PRECISIONS,
    WORK_RATES,
    WORKLOADS,
    Family,
    Kind,
    PublishedRow,
    PublishedTable,
    SourceFile,
)

__all__ = [
    "FAMILIES",
    "LOWER_IS_BETTER",
    "METRICS",
    "MLPERF_INFERENCE_MODELS",
    "MLPERF_TRAINING_MODELS",
    "PRECISIONS",
    "TABLES",
    "WORKLOADS",
    "WORK_RATES",
    "Family",
    "Kind",
    "PublishedRow",
    "PublishedTable",
    "SourceFile",
    "get_table",
    "precision_family",
    "rows",
    "summary",
]

TABLES: Final[tuple[PublishedTable, ...]] = (
    lambda_pytorch_train.TABLE,
    lambda_pytorch_train_2020.TABLE,
    lambda_pytorch_train_2021.TABLE,
    dle_tf_resnet50_2006.TABLE,
    dle_pt_resnet50.TABLE,
    megatron_bridge_25_11.TABLE,
    trtllm_perf_v0_9.TABLE,
    trtllm_perf_v0_12.TABLE,
    trtllm_perf_v0_14.TABLE,
    trtllm_perf_v0_17.TABLE,
    trtllm_perf_v0_20.TABLE,
    trtllm_perf_v1_0.TABLE,
    trtllm_perf_v1_1.TABLE,
    trtllm_online_v0_14.TABLE,
    mlperf_training_v4_0.TABLE,
    mlperf_training_v4_1.TABLE,
    mlperf_training_v5_0.TABLE,
    mlperf_training_v5_1.TABLE,
    mlperf_inference_v5_1.TABLE,
    mlperf_inference_v6_0.TABLE,
    mlperf_inference_v6_1.TABLE,
    inferencex_3a600f1.TABLE,
    llm_inference_bench.TABLE,
)
_BY_ID: Final[dict[str, PublishedTable]] = {t.id: t for t in TABLES}


def get_table(table_id: str) -> PublishedTable:
    """The table with this id (``KeyError`` when there is none)."""
    return _BY_ID[table_id]


def precision_family(precision: str) -> Family:
    """``amp_bf16`` -> ``fp16/bf16``, ``tf32`` -> ``tf32``, ... (``KeyError`` for an unknown precision)."""
    return PRECISIONS[precision]


def rows(kind: Kind | None = None, *, include_non_cross_gpu: bool = False) -> Iterator[PublishedRow]:
    """Every row of every table (of ``kind`` when given), tables in :data:`TABLES` order."""
    for t in TABLES:
        if (kind is None or t.kind == kind) and (t.cross_gpu or include_non_cross_gpu):
            yield from t.rows


def summary() -> list[dict[str, object]]:
    """Per table: id, kind, date, rows, GPUs (all / catalogued), and per precision family the
    number of GPU pairs (all / both catalogued) that share at least one configuration (same workload, model, metric,
    lengths, TP, GPU count and offered rate; the batch is each GPU's own choice in these sources)
    -- what a leave-one-GPU-out check can use."""
    out: list[dict[str, object]] = []
    for t in TABLES:
        by_cfg: dict[tuple[object, ...], set[str]] = {}
        for r in t.rows:
            key: tuple[object, ...] = (
                r.family,
                r.workload,
                r.model,
                r.metric,
                r.seq_len,
                r.input_len,
                r.output_len,
                r.tp,
                r.pp,
                r.gpu_count,
                r.request_rate,
                r.concurrency,
            )
            by_cfg.setdefault(key, set()).add(r.gpu_name)
        catalogued = {r.gpu_name for r in t.rows if r.slug}
        pairs: dict[str, set[tuple[str, str]]] = {}
        for cfg, gpus in by_cfg.items():
            g = sorted(gpus)
            pairs.setdefault(str(cfg[0]), set()).update((a, b) for i, a in enumerate(g) for b in g[i + 1 :])
        out.append(
            {
                "id": t.id,
                "kind": t.kind,
                "date": t.date,
                "cross_gpu": t.cross_gpu,
                "rows": len(t.rows),
                "gpus": len(t.gpus()),
                "catalogued_gpus": len(catalogued),
                "pairs_by_family": {f: len(pairs.get(f, set())) for f in FAMILIES},
                "catalogued_pairs_by_family": {
                    f: sum(1 for a, b in pairs.get(f, set()) if a in catalogued and b in catalogued)
                    for f in FAMILIES
                },
            }
        )
    return out
