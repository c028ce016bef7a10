"""Rows from a GPU-per-column throughput table (shared by the TensorRT-LLM table modules).

The data block has one line per table row: ``model tp input_len output_len v1 .. vN`` with ``-``
for an empty cell, values exactly as published (thousands separators removed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final

from service.core.evidence.published.schema import PublishedRow, parse_number


@dataclass(frozen=True, slots=True)
class Column:
    gpu_name: str  # as the source's header names it
    slug: str | None
    precision: str
    kv_cache_dtype: str | None
    gpu_assumption: str = ""
    note: str = ""


def column_rows(
    table_id: str, data: str, columns: Sequence[Column], *, workload: str, metric: str, note: str = ""
) -> list[PublishedRow]:
    rows: list[PublishedRow] = []
    for line in data.strip().splitlines():
        parts = line.split()
        model, tp, isl, osl = parts[0], int(parts[1]), int(parts[2]), int(parts[3])
        cells = parts[4:]
        if len(cells) != len(columns):
            raise ValueError(f"{len(cells)} values for {len(columns)} columns: {line!r}")
        for col, cell in zip(columns, cells, strict=True):
            value = None if cell == "-" else parse_number(cell)
            if value is None:
                continue
            rows.append(
                PublishedRow(
                    table_id=table_id,
                    gpu_name=col.gpu_name,
                    slug=col.slug,
                    workload=workload,
                    model=model,
                    precision=col.precision,
                    metric=metric,
                    value=value,
                    gpu_count=tp,
                    input_len=isl,
                    output_len=osl,
                    tp=tp,
                    kv_cache_dtype=col.kv_cache_dtype,
                    gpu_assumption=col.gpu_assumption,
                    note=" ".join(s for s in (note, col.note) if s),
                )
            )
    return rows


LLAMA33_ON_31: Final = " (Llama 3.3 70B: Llama 3.1 70B's architecture)"
"""Said of a Llama 3.3 70B checkpoint carried by the ``llama3.1-70b`` preset."""


def with_checkpoints(
    rows: Sequence[PublishedRow], checkpoints: Mapping[tuple[str, str], str]
) -> tuple[PublishedRow, ...]:
    """Each row with the checkpoint its page lists for its (preset, precision) first in its note
    (the Perf Overview pages from v0.20 on name NVIDIA's quantized checkpoints)."""
    out: list[PublishedRow] = []
    for r in rows:
        ckpt = checkpoints[(r.model, r.precision)]
        if r.model == "llama3.1-70b" and "3.3-70B" in ckpt:
            ckpt += LLAMA33_ON_31
        out.append(replace(r, note="; ".join(s for s in (f"checkpoint {ckpt}", r.note) if s)))
    return tuple(out)
