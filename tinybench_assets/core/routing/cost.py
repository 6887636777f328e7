"""Cost-quality routing (RouterBench, Hu et al., 2024): serving policies, the zero router, AIQ, the objectives.

A point is (mean cost per question, accuracy). The **zero router** mixes single models at random: its
accuracy at a budget is the non-decreasing convex hull of the single models' points. A router's curve is its
points over a lambda sweep of ``argmax P(correct) - lambda * cost``; mixing two operating points at random reaches
every point between them, so a router too is read through its non-decreasing convex hull. **AIQ** is the area under
a hull over the cost range the single models span, divided by that range: a mean accuracy over budgets.

Routing decides before any model answers, so it prices each model at its **expected** cost per question (its mean
training cost, ``model_cost``); the realized per-question costs (C) only account for what the picks cost.

Arrays: P, Y, C are (questions, models): P(correct), 0/1 correctness, realized cost (same unit for every model).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .metrics import route_with_cost

OBJECTIVES = ("accuracy", "quality_at_min_cost", "max_cost", "min_accuracy")
POLICIES = ("single", "lambda", "cascade")
CASCADE_TAUS = np.round(np.linspace(0.0, 1.0, 51), 2)


@dataclass(frozen=True)
class Policy:
    """How new questions go to models, given P(correct) and each model's expected cost:

    * ``single``: the best single model (by training accuracy) for every question;
    * ``lambda``: argmax of P - ``value`` x expected cost (0: plain argmax of P);
    * ``cascade``: the models cheapest first; a question goes to the first whose P is at least ``value``, else to
      the best single model (RouteLLM / FrugalGPT's escalation, decided from P before any model answers)."""

    kind: str
    value: float | None = None

    def __post_init__(self):
        if self.kind not in POLICIES:
            raise ValueError(f"unknown routing policy {self.kind!r}; one of {', '.join(POLICIES)}")
        if (self.value is None) != (self.kind == "single"):
            raise ValueError(f"policy {self.kind} {'takes no' if self.kind == 'single' else 'needs a'} value")

    def picks(self, P: np.ndarray, model_cost: np.ndarray, prior: np.ndarray) -> np.ndarray:
        """The chosen model (n,) of every question (P: (n, M); model_cost, prior: (M,))."""
        P, model_cost = np.asarray(P, dtype=float), np.asarray(model_cost, dtype=float)
        best = int(np.argmax(prior))
        if self.kind == "single":
            return np.full(len(P), best)
        if self.kind == "lambda":
            return route_with_cost(P, np.broadcast_to(model_cost, P.shape), self.value, prior)
        order = np.argsort(model_cost, kind="stable")
        ok = P[:, order] >= self.value
        return np.where(ok.any(axis=1), order[np.argmax(ok, axis=1)], best)

    def label(self) -> str:
        if self.kind == "single":
            return "best single model"
        return f"lambda {self.value:.4g}" if self.kind == "lambda" else f"cascade at P >= {self.value:.2f}"

    def as_dict(self) -> dict:
        return {"policy": self.kind, "value": self.value}


def lambda_grid(model_cost, n: int = 120) -> np.ndarray:
    """0 and a log grid of lambdas scaled to the costs, from 'cost barely matters' to 'the cheapest model always
    wins' (n points): fine enough that the curve has points between the single models' corners."""
    c = np.asarray(model_cost, dtype=float)
    scale = max(float(np.median(c[c > 0])) if (c > 0).any() else 1.0, 1e-12)
    return np.concatenate([[0.0], np.logspace(-4, 4, n) / scale])


def lambda_policies(lambdas) -> list[Policy]:
    """A lambda sweep as policies, one per lambda."""
    return [Policy("lambda", float(v)) for v in lambdas]


def policy_grid(model_cost, cascade: bool = True) -> list[Policy]:
    """The policies a cost objective chooses among: the best single model, the lambda sweep and (``cascade``) the
    cascade thresholds."""
    out = [Policy("single")] + lambda_policies(lambda_grid(model_cost))
    return out + ([Policy("cascade", float(t)) for t in CASCADE_TAUS] if cascade else [])


def expected_cost(C: np.ndarray) -> np.ndarray:
    """Each model's expected cost per question (M,): its mean over the (training) questions with a cost."""
    return np.nanmean(np.asarray(C, dtype=float), axis=0)


def nondecreasing_hull(cost, acc) -> tuple[np.ndarray, np.ndarray]:
    """The non-decreasing upper convex hull of points (cost, acc): its vertices by increasing cost, ending at the
    most accurate point (beyond it the hull stays flat)."""
    pts = sorted(
        set(zip(np.asarray(cost, dtype=float).tolist(), np.asarray(acc, dtype=float).tolist())),
        key=lambda p: (p[0], -p[1]),
    )
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
    hull = hull[: top + 1]
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


def policy_picks(policies, P, model_cost, prior) -> np.ndarray:
    """Picks (len(policies), questions) of every policy."""
    return np.stack([p.picks(P, model_cost, prior) for p in policies])


def policy_figures(policies, P, Y, C, prior, model_cost=None) -> tuple[np.ndarray, np.ndarray]:
    """(accuracy, mean realized cost) of every policy on questions with answers Y and costs C (missing answers count
    as wrong); routed at ``model_cost`` (default: C's own means, for training questions)."""
    Y = np.nan_to_num(np.asarray(Y, dtype=float), nan=0.0)
    C = np.asarray(C, dtype=float)
    mc = expected_cost(C) if model_cost is None else np.asarray(model_cost, dtype=float)
    picks = policy_picks(policies, P, mc, prior)
    rows = np.arange(len(Y))[None, :]
    return Y[rows, picks].mean(axis=1), C[rows, picks].mean(axis=1)


@dataclass
class OperatingPoint:
    """A served choice: its ``policy``, training-CV accuracy and mean cost, and why it was chosen."""

    policy: Policy
    accuracy: float
    cost: float
    rule: str
    met: bool = True  # the objective's target was reached (False: the fallback when no point reaches it)


def pick_point(
    points: list[OperatingPoint],
    objective: str = "quality_at_min_cost",
    tolerance: float = 0.01,
    max_cost: float | None = None,
    min_accuracy: float | None = None,
) -> OperatingPoint:
    """Choose among operating points measured on TRAINING questions (one of them the best single model's):

    * ``quality_at_min_cost``: the cheapest point whose accuracy is within ``tolerance`` of the best single model's;
    * ``max_cost``: the most accurate point whose mean cost is <= ``max_cost`` (none: the cheapest);
    * ``min_accuracy``: the cheapest point whose accuracy is >= ``min_accuracy`` (none: the most accurate);
    * ``accuracy``: lambda 0 (cost ignored).
    Ties go to the earlier point (the grid's order: single, lambdas, cascades)."""
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}; one of {', '.join(OBJECTIVES)}")
    single = next(p for p in points if p.policy.kind == "single")
    if objective == "accuracy":
        p = next((p for p in points if p.policy == Policy("lambda", 0.0)), None)
        if p is None:
            raise ValueError("the accuracy objective needs the lambda-0 point")
        return OperatingPoint(p.policy, p.accuracy, p.cost, "accuracy objective: lambda 0")
    if objective == "quality_at_min_cost":
        ok = [p for p in points if p.accuracy >= single.accuracy - tolerance - 1e-12]
        pick = min(ok, key=lambda p: (p.cost, -p.accuracy))
        rule = f"cheapest with training CV accuracy >= best single {single.accuracy:.4f} - {tolerance:g}"
    elif objective == "min_accuracy":
        if min_accuracy is None:
            raise ValueError("objective min_accuracy needs min_accuracy")
        ok = [p for p in points if p.accuracy >= min_accuracy - 1e-12]
        pick = min(ok, key=lambda p: (p.cost, -p.accuracy)) if ok else max(points, key=lambda p: (p.accuracy, -p.cost))
        rule = f"cheapest with training CV accuracy >= {min_accuracy:g}" + ("" if ok else " (none: the most accurate)")
    else:
        if max_cost is None:
            raise ValueError("objective max_cost needs max_cost")
        ok = [p for p in points if p.cost <= max_cost + 1e-15]
        pick = max(ok, key=lambda p: (p.accuracy, -p.cost)) if ok else min(points, key=lambda p: p.cost)
        rule = f"most accurate with training CV cost <= {max_cost:g}" + ("" if ok else " (none: the cheapest)")
    return OperatingPoint(pick.policy, pick.accuracy, pick.cost, f"{rule}: {pick.policy.label()}", met=bool(ok))


