"""Cost-quality routing (RouterBench, Hu et al., 2024): the zero router, AIQ, and the serving objectives.

A point is (mean cost per question, accuracy). The **zero router** mixes single models at random: its
accuracy at a budget is the non-decreasing convex hull of the single models' points. A router's curve is its
points over a lambda sweep of ``argmax P(correct) - lambda * cost``; mixing two operating points at random reaches
every point between them, so a router too is read through its non-decreasing convex hull. **AIQ** is the area under
a hull over the cost range the single models span, divided by that range: a mean accuracy over budgets.

Arrays: P, Y, C are (questions, models): P(correct), 0/1 correctness, cost (same unit for every model).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .metrics import route_with_cost

OBJECTIVES = ("accuracy", "quality_at_min_cost", "max_cost", "min_accuracy")


def lambda_grid(C: np.ndarray, n: int = 120) -> np.ndarray:
    """0 and a log grid of lambdas scaled to the costs, from 'cost barely matters' to 'the cheapest model always
    wins' (n points): fine enough that the curve has points between the single models' corners."""
    C = np.asarray(C, dtype=float)
    scale = max(float(np.median(C[C > 0])) if (C > 0).any() else 1.0, 1e-12)
    return np.concatenate([[0.0], np.logspace(-4, 4, n) / scale])


def nondecreasing_hull(cost, acc) -> tuple[np.ndarray, np.ndarray]:
    """The non-decreasing upper convex hull of points (cost, acc): its vertices by increasing cost, ending at the
    most accurate point (beyond it the hull stays flat)."""
    pts = sorted(set(zip(np.asarray(cost, dtype=float).tolist(), np.asarray(acc, dtype=float).tolist())),
                 key=lambda p: (p[0], -p[1]))
    hull: list[tuple[float, float]] = []
    for c, a in pts:
        if hull and c == hull[-1][0]:
            continue  # same cost, lower accuracy (sorted): never on the upper hull
        while len(hull) >= 2:
            (c1, a1), (c2, a2) = hull[-2], hull[-1]
            if (a2 - a1) * (c - c1) <= (a - a1) * (c2 - c1):  # hull[-1] on or below the chord: not a vertex
                hull.pop()
            else:
                break
        hull.append((c, a))
    top = int(np.argmax([a for _, a in hull]))
    hull = hull[:top + 1]
    return np.array([c for c, _ in hull]), np.array([a for _, a in hull])


def hull_value(hc: np.ndarray, ha: np.ndarray, x) -> np.ndarray:
    """Accuracy of the hull at budgets ``x``: linear between vertices, flat past the last, 0 below the first (no
    operating point is that cheap)."""
    x = np.asarray(x, dtype=float)
    return np.where(x < hc[0] - 1e-15, 0.0, np.interp(x, hc, ha))


def aiq(cost, acc, lo: float, hi: float, n_grid: int = 400) -> float:
    """RouterBench's AIQ: the area under the non-decreasing convex hull of the points over [lo, hi] / (hi - lo)."""
    if not hi > lo:
        return float("nan")
    hc, ha = nondecreasing_hull(cost, acc)
    grid = np.linspace(lo, hi, n_grid)
    return float(np.trapezoid(hull_value(hc, ha, grid), grid) / (hi - lo))


def sweep(P: np.ndarray, C: np.ndarray, prior: np.ndarray, lambdas) -> np.ndarray:
    """Picks (len(lambdas), questions) of cost-aware routing at every lambda."""
    return np.stack([route_with_cost(P, C, lam, prior) for lam in lambdas])


@dataclass
class OperatingPoint:
    """A served choice: ``lam`` (None: the best single model, no routing), its accuracy and mean cost, and why."""
    lam: float | None
    accuracy: float
    cost: float
    rule: str
    met: bool = True  # the objective's target was reached (False: the fallback when no point reaches it)


def sweep_figures(P: np.ndarray, Y: np.ndarray, C: np.ndarray, prior: np.ndarray, lambdas) -> tuple[np.ndarray, np.ndarray]:
    """(accuracy, mean cost) of cost-aware routing at every lambda (missing answers count as wrong)."""
    Y = np.nan_to_num(np.asarray(Y, dtype=float), nan=0.0)
    C = np.asarray(C, dtype=float)
    rows = np.arange(len(Y))[None, :]
    picks = sweep(P, C, prior, lambdas)
    return Y[rows, picks].mean(axis=1), C[rows, picks].mean(axis=1)


