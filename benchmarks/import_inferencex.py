"""Import SemiAnalysis InferenceX results as a published table (issue 27).

InferenceX (formerly InferenceMAX) benchmarks LLM serving continuously on NVIDIA and AMD GPUs
under several engines. Its results reach the public as the InferenceX site's ``/api/benchmarks``
answer; a snapshot of that answer is kept in the site's repository as a test fixture,
``SemiAnalysisAI/InferenceX-app`` ``packages/app/cypress/fixtures/api/benchmarks.json`` at commit
3a600f1d9ce155536d52e2f58f744f27a301aac9 (2.27 M characters, one record per run configuration,
each with the GitHub Actions run that produced it). The repository snapshot reachable here does
not hold the fixture, so it was read through the stored-file reader in 16,000-character pages
and each record's fields copied into ``data/published/inferencex-app-3a600f1.jsonl`` (one line
per record, in file order, with the page it starts on). This script turns that transcription
into ``service/core/evidence/published/inferencex_3a600f1.py``; re-running it on the same file
writes the same module. :func:`check` tests every record's throughput against its own latency
(``output tokens/s per GPU ~ concurrency x output length / (mean end-to-end latency x GPUs)``),
which catches a mistyped digit.

Selection (fixed before any error was computed): single-node, aggregated serving (no disaggregated
prefill, no multi-node), no speculative decoding, pure tensor parallelism (expert parallelism 1,
no data-parallel attention, as many prefill as decode GPUs), a catalogued GPU and a model with a
catalog preset; of the records of one (GPU, engine, model, precision, TP, lengths, concurrency),
the newest. The value is the record's output tokens/s per GPU; a record without that field (the
older schema) has it derived from its total tokens/s per GPU times ``osl / (isl + osl)`` -- the
benchmark draws input and output lengths with the same range ratio, so that is the expected
share (checked on the records with both: :func:`check`).

Usage::

    python benchmarks/import_inferencex.py [--check]
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

from benchmarks.import_mlperf import ROW_FIELDS, write_module  # noqa: E402
from service.core.evidence.published.schema import PublishedRow  # noqa: E402

DATA = ROOT / "data" / "published" / "inferencex-app-3a600f1.jsonl"
OUT = ROOT / "service" / "core" / "evidence" / "published" / "inferencex_3a600f1.py"
TABLE_ID = "inferencex-3a600f1"
REPOSITORY = "SemiAnalysisAI/InferenceX-app"
SOURCE_PATH = "packages/app/cypress/fixtures/api/benchmarks.json"
COMMIT = "3a600f1d9ce155536d52e2f58f744f27a301aac9"

HARDWARE: Mapping[str, tuple[str, str | None]] = {
    # the record's hardware -> (name as the site shows it, catalog slug; None: not catalogued)
    "h100": ("NVIDIA H100 SXM", "nvidia-h100-sxm"),
    "h200": ("NVIDIA H200 SXM", "nvidia-h200-sxm"),
    "b200": ("NVIDIA B200", "nvidia-b200"),
    "b300": ("NVIDIA B300", "nvidia-b300"),
    "gb200": ("NVIDIA GB200 NVL72", "nvidia-gb200"),
    "gb300": ("NVIDIA GB300 NVL72", "nvidia-gb300"),
    "mi300x": ("AMD Instinct MI300X", "amd-mi300x"),
    "mi325x": ("AMD Instinct MI325X", "amd-mi325x"),
    "mi355x": ("AMD Instinct MI355X", "amd-mi355x"),
}
MODELS: Mapping[str, str] = {
    # the record's model -> catalog preset (InferenceX serves DeepSeek-R1-0528, gpt-oss-120b and
    # Llama-3.3-70B-Instruct, which has Llama-3.1-70B's architecture)
    "dsr1": "deepseek-r1",
    "gptoss": "gpt-oss-120b",
    "gpt-oss-120b": "gpt-oss-120b",
    "llama70b": "llama3.1-70b",
    "llama3.3-70b": "llama3.1-70b",
}
PRECISIONS: Mapping[tuple[str, str], str] = {
    # (precision, vendor) -> PRECISIONS key: FP4 is NVFP4 on NVIDIA, MXFP4 on AMD (and gpt-oss's
    # own checkpoint format everywhere)
    ("fp8", "nvidia"): "fp8",
    ("fp8", "amd"): "fp8",
    ("fp4", "nvidia"): "fp4",
    ("fp4", "amd"): "mxfp4",
    ("mxfp4", "nvidia"): "mxfp4",
    ("mxfp4", "amd"): "mxfp4",
    ("bf16", "nvidia"): "bf16",
    ("bf16", "amd"): "bf16",
}


def records(path: Path = DATA) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def output_per_gpu(rec: Mapping[str, Any]) -> tuple[float | None, str]:
    """Output tokens/s per GPU, and how it was obtained."""
    if rec.get("output_tput_per_gpu"):
        return float(rec["output_tput_per_gpu"]), "output_tput_per_gpu"
    if rec.get("tput_per_gpu"):
        share = rec["osl"] / (rec["isl"] + rec["osl"])
        return float(rec["tput_per_gpu"]) * share, "derived: tput_per_gpu x osl / (isl + osl)"
    return None, ""


def _vendor(rec: Mapping[str, Any]) -> str:
    return "amd" if rec["hardware"].startswith("mi") else "nvidia"


def _why_not(rec: Mapping[str, Any]) -> str | None:
    """The selection rule (module docstring): None when the record is kept."""
    if rec.get("disagg") or rec.get("is_multinode"):
        return "disaggregated or multi-node"
    if (rec.get("spec_method") or "none") != "none":
        return "speculative decoding"
    tp = rec.get("decode_tp")
    if rec.get("decode_ep", 1) != 1 or rec.get("decode_dp_attention") or rec.get("num_decode_gpu") != tp:
        return "not pure tensor parallelism"
    if rec.get("num_prefill_gpu") not in (tp, 0) or rec.get("prefill_tp") not in (tp, None):
        return "not pure tensor parallelism"
    if HARDWARE.get(rec["hardware"], ("", None))[1] is None:
        return "GPU not catalogued"
    if rec["model"] not in MODELS:
        return "model not a catalog preset"
    if (rec["precision"], _vendor(rec)) not in PRECISIONS:
        return "precision not modelled"
    if output_per_gpu(rec)[0] is None:
        return "no throughput"
    return None


def _key(rec: Mapping[str, Any]) -> tuple[object, ...]:
    return tuple(
        rec[k] for k in ("hardware", "framework", "model", "precision", "decode_tp", "isl", "osl", "conc")
    )


def select(recs: Iterable[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], dict[str, int]]:
    """The kept records (newest of each configuration) and the count skipped by reason."""
    skipped: dict[str, int] = {}
    newest: dict[tuple[object, ...], Mapping[str, Any]] = {}
    for rec in recs:
        why = _why_not(rec)
        if why:
            skipped[why] = skipped.get(why, 0) + 1
            continue
        k = _key(rec)
        if k in newest:
            why = "an older run of a kept configuration"
            skipped[why] = skipped.get(why, 0) + 1
            if rec["date"] <= newest[k]["date"]:
                continue
        newest[k] = rec
    return sorted(newest.values(), key=lambda r: tuple(map(str, _key(r)))), skipped


def row(rec: Mapping[str, Any]) -> PublishedRow:
    name, slug = HARDWARE[rec["hardware"]]
    value, how = output_per_gpu(rec)
    assert value is not None
    tp = int(rec["decode_tp"])
    return PublishedRow(
        TABLE_ID,
        gpu_name=name,
        slug=slug,
        workload="llm-serve-online",
        model=MODELS[rec["model"]],
        precision=PRECISIONS[(rec["precision"], _vendor(rec))],
        metric="output_tokens_per_s_per_gpu",
        value=round(value, 3),
        gpu_count=tp,
        input_len=int(rec["isl"]),
        output_len=int(rec["osl"]),
        tp=tp,
        concurrency=int(rec["conc"]),
        system=f"{rec['framework']} on {tp} x {name}",
        note=f"{rec['date']}; {rec['run_url']}; {how}",
    )


def check(recs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Selected records whose throughput disagrees with their own latency by more than 25 % (a
    copying slip, or a run with failed requests)."""
    out = []
    for rec in recs:
        if _why_not(rec):
            continue
        v, _ = output_per_gpu(rec)
        e2el, n = rec.get("mean_e2el"), rec.get("num_decode_gpu") or rec.get("decode_tp")
        if not v or not e2el or not n:
            continue
        implied = rec["conc"] * rec["osl"] / (e2el * n)
        if abs(v / implied - 1) > 0.25:
            out.append(f"{_key(rec)} {rec['date']}: {v:.1f} tok/s/GPU vs {implied:.1f} from its latency")
    return out


