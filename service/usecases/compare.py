"""``GET /v1/compare``: GPUs side by side, from the read model only (no SQL beyond the request's
one watermark read).

* **Specs**: the effective catalog documents' figures, each with the source of its figure
  group (a ``derived`` source covers only the figures it lists).
* **Results**: every single-GPU benchmark cell any of the GPUs has, per GPU the latest-measured
  view (DESIGN: one rule). Where two or more GPUs measured a cell, the stacks are taken from one
  common software stack (driver, CUDA, torch... equal; the hardware fields of a fingerprint
  differ by nature) when one exists, and the row says when they had to be mixed. A GPU that did
  not measure the cell gets the estimator's figure (``core.estimation.estimate``, provenance as
  ``/v1/estimate`` labels it), only when the estimate is of exactly that cell (its benchmark
  cell hash matches); otherwise no figure and the reason.
* **Prices**: the cheapest on-demand rate per GPU-hour per provider (``core.pricing.cost.PriceBook``).

The answer is memoised per (watermarks, calibration watermark, day, request): a compare is
computed once per data change however often it is asked.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from service.core.catalog.vocabulary import WORKLOADS
from service.core.errors import InvalidConfiguration, MissingFigure
from service.core.estimation.estimate import ESTIMATOR_VERSION, JobSpec, benchmark_cell, build_job, estimate
from service.core.evidence.aggregate import CellView, view_of
from service.core.evidence.results import main_metric_of
from service.core.pricing.cost import NO_PRICE, CostAssumptions, RentQuote
from service.db.uow import UnitOfWork
from service.usecases.catalog import GpuView, resolve_gpu
from service.usecases.errors import DUPLICATE_GPU, FieldError, Invalid
from service.usecases.estimate import measured_view
from service.usecases.read_model import MeasuredCellStacks, ReadModel, Snapshot

MIN_GPUS, MAX_GPUS = 2, 8

COMPARED_WORKLOADS: tuple[str, ...] = (
    "gemm",
    "memory-bandwidth",
    "resnet50-train",
    "resnet50-infer",
    "bert-large-train",
    "bert-large-infer",
    "llm-train",
    "llm-infer",
)
"""Single-GPU workloads, in the order rows are listed (collectives compare interconnects, not GPUs)."""

SOFTWARE_FIELDS: tuple[str, ...] = (
    "suite_version",
    "workload_definition_hash",
    "driver_version",
    "cuda_version",
    "cudnn_version",
    "nccl_version",
    "torch_version",
    "transformers_version",
    "engine_versions",
    "attention_backend",
    "tf32_matmul",
    "tf32_cudnn",
    "torch_compile",
    "container_image_digest",
)
"""The fingerprint fields that make two GPUs' results comparable: the software stack. The other
fields (PCI id, host, clocks, power limit, ECC, MIG, PCIe link) describe the hardware compared."""

_DATASHEET_KINDS = {"vendor-datasheet", "vendor-brief", "oem-sheet", "whitepaper", "cloud-doc"}


# ---- result types ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Figure:
    value: float | int | None
    provenance: str  # datasheet | derived | measured | registry | unsourced
    source_kind: str | None = None
    source_title: str | None = None
    source_url: str | None = None
    derivation: str | None = None
    marketed: str | None = None  # the datasheet's words where it publishes no such figure


@dataclass(frozen=True, slots=True)
class SpecLine:
    key: str
    label: str
    group: str
    unit: str
    higher_is_better: bool
    figures: tuple[Figure, ...]


@dataclass(frozen=True, slots=True)
class CapabilityLine:
    key: str
    label: str
    values: tuple[str | int | None, ...]


@dataclass(frozen=True, slots=True)
class Cell:
    source: str  # measurement | estimate | none
    value: float | None = None
    low: float | None = None
    high: float | None = None
    provenance: str | None = None
    oom: bool = False
    thin: bool = False
    count: int | None = None
    fingerprint_hash: str | None = None
    newest_measured_at: dt.datetime | None = None
    source_gpus: tuple[str, ...] = ()
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class ResultLine:
    workload: str
    parameters: Mapping[str, Any]
    parameters_hash: str
    metric: str
    unit: str
    higher_is_better: bool
    cells: tuple[Cell, ...]
    common_stack: bool | None
    stack: Mapping[str, Any] | None


@dataclass(frozen=True, slots=True)
class GpuPriceLine:
    slug: str
    providers: tuple[RentQuote, ...]
    reason: str | None


@dataclass(frozen=True, slots=True)
class Comparison:
    queries: tuple[str, ...]
    gpus: tuple[GpuView, ...]
    specs: tuple[SpecLine, ...]
    capabilities: tuple[CapabilityLine, ...]
    results: tuple[ResultLine, ...]
    prices: tuple[GpuPriceLine, ...]
    currency: str
    stale_after_days: int
    etag: str
    notes: tuple[str, ...] = field(default=())


# ---- the use case ----------------------------------------------------------------------------------


def parse_gpu_list(raw: Sequence[str]) -> tuple[str, ...]:
    """``?gpus=l40,l20`` and ``?gpus=l40&gpus=l20`` alike; 2 to 8 names."""
    names = tuple(n.strip() for part in raw for n in part.split(","))
    if any(not n for n in names):
        raise Invalid(
            "an empty GPU name in the list",
            fields=[
                FieldError(("gpus",), "every comma-separated name must have a character that is not a space")
            ],
        )
    if not MIN_GPUS <= len(names) <= MAX_GPUS:
        raise Invalid(
            f"compare takes {MIN_GPUS} to {MAX_GPUS} GPUs, got {len(names)}",
            fields=[
                FieldError(
                    ("gpus",), f"give {MIN_GPUS} to {MAX_GPUS} comma-separated names; got {len(names)}"
                )
            ],
        )
    return names


def etag_of(snap: Snapshot, today: dt.date, key: str) -> str:
    """Strong ETag: the catalog and measurement watermarks, the calibrations' watermark (the
    estimates follow it), the estimator version, the day (prices age) and the request."""
    w = snap.watermarks
    h = hashlib.sha256(key.encode()).hexdigest()[:10]
    return f'"c{w.catalog}.m{w.measurement}.k{snap.calibration_watermark}.e{ESTIMATOR_VERSION}.{today:%Y%m%d}.{h}"'


def compare(
    uow: UnitOfWork,
    read: ReadModel,
    idents: Sequence[str],
    *,
    today: dt.date,
    stale_days: int,
    currency: str = "USD",
    workload: str | None = None,
    use_default: bool = False,
) -> Comparison:
    """Compare the GPUs ``idents`` name (each resolved as ``GET /v1/gpus/{ident}`` resolves it:
    :class:`NotFound` naming an unknown one, :class:`Ambiguous` for a name of several)."""
    names = parse_gpu_list(idents)
    if workload is not None and workload not in COMPARED_WORKLOADS:
        raise Invalid(
            f"unknown workload {workload!r}",
            fields=[FieldError(("workload",), f"one of {', '.join(COMPARED_WORKLOADS)}")],
        )
    views = tuple(resolve_gpu(uow, read, n, use_default=use_default) for n in names)
    seen: dict[str, str] = {}
    for n, v in zip(names, views, strict=True):
        if v.record.slug in seen:
            raise Invalid(
                f"{seen[v.record.slug]!r} and {n!r} are the same GPU ({v.record.slug})",
                fields=[FieldError(("gpus",), f"{n!r} repeats {seen[v.record.slug]!r}", type=DUPLICATE_GPU)],
            )
        seen[v.record.slug] = n
    snap = read.snapshot(uow)
    request_key = json.dumps([list(names), currency, workload, use_default, stale_days])
    etag = etag_of(snap, today, request_key)
    memo_key = ("compare", etag)
    hit = snap.measurements.memo.get(memo_key)
    if isinstance(hit, Comparison):
        return hit
    slugs = [v.record.slug for v in views]
    docs = [v.record.document for v in views]
    book = snap.price_book(today)
    assumptions = CostAssumptions(currency=currency, stale_after_days=stale_days)
    prices = tuple(
        GpuPriceLine(slug=s, providers=q, reason=None if q else NO_PRICE)
        for s in slugs
        for q in (book.cheapest_by_provider(s, assumptions),)
    )
    results, elsewhere = _results(snap, slugs, read.min_points, workload)
    out = Comparison(
        queries=names,
        gpus=views,
        specs=_specs(docs),
        capabilities=_capabilities(docs),
        results=results,
        prices=prices,
        currency=currency,
        stale_after_days=stale_days,
        etag=etag,
        notes=(
            "ratio_to_first and speedup_vs_first compare each GPU with the first one named",
            "mig: the catalog does not record MIG support, so it is 'unknown' for every GPU",
            *(
                (
                    "none of these GPUs has a measurement here: the results are the configurations "
                    f"measured on {', '.join(elsewhere)}, estimated for each GPU and anchored on "
                    "those measurements (the cross-GPU ratio is the model's)",
                )
                if elsewhere
                else ()
            ),
        ),
    )
    if len(snap.measurements.memo) > 256:
        snap.measurements.memo.clear()
    snap.measurements.memo[memo_key] = out
    return out


def comparison_etag(
    uow: UnitOfWork,
    read: ReadModel,
    idents: Sequence[str],
    *,
    today: dt.date,
    stale_days: int,
    currency: str = "USD",
    workload: str | None = None,
    use_default: bool = False,
) -> str:
    """The ETag :func:`compare` would answer with, without computing the comparison (for
    ``If-None-Match``)."""
    names = parse_gpu_list(idents)
    for n in names:
        resolve_gpu(uow, read, n, use_default=use_default)
    request_key = json.dumps([list(names), currency, workload, use_default, stale_days])
    return etag_of(read.snapshot(uow), today, request_key)


# ---- specs -------------------------------------------------------------------------------------------

# (key, label, group, unit, higher is better, path in the document, scale)
_SPEC_ROWS: tuple[tuple[str, str, str, str, bool, tuple[str, ...], float], ...] = (
    ("memory_gib", "Memory", "memory", "GiB", True, ("memory", "memory_bytes"), 2**-30),
    (
        "usable_memory_gib",
        "Usable memory (driver)",
        "usable_memory",
        "GiB",
        True,
        ("memory", "usable_memory_bytes"),
        2**-30,
    ),
    ("bandwidth_gb_per_s", "Memory bandwidth", "memory", "GB/s", True, ("memory", "bandwidth_gb_per_s"), 1.0),
    ("fp64_tflops", "FP64", "peaks", "TFLOP/s", True, ("peaks", "fp64_tflops"), 1.0),
    ("fp32_tflops", "FP32", "peaks", "TFLOP/s", True, ("peaks", "fp32_tflops"), 1.0),
    ("tf32_tflops", "TF32 tensor (dense)", "peaks", "TFLOP/s", True, ("peaks", "tf32_tflops"), 1.0),
    ("bf16_tflops", "BF16 tensor (dense)", "peaks", "TFLOP/s", True, ("peaks", "bf16_tflops"), 1.0),
    ("fp16_tflops", "FP16 tensor (dense)", "peaks", "TFLOP/s", True, ("peaks", "fp16_tflops"), 1.0),
    ("fp8_tflops", "FP8 tensor (dense)", "peaks", "TFLOP/s", True, ("peaks", "fp8_tflops"), 1.0),
    ("fp4_tflops", "FP4 tensor (dense)", "peaks", "TFLOP/s", True, ("peaks", "fp4_tflops"), 1.0),
    ("int8_tops", "INT8 tensor (dense)", "peaks", "TOP/s", True, ("peaks", "int8_tops"), 1.0),
    ("int4_tops", "INT4 tensor (dense)", "peaks", "TOP/s", True, ("peaks", "int4_tops"), 1.0),
    ("tdp_w", "Board power (TDP)", "power", "W", False, ("power", "tdp_w"), 1.0),
    ("sm_count", "SMs / compute units", "compute", "count", True, ("compute", "sm_count"), 1.0),
    ("boost_clock_mhz", "Boost clock", "compute", "MHz", True, ("compute", "boost_clock_mhz"), 1.0),
    (
        "nvlink_per_direction_gb_per_s",
        "NVLink per direction",
        "interconnect",
        "GB/s",
        True,
        ("interconnect", "nvlink", "per_direction_gb_per_s"),
        1.0,
    ),
    ("pcie_gen", "PCIe generation", "interconnect", "gen", True, ("interconnect", "pcie", "gen"), 1.0),
)


def _get(doc: Mapping[str, Any], path: Sequence[str]) -> Any:
    cur: Any = doc
    for p in path:
        cur = cur.get(p) if isinstance(cur, Mapping) else None
    return cur


def _source_for(doc: Mapping[str, Any], group: str, figure: str) -> Mapping[str, Any] | None:
    """The source of one figure: a source of its group listing it in ``figures`` first, else
    the group's first source that lists no figures."""
    sources: list[Mapping[str, Any]] = [s for s in doc.get("sources") or () if s.get("group") == group]
    for s in sources:
        if figure in (s.get("figures") or ()):
            return s
    return next((s for s in sources if not s.get("figures")), None)


