"""Import MLPerf Training v4.0-v5.1 and MLPerf Inference v5.1 and v6.0 results as published tables (issue 27).

Reads a snapshot of the mlcommons results repositories (a bare git directory, e.g. the one the
``fetch`` tool leaves at ``/work/.mirror/mlcommons+training_results_v5.0/repo``) at the commit
given, and writes one module per round to ``service/core/evidence/published/`` with
``published`` provenance. Re-running it on the same commits writes the same files.

Training (``<submitter>/results/<system>/<benchmark>/result_*.txt`` with
``<submitter>/systems/<system>.json``): each result file is one run; its time to train is
``run_stop - run_start`` of the MLPerf log (``:::MLLOG`` lines, milliseconds), counted only when
``run_stop`` says ``success``. The row's value is MLPerf's own score: drop the fastest and the
slowest run, mean of the rest (with fewer than 3 converged runs, the mean); beside it the runs'
work rate (samples or epochs at ``run_stop`` over that time). The recipe is not stated; where every
one of the submitter's ``config_<GPU>_<nodes>x<per node>x*.sh`` files for the system's layout is an
NVFP4 recipe -- or, where the submitter named a configuration file for the system itself
(``config_<system>[_*].sh``), that file is -- or where the runs' logs print their configuration
with ``fp4: true``, the row says ``submitter-nvfp4`` (:func:`recipes`, :func:`system_recipes`,
:func:`logged_nvfp4`). Closed division only
(the open division may change the model). Every row carries its system description (submitter,
system, nodes x accelerators, host CPU, framework) in ``system``; the framework is the stack.

Inference (``summary_results.json`` at the repository root: one entry per system, model and
scenario, with the submitter's accelerator, count, software and weight data type): closed
division, throughput scenarios only (Offline, Server, Interactive; the latency scenarios of the
edge suite are left out), single-accelerator-type systems only, measured results only (MLPerf's
``inferred`` flag marks a result derived from another scenario). v6.0 is read from a fork that
carries MLCommons' results commits unchanged (``gbeezybez/inference_results_v6.0``; its own later
commits touch only the open division), at MLCommons' last commit there.

Usage::

    python benchmarks/import_mlperf.py training /work/.mirror/mlcommons+training_results_v5.0/repo v5.0
    python benchmarks/import_mlperf.py inference /work/.mirror/mlcommons+inference_results_v5.1/repo v5.1
    python benchmarks/import_mlperf.py inference /work/.mirror/gbeezybez+inference_results_v6.0/repo v6.0 \
        --commit 4d3916ac9cf474b679cdfcf492d43a0559418ad1 --repository gbeezybez/inference_results_v6.0
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from service.core.evidence.published.schema import (  # noqa: E402
    MLPERF_INFERENCE_MODELS,
    MLPERF_TRAINING_MODELS,
    PublishedRow,
)

OUT_DIR = ROOT / "service" / "core" / "evidence" / "published"

# --------------------------------------------------------------------------------------------
# Accelerator names as submitted -> catalog slug (None: not catalogued; the name stays the identity)
# --------------------------------------------------------------------------------------------

_SLUGS: tuple[tuple[str, str | None], ...] = (
    # order matters: the first pattern that matches wins
    (r"GB300", "nvidia-gb300"),
    (r"GB200", "nvidia-gb200"),
    (r"B300", "nvidia-b300"),
    (r"B200", "nvidia-b200"),
    (r"GH200.*144", "nvidia-gh200-144gb"),
    (r"GH200", "nvidia-gh200-96gb"),
    (r"H200.?NVL", "nvidia-h200-nvl"),
    (r"H200", "nvidia-h200-sxm"),
    (r"H100.?NVL", "nvidia-h100-nvl-94gb"),
    (r"H100.?PCIe", "nvidia-h100-pcie"),
    (r"H100", "nvidia-h100-sxm"),
    (r"A100.*PCIe.*80", "nvidia-a100-pcie-80gb"),
    (r"A100.*SXM4.*80", "nvidia-a100-sxm4-80gb"),
    (r"L40S", "nvidia-l40s"),
    (r"\bL40\b", "nvidia-l40"),
    (r"\bL4\b", "nvidia-l4"),
    (r"RTX 4090", "nvidia-rtx-4090"),
    (r"RTX A5000", "nvidia-rtx-a5000"),
    (r"RTX PRO 6000 Blackwell Server|RTX Pro 6000 SE", "nvidia-rtx-pro-6000-blackwell-server"),
    (r"MI355X", "amd-mi355x"),
    (r"MI350X", "amd-mi350x"),
    (r"MI325X", "amd-mi325x"),
    (r"MI300X", "amd-mi300x"),
    (r"Gaudi\(R\) 2|Gaudi 2|Gaudi2", "intel-gaudi2"),
    (r"Gaudi\(R\) 3|Gaudi 3|Gaudi3", "intel-gaudi3"),
)


def slug_for(name: str) -> str | None:
    """The catalog slug of an accelerator as submitted; None for one the catalog lacks, and for a
    part run under a power cap below its rating (its datasheet figures are not the ones it ran at)."""
    if re.search(r"power\s*cap", name, re.IGNORECASE):
        return None
    for pat, slug in _SLUGS:
        if re.search(pat, name, re.IGNORECASE):
            return slug
    return None


def clean_name(name: str) -> str:
    """The accelerator as published, without the 'Virtualized' prefix (same part, a VM around it)."""
    return re.sub(r"^Virtualized\s+", "", name.strip())


# --------------------------------------------------------------------------------------------
# Git snapshot access
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Snapshot:
    git_dir: str
    commit: str

    def files(self) -> list[str]:
        out = subprocess.run(
            ["git", "-C", self.git_dir, "ls-tree", "-r", "--name-only", self.commit],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return out.splitlines()

    def read(self, path: str) -> str | None:
        """The file's text, or None when the snapshot lists it but does not hold it (its largest
        files may be absent)."""
        r = subprocess.run(
            ["git", "-C", self.git_dir, "show", f"{self.commit}:{path}"],
            capture_output=True,
            text=True,
            errors="replace",
            check=False,
        )
        return r.stdout if r.returncode == 0 else None


def resolve(git_dir: str, rev: str = "HEAD") -> str:
    return subprocess.run(
        ["git", "-C", git_dir, "rev-parse", rev], capture_output=True, text=True, check=True
    ).stdout.strip()


# --------------------------------------------------------------------------------------------
# Training: MLPerf logs
# --------------------------------------------------------------------------------------------

_MLLOG = re.compile(r":::MLLOG\s+(\{.*\})\s*$")


def parse_mllog(text: str) -> dict[str, Any]:
    """run_start / run_stop times (ms), the stop status, the benchmark and the global batch of
    one MLPerf result log; keys absent when the log lacks them."""
    out: dict[str, Any] = {}
    for line in text.splitlines():
        m = _MLLOG.search(line)
        if not m:
            continue
        try:
            ev = json.loads(m.group(1))
        except json.JSONDecodeError:
            continue
        key = ev.get("key")
        meta = ev.get("metadata") or {}
        if key == "run_start" and "run_start_ms" not in out:
            out["run_start_ms"] = int(ev["time_ms"])
        elif key == "run_stop":
            out["run_stop_ms"] = int(ev["time_ms"])
            out["status"] = meta.get("status")
            out.update(_work(meta) or {})
        elif key == "eval_accuracy" and "run_stop_ms" not in out:
            out.update(_work(meta) or {})
        elif key == "submission_benchmark":
            out["benchmark"] = ev.get("value")
        elif key == "global_batch_size" and "global_batch_size" not in out:
            out["global_batch_size"] = ev.get("value")
    return out


WORK_METRICS: Final = {"samples_count": "train_samples_per_s", "epoch_num": "train_epochs_per_s"}
"""The work a run logs with its progress -> the work-rate metric of its rows."""


def _work(meta: dict[str, Any]) -> dict[str, Any] | None:
    """The work done by a log event's point (samples, else epochs): run_stop carries it, else the
    last evaluation before it."""
    for key, metric in WORK_METRICS.items():
        v = meta.get(key)
        if isinstance(v, int | float) and not isinstance(v, bool) and v > 0:
            return {"work": float(v), "work_metric": metric}
    return None


def run_work_rate(log: dict[str, Any]) -> tuple[str, float] | None:
    """Work per second of one converged run to its quality target (samples or epochs over run_start
    to run_stop): the speed of the system, where time to train also counts how much work the
    submitter's global batch and hyper-parameters needed to converge."""
    minutes = run_minutes(log)
    if minutes is None or "work" not in log:
        return None
    return str(log["work_metric"]), float(log["work"]) / (minutes * 60.0)


