"""The fit of the cross-source operator-class model (:mod:`.transfer_sources`, issue 27).

Levenberg-Marquardt on the group-demeaned log residuals with analytic derivatives and ridge
priors (:data:`RIDGE`), pure Python: a few thousand points, a few dozen parameters. Only ratios
inform it: each configuration's level (its stack's speed) is the mean log residual of its group.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

from service.core.estimation.group_level import without_group_mean
from service.core.estimation.transfer_sources import (
    ENGINE_BOUND,
    HOST0,
    ClassModel,
    Levels,
    SourcePoint,
    _logit,
    _prior,
    parts,
)

__all__ = ["RIDGE", "fit_classes"]

RIDGE: Final[dict[str, float]] = {
    "z": 0.01,
    "c": 100.0,
    "d": 1.0,
    "m": 1.0,
    "h": 0.01,
    "q": 0.01,
    "a": 0.01,
    "p": 0.01,
}
"""Prior weights (per squared log unit): the class shares, host, link, all-reduce latency and
per-step terms are nearly free; the per-(architecture, precision) compute factors and the
bandwidth factors are pulled toward the average architecture (weight 1). The architecture-wide
compute factor ``c`` is pinned (weight 100): shared across precisions it carried Ada's FP8
serving speed into TF32 BERT training (leave-one-source-out 21.7 % -> 20.6 % without it); tensor
paths of one architecture do not share an efficiency."""

HOP = "allreduce"


def _params(points: Sequence[SourcePoint]) -> list[tuple[str, object]]:
    names: list[tuple[str, object]] = [("z", c) for c in sorted({p.share_key for p in points})]
    names += [("c", a) for a in sorted({p.arch for p in points})]
    names += [("d", k) for k in sorted({(p.arch, p.family_key) for p in points})]
    names += [("m", a) for a in sorted({p.arch for p in points})]
    names += [("h", c) for c in sorted({p.key for p in points})]
    names += [("q", c) for c in sorted({p.key for p in points})]
    names += [("p", c) for c in sorted({p.cls for p in points if p.step_batch})]
    if any(p.serve is not None and p.serve.hops > 0 for p in points):
        names.append(("a", HOP))
    return names


def _model(
    names: Sequence[tuple[str, object]], theta: Sequence[float], points: Sequence[SourcePoint], rms: float
) -> ClassModel:
    v = dict(zip(names, theta, strict=True))

    def of(kind: str, offset: float = 0.0) -> dict[str, float]:
        return {str(k): x + offset for (knd, k), x in v.items() if knd == kind}

    return ClassModel(
        share={k: 1.0 / (1.0 + math.exp(-x - _logit(_prior(k)))) for k, x in of("z").items()},
        compute=of("c"),
        compute_family={k: x for (kind, k), x in v.items() if kind == "d" and isinstance(k, tuple)},
        memory=of("m"),
        sources=tuple(sorted({p.source for p in points})),
        n_points=len(points),
        rms_log_error=rms,
        gpus=tuple(sorted({p.slug for p in points})),
        host=of("h", HOST0),
        link=of("q", HOST0),
        step=of("p"),
        hop=v.get(("a", HOP), 0.0),
    )


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting (the normal equations are small)."""
    n = len(b)
    m = [[*row, b[i]] for i, row in enumerate(a)]
    for col in range(n):
        piv = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[piv] = m[piv], m[col]
        d = m[col][col] or 1e-12
        for r in range(col + 1, n):
            f = m[r][col] / d
            if f:
                for k in range(col, n + 1):
                    m[r][k] -= f * m[col][k]
    x = [0.0] * n
    for i in range(n - 1, -1, -1):
        x[i] = (m[i][n] - sum(m[i][k] * x[k] for k in range(i + 1, n))) / (m[i][i] or 1e-12)
    return x


def _point(
    p: SourcePoint, idx: dict[tuple[str, object], int], theta: Sequence[float]
) -> tuple[float, dict[int, float]]:
    """One point's log residual (measured - model, before its group's level) and derivatives."""
    iz = idx[("z", p.share_key)]
    s = 1.0 / (1.0 + math.exp(-theta[iz] - _logit(_prior(p.share_key))))
    ic, id_, im = idx[("c", p.arch)], idx[("d", (p.arch, p.family_key))], idx[("m", p.arch)]
    ih, iq = idx[("h", p.key)], idx[("q", p.key)]
    ia, ip = idx.get(("a", HOP)), idx.get(("p", p.cls))
    levels = Levels(
        host=theta[ih] + HOST0,
        link=theta[iq] + HOST0,
        hop=theta[ia] if ia is not None else 0.0,
        step=theta[ip] if ip is not None else 0.0,
    )
    t = parts(p, s, theta[ic] + theta[id_], theta[im], levels)
    tot = t.total
    g: dict[int, float] = {
        iz: s * (1.0 - s) * (t.compute / s - t.memory / (1.0 - s)) / tot,
        ic: -t.compute / tot,
        im: -(t.memory + t.step) / tot,
        ih: t.host / tot,
        iq: t.link / tot,
    }
    g[id_] = g.get(id_, 0.0) - t.compute / tot
    if ia is not None:
        g[ia] = t.hops / tot
    if ip is not None:
        g[ip] = t.step / tot
    return p.log_throughput + math.log(tot), g


