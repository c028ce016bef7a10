"""Rows of a DeepLearningExamples ResNet-50 README's performance tables (shared by the
TensorFlow and PyTorch table modules).

``training`` has one line per table cell, ``gpu precision gpus batch_per_gpu images_per_s``;
``inference`` one per batch size, ``gpu precision batch images_per_s latency_ms``; ``gpus`` maps the
short GPU key to (name as published, catalog slug, assumption), values exactly as published.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from service.core.evidence.published.schema import PublishedRow


@dataclass(frozen=True, slots=True)
class Notes:
    """What each row's note says: of a training cell, of a multi-GPU one besides, of inference."""

    training: str
    data_parallel: str
    inference: str


def resnet_rows(
    table_id: str,
    gpus: Mapping[str, tuple[str, str | None, str]],
    training: str,
    inference: str,
    notes: Notes,
) -> tuple[PublishedRow, ...]:
    """Training rows (``resnet50-train``, images/s of ``gpus`` GPUs) and, per batch size, an
    inference throughput and latency row (``resnet50-infer``, one GPU)."""
    rows: list[PublishedRow] = []
    for line in training.strip().splitlines():
        g, prec, n, bs, value = line.split()
        name, slug, assumption = gpus[g]
        rows.append(
            PublishedRow(
                table_id=table_id,
                gpu_name=name,
                slug=slug,
                workload="resnet50-train",
                model="resnet50",
                precision=prec,
                metric="images_per_s",
                value=float(value),
                gpu_count=int(n),
                batch_size=int(bs),
                gpu_assumption=assumption,
                note=notes.training + ("" if n == "1" else f"; {notes.data_parallel}"),
            )
        )
    for line in inference.strip().splitlines():
        g, prec, bs, thr, lat = line.split()
        name, slug, assumption = gpus[g]
        for metric, value in (("images_per_s", thr), ("latency_ms", lat)):
            rows.append(
                PublishedRow(
                    table_id=table_id,
                    gpu_name=name,
                    slug=slug,
                    workload="resnet50-infer",
                    model="resnet50",
                    precision=prec,
                    metric=metric,
                    value=float(value),
                    gpu_count=1,
                    batch_size=int(bs),
                    gpu_assumption=assumption,
                    note=notes.inference,
                )
            )
    return tuple(rows)