def run_minutes(log: dict[str, Any]) -> float | None:
    """Time to train of one converged run in minutes (None when it did not converge)."""
    if log.get("status") != "success" or "run_start_ms" not in log or "run_stop_ms" not in log:
        return None
    ms = log["run_stop_ms"] - log["run_start_ms"]
    return ms / 60000.0 if ms > 0 else None


def olympic_mean(xs: Sequence[float]) -> float:
    """MLPerf's score of a set of runs: drop the fastest and the slowest, mean of the rest."""
    s = sorted(xs)
    if len(s) >= 3:
        s = s[1:-1]
    return sum(s) / len(s)


def _int(v: object, default: int = 1) -> int:
    """A count as the summaries write it: ``8``, ``"8"`` or ``8.0`` (v4.1 writes accelerators per
    node as a float); ``default`` when it is missing or not a whole number."""
    try:
        x = float(str(v).strip())
    except ValueError:
        return default
    return int(x) if x.is_integer() and x >= 0 else default


def system_text(d: dict[str, Any], nodes: int, per_node: int, result_dir: str) -> str:
    host = str(d.get("host_processor_model_name", "")).strip()
    fw = " ".join(str(d.get("framework", "")).split())
    return (
        f"{d.get('submitter', '').strip()} {d.get('system_name', '').strip()} ({result_dir}): {nodes} x "
        f"{per_node} {d.get('accelerator_model_name', '').strip()}; host {host or 'not stated'}; framework "
        f"{fw or 'not stated'}"
    )


