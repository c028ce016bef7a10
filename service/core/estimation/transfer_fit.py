"""The joint fit of the transfer model on the published tables (damped Gauss-Newton on the log
errors, ridge priors), cached per process (``transfer`` describes the model)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from service.core.estimation.group_level import without_group_mean
from service.core.estimation.transfer import (
    CLOCK_EXPONENT,
    EPS0_W_PER_TFLOP,
    RIDGE,
    FitPoint,
    TransferModel,
    _p16,
    fit_points,
)

# --------------------------------------------------------------------------------------------
# Fitting (pure Python Levenberg-Marquardt)
# --------------------------------------------------------------------------------------------

_Key = tuple[str, ...]


def _cholesky_solve(a: list[list[float]], b: list[float]) -> list[float]:
    n = len(b)
    low = [[0.0] * n for _ in range(n)]
    for i in range(n):
        row_i = low[i]
        for j in range(i + 1):
            row_j = low[j]
            s = a[i][j] - sum(row_i[k] * row_j[k] for k in range(j))
            if i == j:
                row_i[i] = math.sqrt(max(s, 1e-300))
            else:
                row_i[j] = s / row_j[j]
    y = [0.0] * n
    for i in range(n):
        y[i] = (b[i] - sum(low[i][k] * y[k] for k in range(i))) / low[i][i]
    x = [0.0] * n
    for i in range(n - 1, -1, -1):
        x[i] = (y[i] - sum(low[k][i] * x[k] for k in range(i + 1, n))) / low[i][i]
    return x


class _Problem:
    """Parameters, residuals and the Jacobian of the joint fit (``l`` eliminated per group)."""

    def __init__(self, points: Sequence[FitPoint]) -> None:
        self.points = list(points)
        keys: list[_Key] = []
        index: dict[_Key, int] = {}

        def add(k: _Key) -> int:
            if k not in index:
                index[k] = len(keys)
                keys.append(k)
            return index[k]

        self.param_ids: list[tuple[int, int, int, int, int]] = []
        self.logs: list[tuple[float, float]] = []  # (log TDP/(P16 eps0) or +inf, log measured)
        for p in self.points:
            a, f = p.arch, p.family
            self.param_ids.append(
                (add(("s", p.workload, f)), add(("c", a)), add(("d", a, f)), add(("m", a)), add(("e", a)))
            )
            p16 = _p16(p.gpu)
            z = (
                (math.log(p.gpu.tdp_w) - math.log(p16 * EPS0_W_PER_TFLOP))
                if (p.gpu.tdp_w and p16)
                else math.inf
            )
            self.logs.append((z, math.log(p.step_s)))
        self.keys = keys
        self.ridge = [RIDGE[k[0]] for k in keys]
        groups: dict[tuple[str, str, str], list[int]] = {}
        for i, p in enumerate(self.points):
            groups.setdefault(p.group, []).append(i)
        self.groups = groups

    def evaluate(
        self, th: Sequence[float], jacobian: bool
    ) -> tuple[list[float], list[dict[int, float]], dict[tuple[str, str, str], float]]:
        """Residuals (log predicted - log measured, each group centred), their sparse gradients
        and the eliminated level of every group."""
        logt: list[float] = []
        grads: list[dict[int, float]] = []
        for p, (i_s, i_c, i_d, i_m, i_e), (z, _) in zip(self.points, self.param_ids, self.logs, strict=True):
            lc = th[i_s] + th[i_c] + th[i_d]
            capped = z - th[i_e] < 0.0
            if capped:
                lc += CLOCK_EXPONENT * (z - th[i_e])
            lm = th[i_m]
            pr = p.profile
            a = pr.compute_s * math.exp(min(60.0, -lc))
            b = pr.memory_s * math.exp(min(60.0, -lm))
            t = a + b + pr.other_s
            logt.append(math.log(t))
            if jacobian:
                g: dict[int, float] = {}
                for i in (i_s, i_c, i_d):
                    g[i] = g.get(i, 0.0) - a / t
                if capped:
                    g[i_e] = g.get(i_e, 0.0) + CLOCK_EXPONENT * a / t
                g[i_m] = g.get(i_m, 0.0) - b / t
                grads.append(g)
        resid = [0.0] * len(self.points)
        levels: dict[tuple[str, str, str], float] = {}
        for grp, idx in self.groups.items():
            lv = sum(logt[i] - self.logs[i][1] for i in idx) / len(idx)
            levels[grp] = lv
            for i in idx:
                resid[i] = logt[i] - self.logs[i][1] - lv
            if jacobian:
                for i, row in zip(idx, without_group_mean([grads[i] for i in idx]), strict=True):
                    grads[i] = row
        return resid, grads, levels

    def objective(self, th: Sequence[float]) -> float:
        try:
            r, _, _ = self.evaluate(th, False)
        except (OverflowError, ValueError):
            return math.inf
        return sum(x * x for x in r) + sum(w * v * v for w, v in zip(self.ridge, th, strict=True))


def fit(points: Sequence[FitPoint], *, max_iterations: int = 100) -> TransferModel:
    """Fit the transfer model jointly on ``points`` (Levenberg-Marquardt, ridge priors)."""
    if not points:
        raise ValueError("no published points to fit")
    prob = _Problem(points)
    n = len(prob.keys)
    th = [0.0] * n
    f = prob.objective(th)
    mu = 1e-3
    it = 0
    for it in range(1, max_iterations + 1):  # noqa: B007
        r, grads, _ = prob.evaluate(th, True)
        a = [[0.0] * n for _ in range(n)]
        g = [w * v for w, v in zip(prob.ridge, th, strict=True)]
        for ri, gi in zip(r, grads, strict=True):
            items = list(gi.items())
            for k, v in items:
                g[k] += v * ri
                row = a[k]
                for k2, v2 in items:
                    row[k2] += v * v2
        for k in range(n):
            a[k][k] += prob.ridge[k]
        step: list[float] = []
        improved = False
        while mu < 1e8:
            damped = [row[:] for row in a]
            for k in range(n):
                damped[k][k] += mu * (a[k][k] + 1e-9)
            step = _cholesky_solve(damped, [-x for x in g])
            trial = [x + d for x, d in zip(th, step, strict=True)]
            f2 = prob.objective(trial)
            if f2 < f:
                th, f, mu, improved = trial, f2, max(mu / 3.0, 1e-9), True
                break
            mu *= 4.0
        if not improved or max(abs(x) for x in step) < 1e-7:
            break
    r, _, levels = prob.evaluate(th, False)
    val = dict(zip(prob.keys, th, strict=True))
    gpus: dict[str, list[str]] = {}
    for p in points:
        lst = gpus.setdefault(p.arch, [])
        if p.gpu.slug not in lst:
            lst.append(p.gpu.slug)
    return TransferModel(
        split={(k[1], k[2]): v for k, v in val.items() if k[0] == "s"},
        compute={k[1]: v for k, v in val.items() if k[0] == "c"},
        compute_family={(k[1], k[2]): v for k, v in val.items() if k[0] == "d"},
        memory={k[1]: v for k, v in val.items() if k[0] == "m"},
        energy={k[1]: EPS0_W_PER_TFLOP * math.exp(v) for k, v in val.items() if k[0] == "e"},
        level=levels,
        gpus={a: tuple(v) for a, v in gpus.items()},
        tables=tuple(dict.fromkeys(p.table_id for p in points)),
        n_points=len(points),
        rms_log_error=math.sqrt(sum(x * x for x in r) / len(r)),
        iterations=it,
    )


_FITTED: dict[str, TransferModel] = {}


def published_model() -> TransferModel:
    """The transfer fitted on every shipped training table (first use fits, then cached)."""
    model = _FITTED.get("published")
    if model is None:
        model = _FITTED.setdefault("published", fit(fit_points()))
    return model


def adopt_published_model(model: TransferModel) -> None:
    """Use the fit an earlier process made of the same shipped tables and code (the CLI's
    calibration cache, keyed by the estimator version) instead of fitting again."""
    _FITTED.setdefault("published", model)