FIELDS = (*ROW_FIELDS[:8], "input_len", "output_len", "tp", "concurrency", *ROW_FIELDS[8:])
"""MLPerf's row fields, plus the serving configuration a fixed-concurrency row needs."""


_RUN_FIELDS = (
    "hardware", "framework", "model", "precision", "spec_method", "disagg", "is_multinode", "decode_tp",
    "decode_ep", "decode_dp_attention", "num_decode_gpu", "num_prefill_gpu", "isl", "osl", "conc",
)  # fmt: skip


def rerun_spread(recs: Iterable[Mapping[str, Any]]) -> list[float]:
    """max / min - 1 of the total tokens/s per GPU of every configuration run on more than one
    date: how far one published run of a configuration is from another (the band an answer
    anchored on one carries, ``estimate_time.PUBLISHED_TPOT_BAND``)."""
    runs: dict[tuple[Any, ...], list[float]] = {}
    for r in recs:
        if r.get("tput_per_gpu"):
            runs.setdefault(tuple(r.get(k) for k in _RUN_FIELDS), []).append(float(r["tput_per_gpu"]))
    return sorted(max(v) / min(v) - 1.0 for v in runs.values() if len(v) > 1)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only check the transcription")
    ap.add_argument("--reruns", action="store_true", help="print how far reruns of one configuration differ")
    a = ap.parse_args(argv)
    recs = records()
    if a.reruns:
        spread = rerun_spread(recs)
        n = len(spread)
        print(
            f"{n} configurations run more than once: max/min - 1 median {spread[n // 2]:.1%}, "
            f"75th percentile {spread[3 * n // 4]:.1%}, 90th {spread[9 * n // 10]:.1%}, largest {spread[-1]:.1%}; "
            f"within 10 %: {sum(x <= 0.10 for x in spread)}"
        )
        return 0
    bad = check(recs)
    print(f"{len(recs)} records; {len(bad)} disagree with their own latency by > 25 %")
    for line in bad:
        print("  ", line)
    kept, skipped = select(recs)
    print(f"kept {len(kept)}; skipped {skipped}")
    if a.check:
        return 0
    dates = sorted(r["date"] for r in kept)
    first, last = (dates[0], dates[-1]) if dates else ("", "")
    write_module(
        OUT,
        generator="benchmarks/import_inferencex.py",
        publisher="SemiAnalysis",
        fields=FIELDS,
        table_id=TABLE_ID,
        title="SemiAnalysis InferenceX: LLM serving at fixed concurrency per GPU, engine and model",
        kind="serving",
        url=f"https://github.com/{REPOSITORY}/blob/{COMMIT}/{SOURCE_PATH}",
        repository=REPOSITORY,
        source_path=SOURCE_PATH,
        commit=COMMIT,
        date=last,
        date_note=f"each row's run date is in its note (kept runs {first} .. {last}); the table's date is the newest",
        stack=f"InferenceX runs of {first} .. {last} (site snapshot "
        f"{COMMIT[:7]}): each row's engine is the first word of its `system`, as the site names it (trt: "
        "TensorRT-LLM, sglang: SGLang, atom); the engines' builds are not among the fields copied",
        engine=f"inferencex {COMMIT[:7]} (engine per row)",
        method="InferenceX benchmark_serving: a fixed number of concurrent clients (concurrency) sends "
        "random prompts of input length isl and asks for osl output tokens; output tokens/s per GPU of "
        "the tp GPUs of one engine",
        caveats="Transcribed from the site's API snapshot (see benchmarks/import_inferencex.py); the "
        f"newest run of each configuration. Skipped: {skipped}",
        rows=[row(r) for r in kept],
    )
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
