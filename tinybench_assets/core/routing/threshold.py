"""A RouteLLM-style threshold for any router, and its calibration on a user's own questions.

RouteLLM routes two models with one number: a question goes to the strong model when the router's score passes a
threshold, and the threshold is calibrated so that a chosen share of the user's traffic goes to the strong model.
tinybench's routers give every model's P(correct); the threshold generalises as the cost module's cascade
(core/routing/cost.py, ``Policy("cascade")``) does, with the strongest model last:

* the **strongest** model is the one with the best training accuracy (``prior``; the best single model, which the
  other policies fall back to as well);
* the other models are tried cheapest first (their expected cost per question where costs landed, else the weakest
  first, by training accuracy); a question goes to the first whose P(correct) is at least the threshold, **else to
  the strongest**.

So a question goes to the strongest model exactly when no other model's P(correct) reaches the threshold: its
*strong score* ``max over the other models of P`` is below it. The share of questions sent to the strongest model
rises with the threshold (0: none, unless a question is out of distribution; above every score: all), which makes
calibration a quantile of the strong scores. With two models (RouteLLM's boards) the rule reads: the weak model when
its P(correct) >= threshold, else the strong one. A question the router flags out of distribution goes to the
strongest model whatever the threshold (core/routing/served.py), so it counts as strong in every share here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .cost import Policy


def strongest(prior) -> int:
    """The strongest model: the best training accuracy (the first of ties, as ``Policy`` picks its best single)."""
    return int(np.argmax(np.asarray(prior, dtype=float)))


@dataclass(frozen=True)
class ThresholdPolicy:
    """Route with a threshold (module docstring); ``picks`` has ``Policy.picks``' signature, so
    ``ServedRouter.route`` serves it as it serves the cost policies. ``model_cost`` None: no costs landed."""

    value: float

    def __post_init__(self):
        if not np.isfinite(self.value):
            raise ValueError(f"threshold {self.value!r} is not a finite number")

    def order_key(self, model_cost, prior) -> np.ndarray:
        """What orders the models (cheapest first): expected cost, else training accuracy; the strongest last."""
        prior = np.asarray(prior, dtype=float)
        key = prior.copy() if model_cost is None else np.asarray(model_cost, dtype=float).copy()
        key[strongest(prior)] = np.inf
        return key

    def picks(self, P: np.ndarray, model_cost, prior) -> np.ndarray:
        return Policy("cascade", float(self.value)).picks(P, self.order_key(model_cost, prior), prior)

    def label(self) -> str:
        return f"threshold {self.value:.6g}"

    def as_dict(self) -> dict:
        return {"policy": "threshold", "value": float(self.value)}


def strong_scores(P: np.ndarray, prior, ood=None) -> np.ndarray:
    """Each question's strong score (n,): the highest P(correct) of the models other than the strongest; the
    question goes to the strongest model exactly when its score is below the threshold. An out-of-distribution
    question (``ood``) scores -inf: it goes to the strongest model at any threshold."""
    P = np.asarray(P, dtype=float)
    if P.ndim != 2 or P.shape[1] < 2:
        raise ValueError(f"a threshold needs P(correct) of two models or more per question, got shape {P.shape}")
    others = np.delete(P, strongest(prior), axis=1)
    s = others.max(axis=1)
    return s if ood is None else np.where(np.asarray(ood, dtype=bool), -np.inf, s)


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


def share_threshold(scores: np.ndarray, share: float) -> float:
    """The threshold that sends ``share`` of the questions (their strong scores) to the strongest model, as near
    as ties allow: round(share x n) questions score below it where no tie straddles that rank (out-of-distribution
    questions, scored -inf, are below any threshold)."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"strong share {share!r} is not in [0, 1]")
    s = np.sort(np.asarray(scores, dtype=float))
    if len(s) == 0:
        raise ValueError("no questions to calibrate on")
    f = s[np.isfinite(s)]
    k = max(int(round(share * len(s))) - (len(s) - len(f)), 0)
    if len(f) == 0:
        return 0.0
    if k == 0:
        return float(f[0])
    if k >= len(f):
        return float(np.nextafter(f[-1], np.inf))
    lo, hi = float(f[k - 1]), float(f[k])
    if lo < hi:
        return _between(lo, hi)
    below, upto = int(np.searchsorted(f, lo, "left")), int(np.searchsorted(f, lo, "right"))
    if k - below <= upto - k:  # a tie straddles rank k: its nearer side
        return lo
    return _between(lo, float(f[upto])) if upto < len(f) else float(np.nextafter(lo, np.inf))


def threshold_picks(thr: float, P, prior, model_cost=None, ood=None) -> np.ndarray:
    """The chosen model of every question at threshold ``thr``, out-of-distribution questions on the strongest."""
    picks = ThresholdPolicy(thr).picks(P, model_cost, prior)
    return picks if ood is None else np.where(np.asarray(ood, dtype=bool), strongest(prior), picks)


def calibrate_share(P, prior, share: float, ood=None, model_cost=None) -> Calibration:
    """The threshold sending ``share`` of these questions to the strongest model (RouteLLM's calibration)."""
    thr = share_threshold(strong_scores(P, prior, ood), share)
    return _measured(thr, P, prior, ood, model_cost, {"strong_share": float(share)})


def calibrate_cost(P, prior, model_cost, max_cost: float, ood=None, n_grid: int = 400) -> Calibration:
    """The highest threshold (the most questions on the strongest model) whose expected cost per question on these
    questions is at most ``max_cost`` (each model priced at its expected cost). Thresholds tried: the strong
    scores' quantiles (``n_grid``) and both ends. None within the budget: the lowest threshold, ``met`` False."""
    if model_cost is None:
        raise ValueError("max_cost needs each model's expected cost (this router was trained without costs)")
    s = strong_scores(P, prior, ood)
    finite = s[np.isfinite(s)]
    cands = [0.0] if not len(finite) else np.unique(np.quantile(finite, np.linspace(0, 1, n_grid + 1)))
    cands = np.unique(np.concatenate([[0.0], cands, [np.nextafter(finite.max(), np.inf) if len(finite) else 1.0]]))
    key_cost = np.asarray(model_cost, dtype=float)
    costs = np.array([key_cost[threshold_picks(float(t), P, prior, model_cost, ood)].mean() for t in cands])
    ok = np.flatnonzero(costs <= max_cost + 1e-15)
    i = int(ok[-1]) if len(ok) else int(np.argmin(costs))
    cal = _measured(float(cands[i]), P, prior, ood, model_cost, {"max_cost": float(max_cost)})
    return cal if len(ok) else Calibration(**{**cal.__dict__, "met": False})


def _measured(thr: float, P, prior, ood, model_cost, target: dict) -> Calibration:
    picks = threshold_picks(thr, P, prior, model_cost, ood)
    strong = picks == strongest(prior)
    cost = None if model_cost is None else float(np.asarray(model_cost, dtype=float)[picks].mean())
    return Calibration(float(thr), float(strong.mean()), cost, int(len(strong)), target)