def _figure(doc: Mapping[str, Any], group: str, path: Sequence[str], scale: float) -> Figure:
    raw = _get(doc, path)
    if raw is None:
        # a memory the vendor states only as marketed (141 GB enabled of 144 GB of stacks): said, not guessed
        said = (doc.get("memory") or {}).get("marketed") if path == ("memory", "memory_bytes") else None
        return Figure(value=None, provenance="unsourced", marketed=said or None)
    value: float | int = round(raw * scale, 3) if scale != 1.0 else raw
    src = _source_for(doc, group, path[-1])
    if src is None:
        return Figure(value=value, provenance="unsourced")
    kind = src.get("source_kind")
    prov = (
        "derived"
        if kind == "derived"
        else "measured"
        if kind == "measured"
        else "registry"
        if kind == "pci-ids"
        else "datasheet"
        if kind in _DATASHEET_KINDS
        else "unsourced"
    )
    derivation = None
    if kind == "derived":
        derivation = f"derived from {src.get('derived_from')}: {src.get('title') or ''}".strip()
    return Figure(
        value=value,
        provenance=prov,
        source_kind=kind,
        source_title=src.get("title"),
        source_url=src.get("url"),
        derivation=derivation,
    )


def _specs(docs: Sequence[Mapping[str, Any]]) -> tuple[SpecLine, ...]:
    return tuple(
        SpecLine(
            key=key,
            label=label,
            group=group if group != "usable_memory" else "memory",
            unit=unit,
            higher_is_better=hib,
            figures=tuple(_figure(d, group, path, scale) for d in docs),
        )
        for key, label, group, unit, hib, path, scale in _SPEC_ROWS
    )


