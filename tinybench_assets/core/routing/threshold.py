"""A RouteLLM-style threshold for any router, and its calibration on a user's own questions.

RouteLLM routes two models with one number: a question goes to the strong model when the router's preference for it
reaches a threshold, and the threshold is calibrated so that a chosen share of the user's traffic goes to the strong
model. tinybench's routers give every model's P(correct); the threshold reads them as the router's RouteLLM measures
do (core/routing/gap.py's ``preference``: P_strong - P_weak, on which the served APGR is measured), for any number of
models:

* the **strongest** model is the one with the best training accuracy (``prior``; the best single model, which the
  cost policies of core/routing/cost.py fall back to as well);
* a question's **gain** is the strongest model's P(correct) minus the best P(correct) of the other models: what the
  strongest model is expected to add;
* at threshold t a question goes to the strongest model when its gain is at least t, else to the most likely of the
  other models (argmax of P among them, ties to the better training accuracy: the accuracy policy among them).

The higher the threshold, the fewer questions go to the strongest model (RouteLLM's direction); the share sent there
falls from 1 (t <= -1) to 0 (t > 1), which makes calibration a quantile of the gains. With two models the rule is
RouteLLM's: the strong model when P_strong - P_weak >= t, else the weak one. A question the router flags out of
distribution goes to the strongest model at any threshold (core/routing/served.py), so it counts as strong here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .metrics import route


def strongest(prior) -> int:
    """The strongest model: the best training accuracy (the first of ties, as ``Policy`` picks its best single)."""
    return int(np.argmax(np.asarray(prior, dtype=float)))


def _others(P: np.ndarray, prior) -> tuple[int, np.ndarray]:
    P = np.asarray(P, dtype=float)
    if P.ndim != 2 or P.shape[1] < 2:
        raise ValueError(f"a threshold needs P(correct) of two models or more per question, got shape {P.shape}")
    s = strongest(prior)
    return s, np.array([j for j in range(P.shape[1]) if j != s])


def gains(P: np.ndarray, prior, ood=None) -> np.ndarray:
    """Each question's gain (n,): the strongest model's P(correct) minus the best of the other models'; it goes to
    the strongest model exactly when its gain reaches the threshold. An out-of-distribution question (``ood``)
    gains +inf: it goes to the strongest model at any threshold."""
    s, others = _others(P, prior)
    P = np.asarray(P, dtype=float)
    g = P[:, s] - P[:, others].max(axis=1)
    return g if ood is None else np.where(np.asarray(ood, dtype=bool), np.inf, g)


@dataclass(frozen=True)
class ThresholdPolicy:
    """Route with a threshold (module docstring); ``picks`` has ``Policy.picks``' signature, so
    ``ServedRouter.route`` serves it as it serves the cost policies (``model_cost`` is not read)."""

    value: float

    def __post_init__(self):
        if not np.isfinite(self.value):
            raise ValueError(f"threshold {self.value!r} is not a finite number")

    def picks(self, P: np.ndarray, model_cost, prior) -> np.ndarray:
        s, others = _others(P, prior)
        P, prior = np.asarray(P, dtype=float), np.asarray(prior, dtype=float)
        best_other = others[route(P[:, others], prior[others])]
        return np.where(gains(P, prior) >= self.value, s, best_other)

    def label(self) -> str:
        return f"threshold {self.value:.6g}"

    def as_dict(self) -> dict:
        return {"policy": "threshold", "value": float(self.value)}


def threshold_picks(thr: float, P, prior, ood=None) -> np.ndarray:
    """The chosen model of every question at threshold ``thr``, out-of-distribution questions on the strongest."""
    picks = ThresholdPolicy(thr).picks(P, None, prior)
    return picks if ood is None else np.where(np.asarray(ood, dtype=bool), strongest(prior), picks)


@dataclass(frozen=True)
class Calibration:
    """A calibrated threshold and what it gives on the questions it was calibrated on."""

    threshold: float
    strong_share: float  # share of the calibration questions it sends to the strongest model
    mean_cost: float | None  # their expected cost per question (None: no costs)
    n_questions: int
    target: dict  # what was asked: {"strong_share": x} or {"max_cost": c}
    met: bool = True  # False: no threshold reaches the target (max_cost below the cheapest routing)

    def as_dict(self) -> dict:
        return {
            "threshold": self.threshold,
            "strong_share": self.strong_share,
            "mean_cost": self.mean_cost,
            "n_questions": self.n_questions,
            "target": dict(self.target),
            "met": self.met,
        }


def _between(lo: float, hi: float) -> float:
    """A threshold strictly above ``lo`` and at most ``hi``: the midpoint, or the next float above ``lo``."""
    mid = lo + (hi - lo) / 2
    return float(mid if lo < mid <= hi else np.nextafter(lo, np.inf))


def share_threshold(g: np.ndarray, share: float) -> float:
    """The threshold that sends ``share`` of the questions (their gains ``g``) to the strongest model, as near as
    ties allow: round(share x n) questions gain at least it where no tie straddles that rank (out-of-distribution
    questions, +inf, reach any threshold)."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"strong share {share!r} is not in [0, 1]")
    g = np.sort(np.asarray(g, dtype=float))
    if len(g) == 0:
        raise ValueError("no questions to calibrate on")
    f = g[np.isfinite(g)]
    k = max(int(round(share * len(g))) - (len(g) - len(f)), 0)  # the finite gains to send to the strongest
    if len(f) == 0:
        return 0.0
    if k == 0:
        return float(np.nextafter(f[-1], np.inf))
    if k >= len(f):
        return float(f[0])
    lo, hi = float(f[len(f) - k - 1]), float(f[len(f) - k])  # the highest gain kept off, the lowest sent
    if lo < hi:
        return _between(lo, hi)
    above = len(f) - int(np.searchsorted(f, lo, "right"))  # a tie straddles rank k: its nearer side
    reach = len(f) - int(np.searchsorted(f, lo, "left"))
    if reach - k <= k - above:
        return lo  # the tied questions go to the strongest model
    nxt = f[len(f) - above] if above else np.inf
    return _between(lo, float(nxt)) if np.isfinite(nxt) else float(np.nextafter(lo, np.inf))