_CONFIG = re.compile(
    r"^(?P<sub>[^/]+)/benchmarks/(?P<bench>[^/]+)/implementations/[^/]+/(?P<name>config_[^/]+\.sh)$"
)
_LAYOUT = re.compile(r"^config_(?P<gpu>[A-Za-z0-9-]+)_(?P<nodes>\d+)x(?P<per>\d+)x")


def _is_fp4(name: str, text: str) -> bool:
    """An NVFP4 training recipe: the file says so in its name or sources / sets it."""
    return (
        name.endswith("_fp4.sh")
        or "config_common_fp4.sh" in text
        or re.search(r"\bFP4=(True|1)\b", text) is not None
    )


_LOG_FP4: Final = re.compile(r"(?m)^\s*(?:\d+:\s*)?fp4:\s*(true|false)\s*$")
"""The ``fp4:`` line of the NeMo configuration some result logs print (rank-prefixed)."""


def logged_nvfp4(texts: Sequence[str]) -> bool:
    """The runs' own logs print their configuration with FP4 on, and nowhere off."""
    said = {v for t in texts for v in _LOG_FP4.findall(t)}
    return said == {"true"}


def recipes(snap: Snapshot, files: Sequence[str]) -> dict[tuple[str, str, str, int, int], str]:
    """(submitter, benchmark, slug, nodes, GPUs per node) -> ``submitter-nvfp4`` where every one of
    the submitter's own configuration files for that layout (``config_<GPU>_<nodes>x<per node>x...``
    of the benchmark, those tagged with the benchmark's size where any are) is an NVFP4 recipe. A
    layout with any other file keeps ``submitter``: the result log does not say which ran."""
    found: dict[tuple[str, str, str, int, int], list[tuple[str, bool]]] = {}
    for f in files:
        m = _CONFIG.match(f)
        lay = _LAYOUT.match(m.group("name")) if m else None
        slug = slug_for(lay.group("gpu")) if lay else None
        if m is None or lay is None or slug is None:
            continue
        key = (m.group("sub"), m.group("bench"), slug, int(lay.group("nodes")), int(lay.group("per")))
        found.setdefault(key, []).append((m.group("name"), _is_fp4(m.group("name"), snap.read(f) or "")))
    out: dict[tuple[str, str, str, int, int], str] = {}
    for key, configs in found.items():
        size = key[1].rsplit("_", 1)[-1]  # llama31_8b -> 8b: its configs share a directory with 405b's
        tagged = [c for c in configs if f"_{size}" in c[0]] or configs
        if all(fp4 for _, fp4 in tagged):
            out[key] = "submitter-nvfp4"
    return out


