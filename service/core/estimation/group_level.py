"""A group's level eliminated from sparse derivative rows (the transfer fits, issue 27).

The transfer fits take each configuration's level -- its stack's own speed -- in closed form as
the mean log residual of its group, so only cross-GPU ratios inform the constants. The residuals
left are each point's minus its group's mean, and so are their derivatives: the rows of the
sparse Jacobian (parameter index -> derivative) less their group's mean row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["without_group_mean"]


def without_group_mean(rows: Sequence[Mapping[int, float]]) -> list[dict[int, float]]:
    """Each of one group's sparse rows minus the group's mean row."""
    n = len(rows)
    mean: dict[int, float] = {}
    for row in rows:
        for k, v in row.items():
            mean[k] = mean.get(k, 0.0) + v / n
    out: list[dict[int, float]] = []
    for row in rows:
        g = dict(row)
        for k, v in mean.items():
            g[k] = g.get(k, 0.0) - v
        out.append(g)
    return out