def cascade_picks(P: np.ndarray, C: np.ndarray, prior: np.ndarray, tau: float) -> np.ndarray:
    """A cascade: the models in order of mean cost (cheapest first); each question goes to the first model whose
    P(correct) is at least ``tau``, else to the best single model (by ``prior``)."""
    return _cascade(np.asarray(P, dtype=float), _cost_order(C), int(np.argmax(prior)), tau)


def _cost_order(C) -> np.ndarray:
    return np.argsort(np.asarray(C, dtype=float).mean(axis=0), kind="stable")


def _cascade(P: np.ndarray, order: np.ndarray, best: int, tau: float) -> np.ndarray:
    ok = P[:, order] >= tau
    return np.where(ok.any(axis=1), order[np.argmax(ok, axis=1)], best)


def cascade_figures(P: np.ndarray, Y: np.ndarray, C: np.ndarray, prior: np.ndarray, taus=None) -> tuple[np.ndarray, ...]:
    """(taus, accuracy, mean cost) of the cascade at every threshold (default 0, 0.01, ..., 1); missing answers count
    as wrong."""
    taus = np.linspace(0.0, 1.0, 101) if taus is None else np.asarray(taus, dtype=float)
    Y = np.nan_to_num(np.asarray(Y, dtype=float), nan=0.0)
    C = np.asarray(C, dtype=float)
    P, order, best = np.asarray(P, dtype=float), _cost_order(C), int(np.argmax(prior))
    rows = np.arange(len(Y))
    picks = np.array([_cascade(P, order, best, t) for t in taus])
    return taus, Y[rows[None, :], picks].mean(axis=1), C[rows[None, :], picks].mean(axis=1)


def pick_point(lambdas, acc, cost, single: tuple[float, float], objective: str = "quality_at_min_cost",
               tolerance: float = 0.01, max_cost: float | None = None, min_accuracy: float | None = None) -> OperatingPoint:
    """Choose among a sweep's (lambda, accuracy, cost) points and the best single model (``single``: its accuracy and
    cost), all measured on TRAINING questions:

    * ``quality_at_min_cost``: the cheapest point whose accuracy is within ``tolerance`` of the best single model's;
    * ``max_cost``: the most accurate point whose mean cost is <= ``max_cost`` (none: the cheapest);
    * ``min_accuracy``: the cheapest point whose accuracy is >= ``min_accuracy`` (none: the most accurate);
    * ``accuracy``: lambda 0 (cost ignored).
    The best single model is served (lambda None) when it is the choice."""
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}; one of {', '.join(OBJECTIVES)}")
    lambdas, acc, cost = (np.asarray(x, dtype=float) for x in (lambdas, acc, cost))
    best = OperatingPoint(None, float(single[0]), float(single[1]), "best single model")
    if objective == "accuracy":
        j = int(np.flatnonzero(lambdas == 0.0)[0]) if (lambdas == 0.0).any() else int(np.argmin(lambdas))
        return OperatingPoint(float(lambdas[j]), float(acc[j]), float(cost[j]), "accuracy objective: lambda 0")
    cands = [OperatingPoint(float(lam), float(a), float(c), "") for lam, a, c in zip(lambdas, acc, cost)] + [best]
    if objective == "quality_at_min_cost":
        ok = [p for p in cands if p.accuracy >= best.accuracy - tolerance - 1e-12]
        pick = min(ok, key=lambda p: (p.cost, -p.accuracy))
        rule = f"cheapest with training CV accuracy >= best single {best.accuracy:.4f} - {tolerance:g}"
    elif objective == "min_accuracy":
        if min_accuracy is None:
            raise ValueError("objective min_accuracy needs min_accuracy")
        ok = [p for p in cands if p.accuracy >= min_accuracy - 1e-12]
        pick = min(ok, key=lambda p: (p.cost, -p.accuracy)) if ok else max(cands, key=lambda p: (p.accuracy, -p.cost))
        rule = f"cheapest with training CV accuracy >= {min_accuracy:g}" + ("" if ok else " (none: the most accurate)")
    else:
        if max_cost is None:
            raise ValueError("objective max_cost needs max_cost")
        ok = [p for p in cands if p.cost <= max_cost + 1e-15]
        pick = max(ok, key=lambda p: (p.accuracy, -p.cost)) if ok else min(cands, key=lambda p: p.cost)
        rule = f"most accurate with training CV cost <= {max_cost:g}" + ("" if ok else " (none: the cheapest)")
    return OperatingPoint(pick.lam, pick.accuracy, pick.cost, rule if pick.lam is not None else rule + ": best single",
                          met=bool(ok))