def system_recipes(
    snap: Snapshot, files: Sequence[str], results: Iterable[tuple[str, str, str]]
) -> dict[tuple[str, str, str], str]:
    """(submitter, system, benchmark) of ``results`` -> the recipe of the configuration file named
    for that system (``config_<system>.sh`` or ``config_<system>_<layout>.sh`` in the submitter's
    implementation of the benchmark, as Dell and Supermicro name theirs): ``submitter-nvfp4``
    where every such file is an NVFP4 recipe, ``submitter`` where any is not. It names the
    system's own configuration, so it decides over :func:`recipes`' layout rule."""
    configs: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for f in files:
        m = _CONFIG.match(f)
        if m:
            configs.setdefault((m.group("sub"), m.group("bench")), []).append((m.group("name"), f))
    out: dict[tuple[str, str, str], str] = {}
    for sub, system, bench in results:
        named = [
            (name, path)
            for name, path in configs.get((sub, bench), [])
            if name == f"config_{system}.sh" or name.startswith(f"config_{system}_")
        ]
        if named:
            fp4 = all(_is_fp4(name, snap.read(path) or "") for name, path in named)
            out[(sub, system, bench)] = "submitter-nvfp4" if fp4 else "submitter"
    return out


def training_rows(snap: Snapshot, table_id: str) -> tuple[list[PublishedRow], dict[str, int]]:
    files = snap.files()
    systems: dict[tuple[str, str], str] = {}
    for f in files:
        m = re.match(r"^([^/]+)/systems/([^/]+)\.json$", f)
        if m:
            systems[(m.group(1), m.group(2))] = f
    runs: dict[tuple[str, str, str], list[str]] = {}
    for f in files:
        m = re.match(r"^([^/]+)/results/([^/]+)/([^/]+)/result_\d+\.txt$", f)
        if m:
            runs.setdefault((m.group(1), m.group(2), m.group(3)), []).append(f)
    skipped: dict[str, int] = {}
    recipe_of = recipes(snap, files)
    recipe_of_system = system_recipes(snap, files, runs)

    def skip(why: str) -> None:
        skipped[why] = skipped.get(why, 0) + 1

    rows: list[PublishedRow] = []
    seen: set[tuple[str, str, str, float]] = set()
    for (sub, system, bench), paths in sorted(runs.items()):
        if bench not in MLPERF_TRAINING_MODELS:
            skip(f"benchmark not mapped ({bench})")
            continue
        sys_path = systems.get((sub, system))
        if sys_path is None:
            skip("no system description")
            continue
        d = json.loads(snap.read(sys_path) or "{}")
        if str(d.get("division", "closed")).strip().lower() != "closed":
            skip("open division")
            continue
        accel = clean_name(str(d.get("accelerator_model_name", "")))
        if not accel:
            skip("no accelerator named")
            continue
        nodes, per_node = _int(d.get("number_of_nodes")), _int(d.get("accelerators_per_node"))
        slug = slug_for(accel)
        recipe = recipe_of_system.get(
            (sub, system, bench), recipe_of.get((sub, bench, slug or "", nodes, per_node), "submitter")
        )
        texts = [snap.read(p) for p in paths]
        if any(t is None for t in texts):
            skip("result logs absent from the snapshot")
            continue
        if logged_nvfp4([t or "" for t in texts]):  # the runs' own logs say so
            recipe = "submitter-nvfp4"
        logs = [parse_mllog(t or "") for t in texts]
        minutes = [m for m in (run_minutes(x) for x in logs) if m is not None]
        if not minutes:
            skip("no converged run")
            continue
        gbs = {x.get("global_batch_size") for x in logs if x.get("global_batch_size")}
        score = round(olympic_mean(minutes), 4)
        same = (sub, str(d.get("system_name", "")).strip(), bench, score)
        if same in seen:  # the same runs filed twice (e.g. a power-measurement copy of the directory)
            skip("same system and runs under another result directory")
            continue
        seen.add(same)
        where = (
            f"global batch {', '.join(str(g) for g in sorted(gbs, key=str)) or 'not logged'}; "
            f"results/{system}/{bench}; status {str(d.get('status', '')).strip() or 'not stated'}"
        )
        row = PublishedRow(
            table_id=table_id,
            gpu_name=accel,
            slug=slug,
            workload=f"mlperf-train-{bench}",
            model=f"mlperf/{bench}",
            precision=recipe,
            metric="minutes_to_train",
            value=score,
            gpu_count=nodes * per_node,
            system=system_text(d, nodes, per_node, system),
            note=f"{len(minutes)} of {len(logs)} runs converged; score = mean without fastest and slowest; {where}",
        )
        rows.append(row)
        rows += _work_rate_row(row, logs, len(minutes), where)
    return rows, skipped


