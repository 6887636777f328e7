"""Small leaderboards, the candidates: one :class:`Rule` per estimator (and D, lambda, eps) that
:mod:`.small_choice` chooses among, and the rows' MAE they are chosen by.

Per D in the predictor's ``dims``::

    anchor      anchor-weighted mean (reads no IRT)
    pirt        tutorial p-IRT, lambda = n / N
    gpirt       lam * anchor + (1 - lam) * pirt, the tutorial lambda b^2 / (v / (4 n) + b^2), b = mean half-item
                IRT error of the rows, v = their mean across-item variance
    gpirt_val   the same with lambda chosen on LAMBDA_GRID by the rows' MAE
    irt         IRT mean over all items
    shrunk      the anchor mean shrunk toward the training models' accuracies (estimation/shrinkage.py; no D)
    shrunk_joint  the same with every scenario's anchor mean at once, through the board's correlation of scenarios
    bank_joint  the answer bank (estimation/bank.py), one rule (no D) whose eps (BANK_EPS) is chosen inside it
    fill        the ridge fill-in on the same bank (estimation/fill.py); its lam (FILL_LAMBDAS) chosen as the bank's eps
    median      per model, the median of pirt, gpirt, gpirt_val and irt at D, shrunk, shrunk_joint and fill: no choice
                among them, so none of the selection noise of picking one of a dozen rules on a few dozen models
                (names.MEDIANS lists its members; the artifact serves it as a stack of kind median)

Pure numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import estimators as est
from .fill import FILL
from .names import MEDIANS
from .shrinkage import SHRINKAGE

__all__ = [
    "CANDIDATES",
    "BANK",
    "FILL",
    "LEARNED_RULES",
    "NO_IRT",
    "MEDIAN",
    "Rule",
    "rules_for",
    "needs_learned",
    "mae",
    "best",
]

CANDIDATES = ("anchor", "pirt", "gpirt", "gpirt_val", "irt", *SHRINKAGE)  # JSON-evaluable
BANK = "bank_joint"  # needs the artifact's learned file (the answer bank)
LEARNED_RULES = (BANK, FILL)  # rules that need the artifact's learned file (the bank's arrays)
NO_IRT = ("anchor", *LEARNED_RULES, *SHRINKAGE)  # rules that read no IRT fit (no D)
MEDIAN = "median"  # the median of the rules in MEDIANS["median"] at one D (an IRT rule: exported at the served D)


@dataclass(frozen=True)
class Rule:
    """One candidate: ``estimator`` at IRT dimension ``dim`` (unused by NO_IRT) with ``lam`` or ``eps``, or the
    median of ``parts`` (module doc)."""

    estimator: str
    dim: int
    lam: float | None = None
    eps: float | None = None
    parts: tuple = ()

    @property
    def irt(self) -> bool:
        return self.estimator not in NO_IRT

    def apply(self, base: dict) -> np.ndarray:
        """Estimates (M,) from ``base`` = {D: {"anchor", "irt", "pirt": (M,), "bank"?: {eps: (M,)}, "fill"?: {lam:
        (M,)}}} of one (scenario, n)."""
        if self.parts:
            return np.median([r.apply(base) for r in self.parts], axis=0)
        b = base[self.dim]
        if self.estimator == BANK:
            return b["bank"][self.eps]
        if self.estimator == FILL:
            return b["fill"][self.lam]
        if self.estimator in ("anchor", "irt", "pirt", *SHRINKAGE):
            return b[self.estimator]
        return est.gpirt_estimate(b["anchor"], b["pirt"], self.lam)


def rules_for(
    base: dict, bias: dict, var: np.ndarray, truth: np.ndarray, rows: np.ndarray, n_anchors: int, grid=est.LAMBDA_GRID
) -> tuple[list, dict]:
    """The candidates with their lambdas derived from ``rows`` only.

    base : {D: {"anchor", "irt", "pirt": (M,)}}; bias : {D: (M,)} half-item IRT errors; var : (M,) across-item
    variance per row; truth : (M,) T1; rows : bool (M,) -- the rows the lambdas may read.
    Returns (rules, {D: {"tutorial", "validation", "b", "v"}}).
    """
    dims = sorted(base)
    rules, lams = [Rule("anchor", dims[0])], {}
    for D in dims:
        a, p = base[D]["anchor"], base[D]["pirt"]
        ok = rows & np.isfinite(a) & np.isfinite(p) & np.isfinite(truth)
        okb = rows & np.isfinite(bias[D])
        b = float(np.mean(bias[D][okb])) if okb.any() else 0.0
        v = float(np.mean(var[ok])) if ok.any() else 0.0
        lam_val = est.choose_lambda(a[ok], p[ok], truth[ok], grid)[0] if ok.any() else 0.5
        lams[D] = {"tutorial": est.tutorial_lambda(b, v, n_anchors), "validation": lam_val, "b": b, "v": v}
        rules += [Rule("pirt", D), Rule("gpirt", D, lams[D]["tutorial"]), Rule("gpirt_val", D, lam_val), Rule("irt", D)]
    rules += [Rule(e, dims[0]) for e in SHRINKAGE if e in base[dims[0]]]
    rules += [Rule(BANK, dims[0], eps=e) for e in base[dims[0]].get("bank", {})]
    rules += [Rule(FILL, dims[0], lam=x) for x in base[dims[0]].get("fill", {})]
    members = [r for r in rules if r.estimator in MEDIANS[MEDIAN]]
    rules += [Rule(MEDIAN, D, parts=tuple(r for r in members if not r.irt or r.dim == D)) for D in dims]
    return rules, lams


def needs_learned(rule: Rule) -> bool:
    """Whether the artifact needs its learned file (the bank's arrays) to compute ``rule``."""
    return rule.estimator in LEARNED_RULES or any(r.estimator in LEARNED_RULES for r in rule.parts)


def mae(x: np.ndarray, t: np.ndarray, rows: np.ndarray) -> float:
    """Mean absolute error of ``x`` against ``t`` on ``rows`` where both are finite (inf when none)."""
    ok = rows & np.isfinite(x) & np.isfinite(t)
    return float(np.mean(np.abs(x[ok] - t[ok]))) if ok.any() else float("inf")


def best(rules: list, base: dict, truth: np.ndarray, rows: np.ndarray) -> Rule:
    """The rule with the lowest MAE on ``rows`` (ties: the earlier rule, so simpler estimators and smaller D win)."""
    return min(rules, key=lambda r: mae(r.apply(base), truth, rows))
