"""Builders for benchmark submissions and synthetic catalog GPUs (shared by the benchmark tests).

Synthetic GPUs get unique slugs and PCI ids in 0xe000-0xefff, which no real GPU in the shipped
catalog uses, so tests never depend on (or disturb) each other or the shipped data."""

from __future__ import annotations

import itertools
import random
import uuid
from typing import Any

from sqlalchemy import Engine

from service.api.validation import gpu_document as validate_gpu_document
from service.core.catalog.vocabulary import SUITE_VERSION, suite_definition_hash
from service.db.engine import make_session_factory
from service.db.uow import UnitOfWork
from service.usecases.catalog import create_gpu

GIB = 2**30
_pci = itertools.count(random.Random().randrange(0xE000, 0xEC00))


def new_pci() -> str:
    return f"0x{next(_pci):04x}"


def gpu_document(
    slug: str,
    pci: str,
    *,
    name: str | None = None,
    usable: int | None = 80 * GIB,
    physical: int | None = None,
    bandwidth: float | None = 2000.0,
    bf16: float | None = 400.0,
    aliases: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "slug": slug,
        "vendor": "nvidia",
        "name": name or f"Test {slug}",
        "architecture": "Testarch",
        "form_factor": "sxm",
        "memory": {"memory_bytes": physical, "usable_memory_bytes": usable, "bandwidth_gb_per_s": bandwidth},
        "peaks": {"bf16_tflops": bf16, "fp16_tflops": bf16, "fp32_tflops": 50.0, "int8_tops": 800.0},
        "identity": {"pci_vendor_id": "0x10de", "pci_device_ids": [pci]},
        "aliases": aliases or [],
        "sources": [
            {"group": "memory", "title": "test", "source_kind": "vendor-datasheet"},
            {"group": "usable_memory", "title": "test", "source_kind": "measured"},
            {"group": "peaks", "title": "test", "source_kind": "vendor-datasheet"},
            {"group": "identity", "title": "test", "source_kind": "pci-ids"},
        ],
    }


def make_gpu(engine: Engine, **kw: Any) -> dict[str, Any]:
    """Create a synthetic catalog GPU; returns its slug, PCI id and usable memory."""
    slug = kw.pop("slug", None) or f"nvidia-test-{uuid.uuid4().hex[:8]}"
    pci = kw.pop("pci", None) or new_pci()
    doc = gpu_document(slug, pci, **kw)
    with UnitOfWork(make_session_factory(engine)) as uow:
        create_gpu(uow, validate_gpu_document(doc))
    return {"slug": slug, "pci": pci, "usable": doc["memory"]["usable_memory_bytes"], "name": doc["name"]}


def fingerprint(pci: str = "0x2335", **over: Any) -> dict[str, Any]:
    fp: dict[str, Any] = {
        "suite_version": SUITE_VERSION,
        "workload_definition_hash": suite_definition_hash(),
        "driver_version": "550.54.15",
        "cuda_version": "12.4",
        "torch_version": "2.5.1",
        "attention_backend": "flash",
        "tf32_matmul": False,
        "tf32_cudnn": False,
        "torch_compile": False,
        "ecc_mode": "enabled",
        "mig_mode": "disabled",
        "pci_device_id": pci,
        "host_id": "mid-0123456789abcdef",
        "cudnn_version": "90100",
        "nccl_version": "2.21.5",
        "transformers_version": "4.46.0",
        "engine_versions": None,
        "power_limit_w": 700,
        "app_clock_sm_mhz": 1980,
        "app_clock_mem_mhz": 2619,
        "pcie_gen": 5,
        "pcie_width": 16,
        "container_image_digest": None,
        "nccl_nvls_enable": None,
    }
    fp.update(over)
    return fp


def result(
    workload: str = "resnet50-train",
    params: dict[str, Any] | None = None,
    metrics: dict[str, float] | None = None,
    *,
    status: str = "ok",
    units: dict[str, str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    default_units = {
        "throughput": "images/s"
        if workload.startswith("resnet")
        else ("samples/s" if workload.startswith("bert") else "tokens/s"),
        "tflops": "TFLOP/s",
        "tops": "TOP/s",
        "bandwidth_gb_per_s": "GB/s",
        "step_time_s": "s",
        "mfu": "ratio",
        "output_tokens_per_s": "tokens/s",
    }
    default_units.update(units or {})
    if params is None:
        params = {"precision": "amp_bf16", "batch_size": 64} if workload.startswith("resnet") else {}
    if metrics is None:
        metrics = {"throughput": 2500.0} if status == "ok" else {}
    out: dict[str, Any] = {
        "workload": workload,
        "parameters": params,
        "status": status,
        "metrics": {k: {"value": v, "unit": default_units[k]} for k, v in metrics.items()},
    }
    out.update(extra)
    return out


def run(
    results: list[dict[str, Any]],
    *,
    run_id: str | None = None,
    host: str = "host-a",
    pci: str = "0x2335",
    gpu_name: str = "NVIDIA H200",
    memory_total: int = 143_771 * 2**20,
    fp: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "run_id": run_id or f"test-{uuid.uuid4().hex}",
        "suite_version": SUITE_VERSION,
        "host": host,
        "gpu": {"name": gpu_name, "pci_device_id": pci, "memory_total_bytes": memory_total},
        "gpu_count": 1,
        "fingerprint": fp if fp is not None else fingerprint(pci, host_id=f"mid-{host}"),
        "results": results,
    }
    body.update(extra)
    return body


def run_on(gpu: dict[str, Any], results: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    """A run from a synthetic GPU (identified by its PCI id and usable memory)."""
    kw.setdefault("gpu_name", gpu["name"])
    host = kw.get("host", "host-a")
    fp_over = kw.pop("fp_over", {})
    kw.setdefault("fp", fingerprint(gpu["pci"], host_id=f"mid-{host}", **fp_over))
    return run(results, pci=gpu["pci"], memory_total=gpu["usable"], **kw)