def _capabilities(docs: Sequence[Mapping[str, Any]]) -> tuple[CapabilityLine, ...]:
    rows: list[CapabilityLine] = []
    for p in ("fp8", "fp4", "bf16", "fp16", "tf32", "int8", "int4"):
        rows.append(
            CapabilityLine(
                f"supports_{p}",
                f"{p.upper()} support",
                tuple((d.get("supports") or {}).get(p, "unknown") for d in docs),
            )
        )
    rows += [
        CapabilityLine("architecture", "Architecture", tuple(d.get("architecture") for d in docs)),
        CapabilityLine(
            "compute_capability",
            "Compute capability",
            tuple(_get(d, ("identity", "compute_capability")) for d in docs),
        ),
        CapabilityLine("form_factor", "Form factor", tuple(d.get("form_factor") for d in docs)),
        CapabilityLine(
            "nvlink_topology",
            "NVLink topology",
            tuple(_get(d, ("interconnect", "nvlink", "topology")) or "none" for d in docs),
        ),
        CapabilityLine(
            "nvlink_domain_size",
            "NVLink domain (GPUs)",
            tuple(_get(d, ("interconnect", "nvlink", "domain_size")) for d in docs),
        ),
        CapabilityLine(
            "p2p_over_pcie",
            "Peer-to-peer over PCIe",
            tuple(_get(d, ("interconnect", "p2p_over_pcie")) or "unknown" for d in docs),
        ),
        CapabilityLine("memory_type", "Memory type", tuple(_get(d, ("memory", "type")) for d in docs)),
        CapabilityLine("ecc", "ECC", tuple(_get(d, ("memory", "ecc")) or "unknown" for d in docs)),
        CapabilityLine("tdp_w", "Board power (W)", tuple(_get(d, ("power", "tdp_w")) for d in docs)),
        CapabilityLine("mig", "MIG", tuple("unknown" for _ in docs)),
        CapabilityLine("market", "Market", tuple(d.get("market") for d in docs)),
    ]
    return tuple(rows)