def _work_rate_row(
    row: PublishedRow, logs: Sequence[dict[str, Any]], converged: int, where: str
) -> list[PublishedRow]:
    """The time-to-train row's work rate: one more row where every converged run logged its work
    in one unit (samples or epochs), else none."""
    rates = [w for w in (run_work_rate(x) for x in logs) if w is not None]
    units = {u for u, _ in rates}
    if len(rates) != converged or len(units) != 1:
        return []
    note = (
        f"work per second to the quality target (logged at run_stop) of {len(rates)} converged runs; "
        f"mean without fastest and slowest; {where}"
    )
    return [replace(row, metric=units.pop(), value=_round(olympic_mean([v for _, v in rates])), note=note)]


def _round(v: float) -> float:
    """Six significant figures: rates span 1e-4 (epochs/s) to 1e5 (samples/s)."""
    return float(f"{v:.6g}")


# --------------------------------------------------------------------------------------------
# Inference: summary_results.json
# --------------------------------------------------------------------------------------------

_UNITS = {"Tokens/s": "output_tokens_per_s", "Samples/s": "samples_per_s", "Queries/s": "queries_per_s"}
_SCENARIOS = {
    "Offline": "mlperf-infer-offline",
    "Server": "mlperf-infer-server",
    "Interactive": "mlperf-infer-interactive",
}


def inference_precision(weight_data_types: str) -> str | None:
    """The submitter's weight data type -> a precision key (None: not stated). For the SDXL
    pipelines that list one type per component, the UNet's (where the FLOPs are)."""
    w = weight_data_types.strip()
    m = re.search(r"unet'?\s*:\s*'?(\w+)", w)
    if m:
        w = m.group(1)
    w = w.split(",")[0].strip().lower()
    return {
        "fp32": "fp32",
        "fp16": "fp16",
        "bf16": "bf16",
        "fp8": "fp8",
        "fp4": "fp4",
        "mxfp4": "mxfp4",
        "int8": "int8",
        "uint8": "int8",
        "int4": "int4",
        "uint4": "int4",
    }.get(w)


def inference_rows(
    entries: Iterable[dict[str, Any]], table_id: str
) -> tuple[list[PublishedRow], dict[str, int]]:
    skipped: dict[str, int] = {}

    def skip(why: str) -> None:
        skipped[why] = skipped.get(why, 0) + 1

    rows: list[PublishedRow] = []
    for e in entries:
        if e.get("Category") != "closed":
            skip("open division")
            continue
        wl = _SCENARIOS.get(str(e.get("Scenario")))
        metric = _UNITS.get(str(e.get("Performance_Units")))
        if wl is None or metric is None:
            skip("latency scenario")
            continue
        if str(e.get("inferred", 0)) not in ("0", ""):
            skip("inferred from another scenario")
            continue
        accel = clean_name(str(e.get("Accelerator", "")))
        if accel in ("", "N/A") or "(x" in accel or " + " in accel or " and " in accel:
            skip("no accelerator, or a mix of accelerators")
            continue
        model = str(e.get("Model"))
        if model not in MLPERF_INFERENCE_MODELS:
            skip(f"model not mapped ({model})")
            continue
        prec = inference_precision(str(e.get("weight_data_types", "")))
        if prec is None:
            skip("weight data type not stated")
            continue
        value = float(e.get("Performance_Result") or 0)
        if value <= 0:
            skip("no result")
            continue
        nodes, per_node = _int(e.get("Nodes")), _int(e.get("a#"))
        rows.append(
            PublishedRow(
                table_id=table_id,
                gpu_name=accel,
                slug=slug_for(accel),
                workload=wl,
                model=f"mlperf/{model}",
                precision=prec,
                metric=metric,
                value=value,
                gpu_count=nodes * per_node,
                system=(
                    f"{e.get('Submitter')} {e.get('System')} ({e.get('Platform')}): {nodes} x {per_node} "
                    f"{accel}; host {e.get('Processor')}; software {' '.join(str(e.get('Software', '')).split())}"
                ),
                note=f"{e.get('ID')}; {e.get('Suite')}; weight data types {e.get('weight_data_types')}; {e.get('Availability')}",
            )
        )
    return rows, skipped


# --------------------------------------------------------------------------------------------
# Module writer
# --------------------------------------------------------------------------------------------

