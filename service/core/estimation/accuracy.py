"""How accurate each kind of answer has been: the validation table the service ships.

``benchmarks/validate_estimates.py --write-accuracy`` measures, for every provenance and GPU
architecture, the error of held-out predictions and writes ``service/core/estimation/accuracy.json``
(package data). Each time figure in an answer carries the entry for its provenance, scope and
GPU architecture (:func:`accuracy_for`), e.g. "across architectures by the published-table
transfer (sm86): throughput error median 10%, MAPE 12% over 267 held-out predictions (published
training tables, leave one GPU out, pairs of GPUs)".

Sources of the entries:

* ``interpolated`` (``same-gpu``): the H200 and H100 SXM measurements (each GPU calibrated on its
  own), whole model sizes / sequence lengths /
  batch sizes held out of the fit (per workload);
* ``spec`` (``spec-default``): the spec-default roofline against the same measurements;
* transfers to another GPU: the shipped published training tables, each GPU left out of the
  transfer fit and predicted from every other GPU of its table and configuration --
  ``same-architecture`` and ``cross-architecture`` pairs by the held-out GPU's architecture
  (answers on these paths are labelled ``published`` when the published fit supplied the ratio,
  ``transferred`` when it did not), ``unseen-architecture`` from the same pairs with the
  architecture corrections switched off (what an architecture without published data gets);
* ``published-anchor``: the held-out GPU predicted from its table's fitted speed alone.

Entries are keyed by scope (the path an answer took), GPU architecture and workload.

Errors are of the rate (throughput = 1 / time: ``|predicted / measured - 1|``), as the cross-GPU
check reports them; quantiles are of ``log(measured time / predicted time)`` and
:meth:`Accuracy.band` turns their 10th-90th percentile into a relative step-time band. Pure: the file is read once, on first use,
as package data; a missing file means no accuracy statement (never an error).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import cache
from importlib import resources
from typing import Any, Final

__all__ = [
    "ACCURACY_FILE",
    "SCOPE_LABELS",
    "Accuracy",
    "accuracy_for",
    "accuracy_table",
    "dump_table",
    "entry",
]

ACCURACY_FILE: Final = "accuracy.json"
SCHEMA_VERSION: Final = 2

SCOPE_LABELS: Final[dict[str, str]] = {
    "same-gpu": "fitted on this GPU",
    "same-architecture": "transferred within the architecture",
    "cross-architecture": "across architectures by the published-table transfer",
    "unseen-architecture": "transferred to an architecture without published data",
    "published-anchor": "anchored on a published table",
    "spec-default": "datasheet roofline with spec-default efficiencies",
}


@dataclass(frozen=True, slots=True)
class Accuracy:
    """Held-out error of one kind of prediction."""

    provenance: str  # the label answers on this path carry (informational; entries are keyed by scope)
    scope: str
    arch: str  # architecture key (``sm80``) or ``*`` (pooled)
    workload: str  # estimator workload or ``*``
    n: int
    median_error: float  # median |predicted / measured - 1| of the rate (throughput, 1 / time)
    mape: float  # mean of the same
    log_q10: float  # quantiles of log(measured time / predicted time)
    log_q90: float
    basis: str

    @property
    def statement(self) -> str:
        where = "" if self.arch == "*" else f" ({self.arch})"
        return (
            f"{SCOPE_LABELS.get(self.scope, self.scope)}{where}: throughput error median "
            f"{self.median_error:.0%}, MAPE {self.mape:.0%} over {self.n:,} held-out predictions ({self.basis})"
        )

    def band(self) -> tuple[float, float]:
        """Relative (low, high) step-time band covering the 10th-90th percentile of the errors."""
        return (1.0 - math.exp(min(self.log_q10, 0.0)), math.exp(max(self.log_q90, 0.0)) - 1.0)


def entry(
    provenance: str, scope: str, arch: str, workload: str, log_errors: Sequence[float], basis: str
) -> Accuracy:
    """An entry from ``log(measured time / predicted time)`` of held-out predictions; the errors
    are of the rate (throughput), as the cross-GPU check reports them."""
    errs = sorted(abs(math.exp(x) - 1.0) for x in log_errors)
    logs = sorted(log_errors)
    return Accuracy(
        provenance,
        scope,
        arch,
        workload,
        len(errs),
        _quantile(errs, 0.5),
        sum(errs) / len(errs),
        _quantile(logs, 0.1),
        _quantile(logs, 0.9),
        basis,
    )


def _quantile(s: Sequence[float], q: float) -> float:
    if not s:
        return math.nan
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def dump_table(entries: Sequence[Accuracy], meta: Mapping[str, Any]) -> str:
    """The JSON the validation script writes (stable order, no timestamps: diffs show changes)."""
    rows = sorted(
        (asdict(e) for e in entries), key=lambda d: (d["provenance"], d["scope"], d["workload"], d["arch"])
    )
    for r in rows:
        for k in ("median_error", "mape", "log_q10", "log_q90"):
            r[k] = round(float(r[k]), 4)
    return json.dumps({"schema": SCHEMA_VERSION, **meta, "entries": rows}, indent=1) + "\n"


@dataclass(frozen=True, slots=True)
class _Table:
    entries: Mapping[tuple[str, str, str], Accuracy]
    meta: Mapping[str, Any]


@cache
def accuracy_table() -> _Table:
    """The shipped table (read once). Empty when the file is missing or of another schema."""
    try:
        text = resources.files("service.core.estimation").joinpath(ACCURACY_FILE).read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        return _Table({}, {})
    doc = json.loads(text)
    if doc.get("schema") != SCHEMA_VERSION:
        return _Table({}, {})
    out: dict[tuple[str, str, str], Accuracy] = {}
    for d in doc.get("entries", []):
        a = Accuracy(**d)
        out[(a.scope, a.arch, a.workload)] = a
    return _Table(out, {k: v for k, v in doc.items() if k != "entries"})


def accuracy_for(scope: str, arch: str, workload: str = "*") -> Accuracy | None:
    """The most specific entry for the path an answer took (its scope): (architecture,
    workload), then the pooled architecture, then the pooled workload."""
    table = accuracy_table().entries
    for a, w in ((arch, workload), (arch, "*"), ("*", workload), ("*", "*")):
        hit = table.get((scope, a, w))
        if hit is not None:
            return hit
    return None