# ---- results -------------------------------------------------------------------------------------------


def _single_gpu(workload: str, params: Mapping[str, Any]) -> bool:
    return workload in COMPARED_WORKLOADS and int(params.get("gpu_count") or 1) == 1


def _software_key(fp: Mapping[str, Any] | None) -> str | None:
    if fp is None:
        return None
    return json.dumps({k: fp.get(k) for k in SOFTWARE_FIELDS}, sort_keys=True, default=str)


def _views(
    snap: Snapshot, cells: Mapping[str, MeasuredCellStacks], k: int
) -> tuple[dict[str, CellView], bool | None, Mapping[str, Any] | None]:
    """Per measured GPU its view; from one common software stack when one exists."""
    fps = snap.measurements.fingerprints
    if len(cells) < 2:
        return {s: c.view(k) for s, c in cells.items()}, None, None
    keyed: dict[str, dict[str, Any]] = {}
    for slug, c in cells.items():
        for st in c.stacks:
            key = _software_key(fps.get(st.fingerprint_hash))
            if key is None or st.total == 0:
                continue
            best = keyed.setdefault(slug, {}).get(key)
            if best is None or st.newest > best.newest:
                keyed[slug][key] = st
    common = set.intersection(*(set(keyed.get(s, {})) for s in cells)) if keyed else set()
    if not common:
        return {s: c.view(k) for s, c in cells.items()}, False, None
    chosen = max(common, key=lambda key: min(keyed[s][key].newest for s in cells))
    stack = json.loads(chosen)
    return {s: view_of((keyed[s][chosen],), k) for s in cells}, True, stack


