"""Provenance labels and their rank (DESIGN "Latest measured, quarantine, provenance").

Best first: ``measured`` (exact cell) > ``interpolated`` (fitted on this GPU) > ``transferred``
(fitted on other GPUs; across architectures through the published-table transfer) >
``published`` (anchored on an imported external table) > ``derived`` (depends on a catalog figure
computed from a sibling GPU) > ``spec`` (datasheet roofline with the spec-default efficiencies).

``min_provenance`` (``/v1/recommend``) keeps an answer whose label ranks at least as high as
the minimum asked for: :func:`at_least`.
"""

from __future__ import annotations

from typing import Final, Literal

Provenance = Literal["measured", "interpolated", "transferred", "published", "derived", "spec"]

PROVENANCES: Final[tuple[Provenance, ...]] = (
    "measured",
    "interpolated",
    "transferred",
    "published",
    "derived",
    "spec",
)
"""Every label, best first."""

_RANK: Final[dict[str, int]] = {p: len(PROVENANCES) - i for i, p in enumerate(PROVENANCES)}


def rank(provenance: str) -> int:
    """Higher is better: ``measured`` 6 ... ``spec`` 1 (``ValueError`` for an unknown label)."""
    try:
        return _RANK[provenance]
    except KeyError:
        raise ValueError(f"unknown provenance {provenance!r}; one of {', '.join(PROVENANCES)}") from None


def at_least(provenance: str, minimum: str) -> bool:
    """Whether ``provenance`` ranks at or above ``minimum`` (the ``min_provenance`` filter)."""
    return rank(provenance) >= rank(minimum)


def weakest(*provenances: str) -> str:
    """The lowest-ranked label: an answer is only as good as its weakest input."""
    return min(provenances, key=rank)
