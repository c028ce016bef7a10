"""Rows from Lambda's ``deeplearning-benchmark`` CSV files (shared by the Lambda table modules).

The CSV lines are embedded verbatim (header included) so a re-import is a plain diff against the
source file; only the single-GPU rows a table uses are kept.
"""

from __future__ import annotations

from collections.abc import Mapping

from service.core.evidence.published.schema import PublishedRow

# Lambda column -> (workload id, model preset, metric, training seq_len)
LAMBDA_WORKLOADS: dict[str, tuple[str, str, str, int | None]] = {
    "resnet50": ("resnet50-train", "resnet50", "images_per_s", None),
    "bert_large_squad": ("bert-large-squad-finetune", "bert-large", "sequences_per_s", 384),
    "bert_base_squad": ("bert-base-squad-finetune", "bert-base", "sequences_per_s", 384),
}


def parse_csv(text: str) -> dict[str, dict[str, float]]:
    """``name_gpu`` -> column -> value for a Lambda CSV block (header line first)."""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    header = lines[0].split(",")
    out: dict[str, dict[str, float]] = {}
    for ln in lines[1:]:
        cells = ln.split(",")
        if len(cells) != len(header):
            raise ValueError(f"column count differs from the header: {ln!r}")
        out[cells[0]] = {h: float(c) for h, c in zip(header[1:], cells[1:], strict=True)}
    return out


def lambda_rows(
    table_id: str,
    throughput: Mapping[str, Mapping[str, float]],
    batch: Mapping[str, Mapping[str, float]],
    gpus: Mapping[str, tuple[str, str | None, str]],
    precision_of: Mapping[str, str],
    *,
    skip: frozenset[tuple[str, str]] = frozenset(),
    batch_note: Mapping[str, str] | None = None,
    note: str = "",
) -> list[PublishedRow]:
    """One row per (GPU, workload) with a positive published throughput.

    ``gpus``: CSV name -> (display name, catalog slug or None, gpu_assumption).
    ``precision_of``: CSV name -> precision key for this precision table.
    ``skip``: (CSV name, column) pairs left out (the module says why).
    """
    rows: list[PublishedRow] = []
    for csv_name, (name, slug, assumption) in gpus.items():
        for col, (workload, model, metric, seq_len) in LAMBDA_WORKLOADS.items():
            if (csv_name, col) in skip:
                continue
            value = throughput[csv_name][col]
            if value <= 0:
                continue
            bs = int(batch[csv_name][col])
            rows.append(
                PublishedRow(
                    table_id=table_id,
                    gpu_name=name,
                    slug=slug,
                    workload=workload,
                    model=model,
                    precision=precision_of[csv_name],
                    metric=metric,
                    value=value,
                    gpu_count=1,
                    batch_size=bs if bs > 0 else None,
                    seq_len=seq_len,
                    gpu_assumption=assumption,
                    note=" ".join(s for s in (note, (batch_note or {}).get(csv_name, "")) if s),
                )
            )
    return rows