def _measured_cell(view: CellView, metric: str) -> Cell:
    s = view.metrics.get(metric)
    if view.measured_oom:
        return Cell(
            source="measurement",
            oom=True,
            provenance=view.provenance or view.provenance_code,
            thin=view.thin,
            count=view.count,
            fingerprint_hash=view.fingerprint_hash,
            newest_measured_at=view.newest_measured_at,
            reason="out of memory",
        )
    if s is None:
        return Cell(
            source="measurement",
            provenance=view.provenance_code,
            thin=view.thin,
            count=view.count,
            fingerprint_hash=view.fingerprint_hash,
            newest_measured_at=view.newest_measured_at,
            reason=view.provenance_reason or "no usable result",
        )
    return Cell(
        source="measurement",
        value=s.median,
        low=s.p10,
        high=s.p90,
        provenance=view.provenance or view.provenance_code,
        thin=view.thin,
        count=view.count,
        fingerprint_hash=view.fingerprint_hash,
        newest_measured_at=view.newest_measured_at,
    )


def _job_spec(workload: str, p: Mapping[str, Any]) -> JobSpec | None:
    if workload in ("resnet50-train", "resnet50-infer"):
        return JobSpec(
            model="resnet50",
            mode="training" if workload.endswith("train") else "inference",
            precision=p.get("precision"),
            batch_size=int(p.get("batch_size") or 1),
        )
    if workload in ("bert-large-train", "bert-large-infer"):
        return JobSpec(
            model="bert-large",
            mode="training" if workload.endswith("train") else "inference",
            precision=p.get("precision"),
            batch_size=int(p.get("batch_size") or 1),
            seq_len=p.get("seq_len"),
        )
    if workload == "llm-train":
        finetune = p.get("finetune") or "full"
        targets = p.get("lora_targets")
        return JobSpec(
            model=p.get("model"),
            mode="training" if finetune == "full" else "fine-tuning",
            precision=p.get("precision"),
            batch_size=int(p.get("batch_size") or 1),
            seq_len=p.get("seq_len"),
            gradient_checkpointing=bool(p.get("gradient_checkpointing")),
            finetune=finetune,
            lora_rank=int(p.get("lora_rank") or 16),
            lora_targets=tuple(str(targets).split(",")) if targets else None,
            attention=p.get("attention") or "sdpa",
            optimizer=p.get("optimizer") or "adamw",
            sharding=p.get("sharding"),
            gpu_count=1,
            global_batch=int(p.get("global_batch") or 0),
            # the vocabulary's defaults, which a cell omits (omitted_at_default): what the agent ran
            loop=p.get("loop") or "loss_only",
            optimizer_impl=p.get("optimizer_impl") or "fused",
            mixed_precision=p.get("mixed_precision") or "autocast",
        )
    if workload == "llm-infer":
        return JobSpec(
            model=p.get("model"),
            mode="inference",
            precision=p.get("precision"),
            quant_method=p.get("quant_method") or "none",
            engine=p.get("engine") or "hf-transformers",
            batch_size=int(p.get("batch_size") or 1),
            input_len=int(p.get("input_len") or 1024),
            output_len=int(p.get("output_len") or 256),
        )
    return None