def training_points(P, Y, C, prior, policies=None) -> list[OperatingPoint]:
    """Every policy's (training-CV accuracy, mean cost) on TRAINING questions (P out-of-fold, Y, C training answers
    and realized costs), routed at the training mean costs."""
    policies = policy_grid(expected_cost(C)) if policies is None else list(policies)
    acc, cost = policy_figures(policies, P, Y, C, prior)
    return [OperatingPoint(p, float(a), float(c), "") for p, a, c in zip(policies, acc, cost)]


def choose_point(
    P,
    Y,
    C,
    prior,
    objective: str = "quality_at_min_cost",
    tolerance: float = 0.01,
    max_cost: float | None = None,
    min_accuracy: float | None = None,
    policies=None,
) -> OperatingPoint:
    """Choose a policy on TRAINING questions: :func:`pick_point` over :func:`training_points`."""
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}; one of {', '.join(OBJECTIVES)}")
    return pick_point(training_points(P, Y, C, prior, policies), objective, tolerance, max_cost, min_accuracy)


def training_aiq_gain(P, Y, C, prior) -> float:
    """AIQ of the lambda sweep minus the zero router's, on TRAINING questions (P out-of-fold, Y, C training answers and
    realized costs; routed at the training mean costs), over the single models' training cost range."""
    Y = np.nan_to_num(np.asarray(Y, dtype=float), nan=0.0)
    C = np.asarray(C, dtype=float)
    acc, cost = policy_figures(lambda_policies(lambda_grid(expected_cost(C))), P, Y, C, prior)
    s_acc, s_cost = Y.mean(axis=0), C.mean(axis=0)
    lo, hi = float(s_cost.min()), float(s_cost.max())
    return aiq(cost, acc, lo, hi) - aiq(s_cost, s_acc, lo, hi)


