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
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
        )
        reports[f.provider] = report
        prices.extend(r.as_dict() for r in report.records)
    return SnapshotBuild(prices=prices, reports=reports, files=files)