def _estimated_cell(
    snap: Snapshot,
    slug: str,
    workload: str,
    params_hash: str,
    params: Mapping[str, Any],
    metric: str,
    measured_on: Callable[[str], CellView | None] | None = None,
) -> Cell:
    spec = snap.catalog.specs.get(slug)
    job_spec = _job_spec(workload, params)
    if spec is None or job_spec is None:
        return Cell(source="none", reason=f"no estimator for {workload}: the datasheet peak is in specs")
    try:
        job = build_job(job_spec)
        cell = benchmark_cell(job)
        if cell is None or cell[2] != params_hash:
            return Cell(source="none", reason="the estimator does not model exactly this configuration")
        est = estimate(
            spec, job, snap.calibrations, None, measured_on=measured_on
        )  # anchored on the row's measurement
    except (InvalidConfiguration, MissingFigure) as exc:
        return Cell(source="none", reason=exc.message)
    except (ValueError, KeyError) as exc:
        return Cell(source="none", reason=f"no estimate: {exc}")
    if not est.memory.fits:
        need_gib = est.memory.estimate.device_memory_band.high / 2**30
        return Cell(
            source="estimate",
            oom=True,
            provenance=est.memory.provenance,
            reason=f"estimated not to fit: needs up to {need_gib:.1f} GiB of "
            f"{est.memory.usable_memory_bytes / 2**30:.1f} GiB usable",
        )
    if est.time is not None and metric == "throughput":
        t = est.time
        value = t.tokens_per_s if workload == "llm-train" else t.samples_per_s
        b = t.step_time_band
        return Cell(
            source="estimate",
            value=value,
            low=value * b.mid / b.high if b.high else None,
            high=value * b.mid / b.low if b.low else None,
            provenance=t.provenance,
            source_gpus=t.source_gpus,
        )
    if est.serving is not None and metric == "output_tokens_per_s":
        sv = est.serving
        b = sv.tpot_band
        v = sv.output_tokens_per_s
        return Cell(
            source="estimate",
            value=v,
            low=v * b.mid / b.high if b.high else None,
            high=v * b.mid / b.low if b.low else None,
            provenance=sv.provenance,
            source_gpus=sv.source_gpus,
        )
    return Cell(source="none", reason=f"the estimate gives no {metric}")


