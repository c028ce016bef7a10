"""What an answer was computed from: the catalog and measurement watermarks and the
estimator version (DESIGN "Transactions and consistency", docs/architecture.md "Watermarks")."""

from __future__ import annotations

import re
from dataclasses import dataclass

_FORM = re.compile(r"^c(\d+)\.m(\d+)\.e(.+)$")


@dataclass(frozen=True, slots=True, order=True)
class Watermarks:
    """``catalog`` moves when GPUs, aliases, prices or FX rates change; ``measurement`` when
    results, their quarantine or retraction, or a pending-GPU mapping change. Nothing else moves
    either (keys, alert acknowledgements, stored recommendations)."""

    catalog: int
    measurement: int


@dataclass(frozen=True, slots=True)
class DataVersion:
    """The ``data_version`` every advisory answer carries: ``c<catalog>.m<measurement>.e<estimator>``
    (also the ``X-Data-Version`` header). Two answers with the same data_version were computed
    from the same data by the same models."""

    watermarks: Watermarks
    estimator: str

    def __str__(self) -> str:
        return f"c{self.watermarks.catalog}.m{self.watermarks.measurement}.e{self.estimator}"

    @classmethod
    def parse(cls, text: str) -> DataVersion:
        m = _FORM.match(text.strip())
        if m is None:
            raise ValueError(f"not a data_version: {text!r}")
        return cls(Watermarks(int(m.group(1)), int(m.group(2))), m.group(3))