def choose_point(P: np.ndarray, Y: np.ndarray, C: np.ndarray, prior: np.ndarray, objective: str = "quality_at_min_cost",
                 tolerance: float = 0.01, max_cost: float | None = None, min_accuracy: float | None = None,
                 lambdas=None) -> OperatingPoint:
    """Choose lambda on TRAINING questions (P out-of-fold, Y, C training answers and costs): :func:`pick_point` over
    the sweep of :func:`sweep_figures` and the best single model (by ``prior``)."""
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}; one of {', '.join(OBJECTIVES)}")
    C = np.asarray(C, dtype=float)
    lambdas = lambda_grid(C) if lambdas is None else np.asarray(lambdas, dtype=float)
    acc, cost = sweep_figures(P, Y, C, prior, lambdas)
    b = int(np.argmax(prior))
    single = (float(np.nan_to_num(np.asarray(Y, dtype=float)[:, b], nan=0.0).mean()), float(C[:, b].mean()))
    return pick_point(lambdas, acc, cost, single, objective, tolerance, max_cost, min_accuracy)


def serve_picks(point: OperatingPoint, P: np.ndarray, C: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """The picks of an operating point on new questions (P, C: (n, M))."""
    if point.lam is None:
        return np.full(len(P), int(np.argmax(prior)))
    return route_with_cost(P, C, point.lam, prior)


def cost_quality_report(P: np.ndarray, Y: np.ndarray, C: np.ndarray, prior: np.ndarray, served_picks: np.ndarray,
                        lambdas=None, n_boot: int = 1000, seed: int = 0, level: float = 0.90) -> dict:
    """The cost-quality figures on TEST questions (complete Y and C): the router's sweep and hull, the zero router's
    hull, AIQ of both over the single models' cost range and their difference, the served point against the best
    single model (chosen by ``prior``), each with a percentile bootstrap interval over questions (``level``)."""
    Y, C = np.asarray(Y, dtype=float), np.asarray(C, dtype=float)
    n, M = Y.shape
    lambdas = lambda_grid(C) if lambdas is None else np.asarray(lambdas, dtype=float)
    picks = sweep(P, C, prior, lambdas)  # (L, n)
    rows = np.arange(n)[None, :]
    Yp, Cp = Y[rows, picks], C[rows, picks]  # (L, n) per-question correctness and cost of each lambda's picks
    best = int(np.argmax(prior))
    served = np.asarray(served_picks, dtype=int)

    def figures(idx):
        acc, cost = Yp[:, idx].mean(axis=1), Cp[:, idx].mean(axis=1)
        s_acc, s_cost = Y[idx].mean(axis=0), C[idx].mean(axis=0)
        lo, hi = float(s_cost.min()), float(s_cost.max())
        r, z = aiq(cost, acc, lo, hi), aiq(s_cost, s_acc, lo, hi)
        sv = Y[idx, served[idx]].mean(), C[idx, served[idx]].mean()
        return r, z, r - z, float(sv[0]), float(sv[1]), float(s_acc[best]), float(s_cost[best])

    full = figures(np.arange(n))
    g = np.random.default_rng(seed)
    boot = np.array([figures(g.integers(0, n, n)) for _ in range(n_boot)])
    a = (1 - level) / 2
    ci = [[float(np.nanquantile(boot[:, j], a)), float(np.nanquantile(boot[:, j], 1 - a))] for j in range(boot.shape[1])]
    acc, cost = Yp.mean(axis=1), Cp.mean(axis=1)
    s_acc, s_cost = Y.mean(axis=0), C.mean(axis=0)
    return {
        "lambdas": lambdas, "curve_acc": acc, "curve_cost": cost, "single_acc": s_acc, "single_cost": s_cost,
        "router_hull": nondecreasing_hull(cost, acc), "zero_hull": nondecreasing_hull(s_cost, s_acc),
        "aiq_router": full[0], "aiq_zero": full[1], "aiq_delta": full[2], "aiq_router_ci": ci[0], "aiq_zero_ci": ci[1],
        "aiq_delta_ci": ci[2], "served_acc": full[3], "served_cost": full[4], "served_acc_ci": ci[3],
        "served_cost_ci": ci[4], "best_single_acc": full[5], "best_single_cost": full[6],
        "cost_ratio": full[4] / full[6] if full[6] > 0 else float("nan"), "level": level, "n_questions": int(n),
    }