def _order(workload: str, params: Mapping[str, Any]) -> tuple[Any, ...]:
    return (
        COMPARED_WORKLOADS.index(workload),
        json.dumps({k: params[k] for k in sorted(params) if k != "batch_size"}, sort_keys=True, default=str),
        params.get("batch_size") or 0,
    )


def _rows(
    snap: Snapshot, slugs: Sequence[str], only: str | None
) -> tuple[dict[tuple[str, str], dict[str, MeasuredCellStacks]], dict[tuple[str, str], Mapping[str, Any]]]:
    """The measured single-GPU configurations of ``slugs`` (of workload ``only``), by row."""
    ms = snap.measurements
    rows: dict[tuple[str, str], dict[str, MeasuredCellStacks]] = {}
    params_of: dict[tuple[str, str], Mapping[str, Any]] = {}
    for slug in slugs:
        for cid in ms.by_gpu.get(slug, ()):
            c = ms.cells[cid]
            if (only is not None and c.workload != only) or not _single_gpu(c.workload, c.params):
                continue
            rows.setdefault((c.workload, c.params_hash), {})[slug] = c
            params_of.setdefault((c.workload, c.params_hash), c.params)
    return rows, params_of


def _anchors(
    snap: Snapshot, views: Mapping[str, CellView], workload: str, params_hash: str, k: int
) -> Callable[[str], CellView | None]:
    """Where an estimated cell finds the measurement its transfer is anchored on: this line's
    view of a compared GPU, else any GPU's latest measurement of the cell -- the lookup
    ``/v1/estimate`` makes, so both answer the same (the source GPU need not be compared)."""

    def on(slug: str) -> CellView | None:
        return views[slug] if slug in views else measured_view(snap, slug, (workload, None, params_hash), k)

    return on


def _results(
    snap: Snapshot, slugs: Sequence[str], k: int, only: str | None
) -> tuple[tuple[ResultLine, ...], tuple[str, ...]]:
    """One line per measured configuration: the compared GPUs' own measurements, the others
    estimated. Where none of them measured the workload asked (or any, when none is asked), the
    configurations measured on other GPUs, every cell estimated and anchored on those
    measurements (the second value: those GPUs), rather than no line at all."""
    rows, params_of = _rows(snap, slugs, only)
    elsewhere: tuple[str, ...] = ()
    anchors: dict[tuple[str, str], dict[str, MeasuredCellStacks]] = {}
    if not rows:  # the blog-post question (L40 vs L20): the table still compares them
        others = [g for g in snap.measurements.by_gpu if g not in slugs]
        anchors, params_of = _rows(snap, others, only)
        rows = {key: {} for key in anchors}
        elsewhere = tuple(sorted({g for cells in anchors.values() for g in cells}))
    out: list[ResultLine] = []
    for wl, ph in sorted(rows, key=lambda key: _order(key[0], params_of[key])):
        measured = rows[(wl, ph)]
        views, common, stack = _views(snap, measured or anchors[(wl, ph)], k)
        present = {m for v in views.values() for m in v.metrics}
        metric = main_metric_of(wl, present)
        mdef = WORKLOADS[wl].metric(metric)
        cells = tuple(
            _measured_cell(views[s], metric)
            if s in views and s in measured
            else _estimated_cell(
                snap, s, wl, ph, params_of[(wl, ph)], metric, _anchors(snap, views, wl, ph, k)
            )
            for s in slugs
        )
        out.append(
            ResultLine(
                workload=wl,
                parameters=dict(params_of[(wl, ph)]),
                parameters_hash=ph,
                metric=metric,
                unit=mdef.unit if mdef else "",
                higher_is_better=mdef.higher_is_better if mdef else True,
                cells=cells,
                common_stack=common,
                stack=stack,
            )
        )
    return tuple(out), elsewhere