ROW_FIELDS = (
    "gpu_name",
    "slug",
    "workload",
    "model",
    "precision",
    "metric",
    "value",
    "gpu_count",
    "system",
    "note",
)


def _row_literal(r: PublishedRow, fields: Sequence[str] = ROW_FIELDS) -> str:
    args = ", ".join(f"{f}={getattr(r, f)!r}" for f in fields)
    return f"    _r({args}),"


def write_module(
    path: Path,
    *,
    generator: str = "benchmarks/import_mlperf.py",
    publisher: str = "MLCommons",
    fields: Sequence[str] = ROW_FIELDS,
    table_id: str,
    title: str,
    kind: str,
    url: str,
    repository: str,
    source_path: str,
    commit: str,
    date: str,
    date_note: str,
    stack: str,
    engine: str,
    method: str,
    caveats: str,
    rows: Sequence[PublishedRow],
) -> None:
    const = "TABLE"
    body = "\n".join(_row_literal(r, fields) for r in rows)
    path.write_text(
        f'''"""{title} (generated by ``{generator}``; do not edit, re-import)."""

from __future__ import annotations

from functools import partial
from typing import Final

from service.core.evidence.published.schema import PublishedRow, PublishedTable, SourceFile

TABLE_ID: Final = {table_id!r}
_r = partial(PublishedRow, TABLE_ID)

ROWS: Final[tuple[PublishedRow, ...]] = (
{body}
)

{const}: Final = PublishedTable(
    id=TABLE_ID,
    title={title!r},
    kind={kind!r},
    publisher={publisher!r},
    url={url!r},
    files=(SourceFile({repository!r}, {source_path!r}, {commit!r}),),
    date={date!r},
    date_note={date_note!r},
    stack={stack!r},
    engine={engine!r},
    method={method!r},
    caveats={caveats!r},
    rows=ROWS,
)
'''
    )


TRAINING_DATES = {
    "v4.0": ("2024-06-12", "MLPerf Training v4.0 results published 12 June 2024 (MLCommons announcement)"),
    "v4.1": (
        "2024-11-13",
        "MLPerf Training v4.1 results published 13 November 2024 (MLCommons announcement)",
    ),
    "v5.0": ("2025-06-04", "MLPerf Training v5.0 results published 4 June 2025 (MLCommons announcement)"),
    "v5.1": (
        "2025-11-12",
        "MLPerf Training v5.1 results published 12 November 2025 (MLCommons announcement)",
    ),
}
INFERENCE_DATES = {
    "v5.1": (
        "2025-09-09",
        "MLPerf Inference v5.1 results published 9 September 2025 (the results commit's date)",
    ),
    "v6.0": (
        "2026-03-26",
        "MLPerf Inference v6.0 results published 26 March 2026 (MLCommons' 'Publishing Results' commit "
        "ab33b21; summary_results.json is the same blob at the commit read)",
    ),
}


def import_training(git_dir: str, round_: str, out_dir: Path = OUT_DIR) -> Path:
    commit = resolve(git_dir)
    tag = round_.replace(".", "_")
    table_id = f"mlperf-training-{round_}"
    rows, skipped = training_rows(Snapshot(git_dir, commit), table_id)
    date, date_note = TRAINING_DATES[round_]
    path = out_dir / f"mlperf_training_{tag}.py"
    write_module(
        path,
        table_id=table_id,
        title=f"MLPerf Training {round_}, closed division: time to train and work rate per system and benchmark",
        kind="training",
        url=f"https://github.com/mlcommons/training_results_{round_}/tree/{commit}",
        repository=f"mlcommons/training_results_{round_}",
        source_path="<submitter>/results/<system>/<benchmark>/result_*.txt, <submitter>/systems/<system>.json",
        commit=commit,
        date=date,
        date_note=date_note,
        stack=(
            f"MLPerf Training {round_} submissions: each row's own framework and host in its `system` "
            "(NVIDIA NGC PyTorch/NeMo/MXNet/HugeCTR, AMD ROCm PyTorch, Intel Gaudi PyTorch, tinygrad)"
        ),
        engine=f"mlperf-training {round_.lstrip('v')}",
        method=(
            "time to train = run_stop - run_start of each result log (converged runs only); MLPerf's score: "
            "drop the fastest and slowest run, mean of the rest; whole system of gpu_count accelerators. "
            "Beside each score, where every converged run logs its progress, its work rate: the samples "
            "(train_samples_per_s) or epochs (train_epochs_per_s) the log counts at run_stop over that "
            "time, the same mean of the runs"
        ),
        caveats=(
            "Precision is the submitter's recipe and not stated in the system description (precision "
            "'submitter'), except where the configuration file named for the system, or else every one "
            "of the submitter's own configuration files for the system's layout, is an NVFP4 recipe, or "
            "the runs' logs print fp4: true ('submitter-nvfp4'); "
            "global batch and hyper-parameters are each submitter's choice within the rules, so epochs "
            "to converge differ between rows (the work-rate rows take that out: they compare "
            "speed, not convergence); convergence noise is a few percent. Rows of accelerators the "
            f"catalog lacks (TPU, Radeon) keep slug None. Skipped: {skipped}"
        ),
        rows=rows,
    )
    _format(path)
    print(f"{table_id}: {len(rows)} rows -> {path}; skipped {skipped}")
    return path