def calibrate_share(P, prior, share: float, ood=None, model_cost=None) -> Calibration:
    """The threshold sending ``share`` of these questions to the strongest model (RouteLLM's calibration)."""
    thr = share_threshold(gains(P, prior, ood), share)
    return _measured(thr, P, prior, ood, model_cost, {"strong_share": float(share)})


def calibrate_cost(P, prior, model_cost, max_cost: float, ood=None, n_grid: int = 400) -> Calibration:
    """The threshold sending the most of these questions to the strongest model whose expected cost per question on
    them is at most ``max_cost`` (each model priced at its expected cost). Thresholds tried: the gains' quantiles
    (``n_grid``) and both ends. None within the budget: the cheapest, ``met`` False."""
    if model_cost is None:
        raise ValueError("max_cost needs each model's expected cost (this router was trained without costs)")
    g = gains(P, prior, ood)
    f = g[np.isfinite(g)]
    cands = np.quantile(f, np.linspace(0, 1, n_grid + 1)) if len(f) else np.array([0.0])
    top = np.nextafter(f.max(), np.inf) if len(f) else 1.0
    cands = np.unique(np.concatenate([[-1.0, top], cands]))
    price = np.asarray(model_cost, dtype=float)
    picks = [threshold_picks(float(t), P, prior, ood) for t in cands]
    costs = np.array([price[p].mean() for p in picks])
    shares = np.array([(p == strongest(prior)).mean() for p in picks])
    ok = np.flatnonzero(costs <= max_cost + 1e-15)
    i = int(ok[np.lexsort((costs[ok], -shares[ok]))[0]]) if len(ok) else int(np.argmin(costs))
    cal = _measured(float(cands[i]), P, prior, ood, model_cost, {"max_cost": float(max_cost)})
    return cal if len(ok) else Calibration(**{**cal.__dict__, "met": False})


def _measured(thr: float, P, prior, ood, model_cost, target: dict) -> Calibration:
    picks = threshold_picks(thr, P, prior, ood)
    strong = picks == strongest(prior)
    cost = None if model_cost is None else float(np.asarray(model_cost, dtype=float)[picks].mean())
    return Calibration(float(thr), float(strong.mean()), cost, int(len(strong)), target)