def cost_quality_report(
    P: np.ndarray,
    Y: np.ndarray,
    C: np.ndarray,
    prior: np.ndarray,
    served_picks: np.ndarray,
    model_cost=None,
    lambdas=None,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.90,
) -> dict:
    """The cost-quality figures on TEST questions (complete Y and realized costs C): the router's lambda sweep (routed
    at ``model_cost``, the training mean costs; default C's means) and its hull, the zero router's hull, AIQ of both
    over the single models' cost range and their difference, the served point against the best single model (chosen
    by ``prior``), each with a percentile bootstrap interval over questions (``level``)."""
    Y, C = np.asarray(Y, dtype=float), np.asarray(C, dtype=float)
    n, M = Y.shape
    mc = expected_cost(C) if model_cost is None else np.asarray(model_cost, dtype=float)
    lambdas = lambda_grid(mc) if lambdas is None else np.asarray(lambdas, dtype=float)
    picks = policy_picks(lambda_policies(lambdas), P, mc, prior)  # (L, n)
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
    ci = [
        [float(np.nanquantile(boot[:, j], a)), float(np.nanquantile(boot[:, j], 1 - a))] for j in range(boot.shape[1])
    ]
    acc, cost = Yp.mean(axis=1), Cp.mean(axis=1)
    s_acc, s_cost = Y.mean(axis=0), C.mean(axis=0)
    return {
        "lambdas": lambdas,
        "curve_acc": acc,
        "curve_cost": cost,
        "single_acc": s_acc,
        "single_cost": s_cost,
        "router_hull": nondecreasing_hull(cost, acc),
        "zero_hull": nondecreasing_hull(s_cost, s_acc),
        "aiq_router": full[0],
        "aiq_zero": full[1],
        "aiq_delta": full[2],
        "aiq_router_ci": ci[0],
        "aiq_zero_ci": ci[1],
        "aiq_delta_ci": ci[2],
        "served_acc": full[3],
        "served_cost": full[4],
        "served_acc_ci": ci[3],
        "served_cost_ci": ci[4],
        "best_single_acc": full[5],
        "best_single_cost": full[6],
        "cost_ratio": full[4] / full[6] if full[6] > 0 else float("nan"),
        "level": level,
        "n_questions": int(n),
    }