def _residuals(
    names: Sequence[tuple[str, object]], theta: Sequence[float], points: Sequence[SourcePoint]
) -> tuple[list[float], list[dict[int, float]]]:
    """Group-demeaned log residuals (measured - model) and their derivatives (sparse rows)."""
    idx = {n: i for i, n in enumerate(names)}
    raw: list[float] = []
    jac: list[dict[int, float]] = []
    for p in points:
        r, g = _point(p, idx, theta)
        raw.append(r)
        jac.append(g)
    groups: dict[tuple[object, ...], list[int]] = {}
    for i, p in enumerate(points):
        groups.setdefault(p.group, []).append(i)
    res = raw[:]
    for members in groups.values():
        mean = sum(raw[i] for i in members) / len(members)
        for i, row in zip(members, without_group_mean([jac[i] for i in members]), strict=True):
            res[i] -= mean
            jac[i] = row
    return res, jac


def _normal(
    names: Sequence[tuple[str, object]],
    theta: Sequence[float],
    points: Sequence[SourcePoint],
    ridge: Sequence[float],
    free: Sequence[bool],
) -> tuple[float, list[list[float]], list[float]]:
    """Cost (squared residuals plus the ridge prior), J^T J and the gradient J^T r at ``theta``;
    a parameter not ``free`` gets a unit row and no gradient, so a step leaves it where it is."""
    n = len(names)
    res, jac = _residuals(names, theta, points)
    cost = sum(r * r for r in res) + sum(w * t * t for w, t in zip(ridge, theta, strict=True))
    jtj = [[0.0] * n for _ in range(n)]
    jtr = [0.0] * n
    for r, row in zip(res, jac, strict=True):
        items = list(row.items())
        for i, gi in items:
            jtr[i] += gi * r
            for j, gj in items:
                jtj[i][j] += gi * gj
    for i in range(n):
        jtj[i][i] += ridge[i] + 1e-9
        jtr[i] += ridge[i] * theta[i]
        if not free[i]:
            jtj[i] = [0.0] * n
            for line in jtj:
                line[i] = 0.0
            jtj[i][i], jtr[i] = 1.0, 0.0
    return cost, jtj, jtr


def fit_classes(points: Sequence[SourcePoint], iterations: int = 40) -> ClassModel:
    """Fit the class shares, architecture factors and term levels on ``points``
    (:mod:`.transfer_sources`). Points of an engine-bound class (:data:`ENGINE_BOUND`) inform only
    their own class terms: everything is fitted on the other points first, then those terms on
    theirs with the rest held."""
    names = _params(points)
    shared = [p for p in points if p.cls not in ENGINE_BOUND]
    own = [p for p in points if p.cls in ENGINE_BOUND]
    theta = _levenberg_marquardt(names, [0.0] * len(names), shared, [True] * len(names), iterations)
    if own:
        keys = {p.key for p in own} | {p.share_key for p in own}
        free = [kind in ("z", "h", "q") and k in keys for kind, k in names]
        theta = _levenberg_marquardt(names, theta, own, free, iterations)
    res, _ = _residuals(names, theta, points)
    rms = math.sqrt(sum(r * r for r in res) / max(1, len(res)))
    return _model(names, theta, points, rms)


def _levenberg_marquardt(
    names: Sequence[tuple[str, object]],
    theta: list[float],
    points: Sequence[SourcePoint],
    free: Sequence[bool],
    iterations: int,
) -> list[float]:
    """Levenberg-Marquardt on ``points`` from ``theta``, moving only the ``free`` parameters; a
    step is kept only when it lowers the cost."""
    ridge = [RIDGE[kind] for kind, _ in names]
    lam = 1e-3
    cost, jtj, jtr = _normal(names, theta, points, ridge, free)
    for _ in range(iterations):
        improved = False
        for _try in range(10):
            damped = [
                [v + (lam * jtj[i][i] if i == j else 0.0) for j, v in enumerate(row)]
                for i, row in enumerate(jtj)
            ]
            step = _solve(damped, [-x for x in jtr])
            trial = [t + d for t, d in zip(theta, step, strict=True)]
            c2, j2, g2 = _normal(names, trial, points, ridge, free)
            if c2 < cost:
                improved = cost - c2 > 1e-10 * max(1.0, cost)
                theta, cost, jtj, jtr, lam = trial, c2, j2, g2, max(lam / 3.0, 1e-9)
                break
            lam *= 4.0
        if not improved:
            break
    return theta
