"""The measurement plan (issue 27): which (GPU, workload, configuration) cells an agent should
measure next, and why.

Two reasons put a cell on the plan:

* **narrows** -- recent answers lean on an estimate for this exact cell, and a measurement
  would narrow their bands (each answer's band now and the band once measured, from
  :func:`service.core.estimation.measurement_value.band_gain`); the cell's *narrowing* is the
  sum over those answers of ``now - after`` in percentage points of relative band width;
* **stale** -- the cell's last measurement was taken with an older suite version than the
  service's, or an older version of an engine it records than one measured since (newest
  engine version seen in any measurement here): re-measuring keeps the answers that rest on it
  current.

Cells that narrow come first (most narrowing first, then most answers), then cells that are
only stale (most answers leaning on them, then the oldest measurement first). A cell with
neither reason is not on the plan: measuring it again would change no band.

Pure: no I/O.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MIN_NARROWING_PCT",
    "Demand",
    "LastMeasurement",
    "PlanCell",
    "newest_engine_versions",
    "rank_cells",
    "stale_reasons",
    "version_key",
]

MIN_NARROWING_PCT = 0.05
"""Narrowing below this (percentage points of relative width, summed) counts as none: the
rounding of a band the answers print (three significant figures) is about this size."""

CellKey = tuple[str, str, str]  # (gpu slug, workload, parameters hash)


@dataclass(frozen=True, slots=True)
class Demand:
    """One answer an exact cell's measurement would narrow: a stored question, asked on one GPU."""

    question_id: str  # the stored recommendation's id
    asker_key_id: int | None  # the key that asked (None: asked without one)
    asked_at: dt.datetime
    gpu_slug: str
    workload: str
    parameters: Mapping[str, Any]
    parameters_hash: str
    metric: str  # the figure whose band is compared ("step_time_s" | "tpot_s")
    provenance: str  # that figure's provenance now
    band_now_pct: float  # relative width (high - low) / mid, %
    band_after_pct: float  # the same once measured (a lower bound)

    @property
    def key(self) -> CellKey:
        return (self.gpu_slug, self.workload, self.parameters_hash)

    @property
    def narrowing_pct(self) -> float:
        return max(0.0, self.band_now_pct - self.band_after_pct)


@dataclass(frozen=True, slots=True)
class LastMeasurement:
    """A measured cell's newest stack: when, and with which suite and engine versions."""

    gpu_slug: str
    workload: str
    parameters: Mapping[str, Any]
    parameters_hash: str
    measured_at: dt.datetime
    suite_version: str | None
    engine_versions: Mapping[str, str]

    @property
    def key(self) -> CellKey:
        return (self.gpu_slug, self.workload, self.parameters_hash)


@dataclass(frozen=True, slots=True)
class PlanCell:
    """One cell of the plan with why it is there."""

    gpu_slug: str
    workload: str
    parameters: Mapping[str, Any]
    parameters_hash: str
    narrowing_pct: float  # summed over ``demands``
    demands: tuple[Demand, ...]  # most narrowing first
    stale: tuple[str, ...]  # sentences; empty when not stale
    last: LastMeasurement | None

    @property
    def reasons(self) -> tuple[str, ...]:
        return (("narrows",) if self.narrowing_pct >= MIN_NARROWING_PCT else ()) + (
            ("stale",) if self.stale else ()
        )


_LEADING_NUMBER = re.compile(r"\d+")


def version_key(version: str) -> tuple[int, ...]:
    """Dotted numeric components (``2.5.1+cu121`` -> (2, 5, 1)); a component without leading
    digits ends the key (``0.8rc1`` -> (0, 8))."""
    out: list[int] = []
    for part in version.split("+", 1)[0].split("."):
        m = _LEADING_NUMBER.match(part)
        if m is None:
            break
        out.append(int(m.group()))
        if m.end() != len(part):
            break
    return tuple(out)


def newest_engine_versions(measured: Iterable[LastMeasurement]) -> dict[str, str]:
    """Per engine, the newest version any measured cell's last stack records."""
    newest: dict[str, str] = {}
    for m in measured:
        for engine, v in m.engine_versions.items():
            if engine not in newest or version_key(v) > version_key(newest[engine]):
                newest[engine] = v
    return newest


def stale_reasons(
    last: LastMeasurement, suite_version: str, newest_engines: Mapping[str, str]
) -> tuple[str, ...]:
    """Why the cell's last measurement is out of date (empty: it is not)."""
    out: list[str] = []
    if last.suite_version is None or version_key(last.suite_version) < version_key(suite_version):
        out.append(
            f"last measured with suite {last.suite_version or 'unknown'}; the suite is {suite_version} now"
        )
    for engine, v in sorted(last.engine_versions.items()):
        newest = newest_engines.get(engine)
        if newest is not None and version_key(v) < version_key(newest):
            out.append(f"last measured with {engine} {v}; {engine} {newest} has been measured since")
    return tuple(out)


def _cell(
    key: CellKey, demands: Sequence[Demand], last: LastMeasurement | None, stale: tuple[str, ...]
) -> PlanCell:
    ordered = tuple(sorted(demands, key=lambda d: (-d.narrowing_pct, d.question_id)))
    params = ordered[0].parameters if ordered else (last.parameters if last is not None else {})
    return PlanCell(
        gpu_slug=key[0],
        workload=key[1],
        parameters=params,
        parameters_hash=key[2],
        narrowing_pct=sum(d.narrowing_pct for d in ordered),
        demands=ordered,
        stale=stale,
        last=last,
    )


def _order(c: PlanCell) -> tuple[Any, ...]:
    if c.narrowing_pct >= MIN_NARROWING_PCT:
        return (0, -c.narrowing_pct, -len(c.demands), c.gpu_slug, c.workload, c.parameters_hash)
    oldest = c.last.measured_at.timestamp() if c.last is not None else 0.0
    return (1, -len(c.demands), oldest, c.gpu_slug, c.workload, c.parameters_hash)


def rank_cells(
    demands: Iterable[Demand], measured: Sequence[LastMeasurement], *, suite_version: str
) -> tuple[PlanCell, ...]:
    """The plan: every cell that narrows an answer or is stale, in plan order (module doc)."""
    by_cell: dict[CellKey, list[Demand]] = {}
    for d in demands:
        by_cell.setdefault(d.key, []).append(d)
    lasts = {m.key: m for m in measured}
    engines = newest_engine_versions(measured)
    stale = {k: r for k, m in lasts.items() if (r := stale_reasons(m, suite_version, engines))}
    cells = [_cell(k, ds, lasts.get(k), stale.get(k, ())) for k, ds in by_cell.items()]
    cells.extend(_cell(k, (), lasts[k], r) for k, r in stale.items() if k not in by_cell)
    return tuple(sorted((c for c in cells if c.reasons), key=_order))
