"""The shipped SkyPilot price snapshot (``data/skypilot/``) -> price rows for the catalog upsert.

``data/skypilot/manifest.json`` names each shipped ``<provider>/vms.csv`` (a verbatim subset of
the rows of a SkyPilot catalog file), the repository path and commit it was copied from, and the
date basis. :func:`build_snapshot` parses every file with the same pure importer an operator's
refresh uses (:func:`service.core.pricing.skypilot.import_vms_csv`), maps names through the catalog's
aliases (SkyPilot-kind aliases first, then every alias) and the sourced instance hints, and
returns price dicts shaped like ``prices.json`` rows plus one report per file. Nothing here
touches the database; wiring the rows into ``upsert_catalog`` is the caller's job.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from service.core.pricing.shapes import InstanceShape, ProviderNetwork, ShapeTable
from service.core.pricing.skypilot import (
    ImportReport,
    InstanceHint,
    alias_index_from_docs,
    import_vms_csv,
    memory_mib_from_docs,
    source_label,
)

SKYPILOT_DIR = Path(__file__).resolve().parent / "data" / "skypilot"


@dataclass(frozen=True)
class SnapshotFile:
    provider: str
    file: str
    repo: str
    repo_path: str
    commit: str
    effective_date: dt.date
    rows: int
    date_basis: str = "effective"  # "retrieved": the date the copy was read, not the commit's

    @property
    def source(self) -> str:
        return source_label(self.repo, self.repo_path, commit=self.commit) + (
            f" (copy read {self.effective_date.isoformat()})"
        )


@dataclass(frozen=True)
class SnapshotBuild:
    prices: list[dict[str, Any]]
    reports: dict[str, ImportReport]
    files: list[SnapshotFile]


def load_manifest(data_dir: Path = SKYPILOT_DIR) -> list[SnapshotFile]:
    doc = json.loads((data_dir / "manifest.json").read_text(encoding="utf-8"))
    return [
        SnapshotFile(
            provider=f["provider"],
            file=f["file"],
            repo=f["repo"],
            repo_path=f["repo_path"],
            commit=f["commit"],
            effective_date=dt.date.fromisoformat(f["effective_date"]),
            rows=int(f["rows"]),
            date_basis="retrieved" if str(f.get("date_basis", "")).startswith("retrieved") else "effective",
        )
        for f in doc["files"]
    ]


def load_hints(data_dir: Path = SKYPILOT_DIR) -> list[InstanceHint]:
    doc = json.loads((data_dir / "instance_hints.json").read_text(encoding="utf-8"))
    return [
        InstanceHint(
            provider=h["provider"],
            instance_type=h["instance_type"],
            gpu_slug=h["gpu_slug"],
            source=h["source"],
        )
        for h in doc["hints"]
    ]


def build_snapshot(gpu_docs: Iterable[Mapping[str, Any]], data_dir: Path = SKYPILOT_DIR) -> SnapshotBuild:
    docs = list(gpu_docs)
    indexes = [alias_index_from_docs(docs, kinds={"skypilot"}), alias_index_from_docs(docs)]
    memory = memory_mib_from_docs(docs)
    hints = load_hints(data_dir)
    files = load_manifest(data_dir)
    prices: list[dict[str, Any]] = []
    reports: dict[str, ImportReport] = {}
    for f in files:
        text = (data_dir / f.file).read_text(encoding="utf-8")
        report = import_vms_csv(
            text,
            provider=f.provider,
            effective_date=f.effective_date,
            source=f.source,
            indexes=indexes,
            gpu_memory_mib=memory,
            hints=hints,
            date_basis=f.date_basis,
        )
        reports[f.provider] = report
        prices.extend(r.as_dict() for r in report.records)
    return SnapshotBuild(prices=prices, reports=reports, files=files)


@functools.cache
def instance_shapes(data_dir: Path = SKYPILOT_DIR) -> ShapeTable:
    """The sourced per-instance-type table and the per-provider network defaults
    (``instance_shapes.json``), read once per process."""
    doc = json.loads((data_dir / "instance_shapes.json").read_text(encoding="utf-8"))
    instances = {
        (r["provider"], r["instance_type"]): InstanceShape(
            provider=r["provider"],
            instance_type=r["instance_type"],
            gpus=int(r["gpus"]),
            intra_node=r["intra_node"],
            gpu_link_gpus=int(r["gpu_link_gpus"]),
            inter_node_gbps=None if r["inter_node_gbps"] is None else float(r["inter_node_gbps"]),
            rdma=r["rdma"],
            source=f"{r['source']} (read {r['retrieved']}): {r['states']}",
        )
        for r in doc["instances"]
    }
    providers = {
        p["provider"]: ProviderNetwork(
            provider=p["provider"],
            inter_node_gbps=None if p["inter_node_gbps"] is None else float(p["inter_node_gbps"]),
            rdma=p["rdma"],
            source=p["source"],
        )
        for p in doc["providers"]
    }
    return ShapeTable(instances=instances, providers=providers)