def _format(path: Path) -> None:
    """Format the written module as the repository's checks want (ruff from this environment)."""
    ruff = Path(sys.executable).with_name("ruff")
    if ruff.exists():
        subprocess.run([str(ruff), "format", "-q", str(path)], check=False)


INFERENCE_METHOD = (
    "MLPerf LoadGen: Offline = all queries at once (throughput), Server = Poisson arrivals at the "
    "highest rate meeting the latency bound, Interactive = Server with tighter LLM latency bounds; "
    "the whole system of gpu_count accelerators; Tokens/s counts generated tokens"
)
"""How MLPerf Inference measures a row (every round's table says it)."""


def import_inference(
    git_dir: str, round_: str, out_dir: Path = OUT_DIR, rev: str = "HEAD", repository: str | None = None
) -> Path:
    """One round's table from ``summary_results.json`` at ``rev`` of ``git_dir``; ``repository``
    names where that commit is published when it is not MLCommons' own repository (a fork that
    carries MLCommons' results commits unchanged)."""
    commit = resolve(git_dir, rev)
    repository = repository or f"mlcommons/inference_results_{round_}"
    tag = round_.replace(".", "_")
    table_id = f"mlperf-inference-{round_}"
    entries = json.loads(Snapshot(git_dir, commit).read("summary_results.json") or "[]")
    rows, skipped = inference_rows(entries, table_id)
    date, date_note = INFERENCE_DATES[round_]
    path = out_dir / f"mlperf_inference_{tag}.py"
    write_module(
        path,
        table_id=table_id,
        title=f"MLPerf Inference {round_}, closed division: throughput per system, model and scenario",
        kind="serving",
        url=f"https://github.com/{repository}/blob/{commit}/summary_results.json",
        repository=repository,
        source_path="summary_results.json",
        commit=commit,
        date=date,
        date_note=date_note,
        stack=(
            f"MLPerf Inference {round_} submissions: each row's own software in its `system` (TensorRT / "
            "TensorRT-LLM for NVIDIA, vLLM on ROCm for AMD, OpenVINO/IPEX for Intel, ...)"
        ),
        engine=f"mlperf-inference {round_.lstrip('v')}",
        method=INFERENCE_METHOD,
        caveats=(
            "Precision is the submitter's weight data type (for SDXL the UNet's); the accuracy target (99 "
            "or 99.9 % of the reference) is part of the model id. Latency scenarios (SingleStream, "
            "MultiStream), open-division rows and results MLPerf marks inferred (derived from another "
            f"scenario, not measured) are not imported. Skipped: {skipped}"
        ),
        rows=rows,
    )
    _format(path)
    print(f"{table_id}: {len(rows)} rows -> {path}; skipped {skipped}")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("suite", choices=("training", "inference"))
    ap.add_argument("git_dir", help="the results repository snapshot (a git directory)")
    ap.add_argument("round", help="v4.0, v4.1, v5.0, v5.1 (training); v5.1, v6.0 (inference)")
    ap.add_argument("--out", default=str(OUT_DIR))
    ap.add_argument("--commit", default="HEAD", help="inference: the commit to read (default HEAD)")
    ap.add_argument(
        "--repository", help="inference: the repository that publishes that commit (default MLCommons' own)"
    )
    a = ap.parse_args(argv)
    if a.suite == "training":
        import_training(a.git_dir, a.round, Path(a.out))
    else:
        import_inference(a.git_dir, a.round, Path(a.out), a.commit, a.repository)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
