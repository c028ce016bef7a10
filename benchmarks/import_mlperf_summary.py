"""Import MLPerf Inference v6.1 from its results summary (``summary.csv``) as a published table
(issue 27).

The round's results repository, ``mlcommons/inference_results_v6.1``, keeps one line per system,
model and scenario in ``summary.csv`` at its root (commit
e777c7be4514bc1e28f657ad7c30167167fb7c41, 297,551 characters). No snapshot of that repository
can be fetched here, so the file was read through the stored-file reader in 16,000-character
pages and each record's fields (all but the accuracy, host core counts, OS, notes, compliance
and power columns) copied into ``data/published/mlperf-inference-v6.1-summary-e777c7b.jsonl``,
twice by independent readers; :func:`check` compares the two copies and tests each record's
``Location`` against its own division, model and scenario. This script turns the checked copy
into ``service/core/evidence/published/mlperf_inference_v6_1.py`` with the selection of
:func:`benchmarks.import_mlperf.inference_rows` (closed division, throughput scenarios,
single-accelerator-type systems, a stated weight data type, no result MLPerf marks ``inferred``:
derived from another scenario, not measured). Re-running it on the same file writes the same
module.

Usage::

    python benchmarks/import_mlperf_summary.py [--check OTHER_COPY.jsonl]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.import_mlperf import INFERENCE_METHOD, _format, inference_rows, write_module  # noqa: E402
from service.core.evidence.published.schema import MLPERF_INFERENCE_MODELS, PublishedRow  # noqa: E402

ROUND = "v6.1"
DATA = ROOT / "data" / "published" / "mlperf-inference-v6.1-summary-e777c7b.jsonl"
OUT = ROOT / "service" / "core" / "evidence" / "published" / "mlperf_inference_v6_1.py"
REPOSITORY = "mlcommons/inference_results_v6.1"
SOURCE_PATH = "summary.csv"
COMMIT = "e777c7be4514bc1e28f657ad7c30167167fb7c41"
KEYS = (
    "Organization",
    "Availability",
    "Division",
    "SystemType",
    "SystemName",
    "Platform",
    "Model",
    "MlperfModel",
    "Scenario",
    "Result",
    "number_of_nodes",
    "host_processor_model_name",
    "accelerator_model_name",
    "accelerators_per_node",
    "total_accelerators",
    "Location",
    "framework",
    "version",
    "inferred",
    "Units",
    "weight_data_types",
)


def records(path: Path = DATA) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _model(rec: Mapping[str, Any]) -> str:
    """The benchmark id: the record's Model, or its MlperfModel where a submitter spelled the
    model its own way (``llama3_1-8b`` for ``llama3.1-8b``)."""
    m = rec["Model"]
    return m if m in MLPERF_INFERENCE_MODELS else rec.get("MlperfModel") or m


def entry(rec: Mapping[str, Any]) -> dict[str, Any]:
    """A summary.csv record in the shape of the older rounds' ``summary_results.json`` entries
    (the fields :func:`benchmarks.import_mlperf.inference_rows` reads)."""
    return {
        "Category": rec["Division"],
        "Scenario": rec["Scenario"],
        "Performance_Units": rec["Units"],
        "Accelerator": rec["accelerator_model_name"],
        "Model": _model(rec),
        "weight_data_types": rec["weight_data_types"],
        "Performance_Result": rec["Result"],
        "Nodes": rec["number_of_nodes"],
        "a#": rec["accelerators_per_node"],
        "Submitter": rec["Organization"],
        "System": rec["SystemName"],
        "Platform": rec["Platform"],
        "Processor": rec["host_processor_model_name"],
        "Software": rec["framework"],
        "ID": rec["Location"].removeprefix("./"),
        "Suite": rec["SystemType"],
        "Availability": rec["Availability"],
        "inferred": rec.get("inferred", "0"),
    }


def select(recs: Iterable[Mapping[str, Any]]) -> tuple[list[PublishedRow], dict[str, int]]:
    """The rows kept and the count skipped by reason (the module docstring's rule)."""
    return inference_rows([entry(rec) for rec in recs], f"mlperf-inference-{ROUND}")


def check(recs: Sequence[Mapping[str, Any]], other: Sequence[Mapping[str, Any]] | None = None) -> list[str]:
    """Problems in the transcription: a record whose Location does not name its own division,
    model and scenario, a missing field, and (given a second, independent copy) every field
    the two copies disagree on."""
    out = []
    for i, rec in enumerate(recs):
        missing = [k for k in KEYS if k not in rec]
        if missing:
            out.append(f"record {i}: missing {missing}")
            continue
        loc = rec["Location"].lower()
        for k in ("Division", "Model", "Scenario"):
            if f"/{str(rec[k]).lower()}/" not in loc + "/":
                out.append(f"record {i}: Location {rec['Location']!r} does not name its {k} {rec[k]!r}")
    if other is not None:
        if len(other) != len(recs):
            out.append(f"the copies hold {len(recs)} and {len(other)} records")
        for i, (a, b) in enumerate(zip(recs, other, strict=False)):
            for k in KEYS:
                if a.get(k) != b.get(k):
                    out.append(f"record {i} {k}: {a.get(k)!r} != {b.get(k)!r}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", metavar="OTHER_COPY", default=None, help="only check, against a second copy")
    a = ap.parse_args(argv)
    recs = records()
    bad = check(recs, records(Path(a.check)) if a.check else None)
    print(f"{len(recs)} records; {len(bad)} problems")
    for line in bad:
        print("  ", line)
    rows, skipped = select(recs)
    print(f"kept {len(rows)}; skipped {skipped}")
    if a.check:
        return 1 if bad else 0
    table_id = f"mlperf-inference-{ROUND}"
    write_module(
        OUT,
        generator="benchmarks/import_mlperf_summary.py",
        table_id=table_id,
        title=f"MLPerf Inference {ROUND}, closed division: throughput per system, model and scenario",
        kind="serving",
        url=f"https://github.com/{REPOSITORY}/blob/{COMMIT}/{SOURCE_PATH}",
        repository=REPOSITORY,
        source_path=SOURCE_PATH,
        commit=COMMIT,
        date="2026",
        date_note=(
            "MLPerf Inference v6.1 (the round after v6.0, published 1 April 2026); its publication "
            "day is not in the material reachable here, so the table is dated by year"
        ),
        stack=(
            f"MLPerf Inference {ROUND} submissions: each row's own software in its `system` (TensorRT / "
            "TensorRT-LLM for NVIDIA, vLLM or PyTorch on ROCm for AMD, ...)"
        ),
        engine=f"mlperf-inference {ROUND.lstrip('v')}",
        method=INFERENCE_METHOD,
        caveats=(
            "Transcribed from the round's summary.csv (benchmarks/import_mlperf_summary.py). Precision is "
            "the submitter's weight data type; the accuracy target (99 or 99.9 % of the reference) is part "
            "of the model id. Latency scenarios, open-division rows and results MLPerf marks inferred are "
            f"not imported. Skipped: {skipped}"
        ),
        rows=rows,
    )
    _format(OUT)
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
