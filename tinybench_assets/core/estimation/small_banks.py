"""Small leaderboards: what a set of board models gives the estimators that read their answers directly -- the
answer bank of bank_joint (estimation/bank.py), the ridge fill-in fill on the same bank (estimation/fill.py)
and the shrinkage prior of shrunk / shrunk_joint (estimation/shrinkage.py) -- for one budget's anchors, and those
estimators applied to rows answering these anchors. small_folds.py calls them per fold (training rows only),
small_board.py on every model when serving. Pure numpy."""

from __future__ import annotations

import numpy as np

from . import estimators as est
from .anchor_sets import AnchorSet
from .bank import bank_arrays
from .bank import bank_estimates as bank_estimates_of
from .fill import fill_estimates
from .shrinkage import ShrinkagePrior

__all__ = ["CLUSTERING", "build_bank", "bank_estimates", "fills", "anchor_matrix", "fit_prior"]

CLUSTERING = "correctness"  # the anchors' clustering (the artifact's ``clustering``)


def build_bank(Yb: np.ndarray, cols: dict, w: np.ndarray, anchors: dict) -> dict:
    """The answer bank of ``Yb``'s rows (bank.bank_arrays, as the big board's ``AnswerBank`` builds it and the artifact
    stores it). Yb : (F, I) the bank models' answers (a fold's TRAINING rows, or every model when serving); cols :
    {scenario: (I_s,)}; w : (I,); anchors : {scenario: (local (k,), weights (k,))} of one budget."""
    return bank_arrays(Yb, cols, w, {s: local for s, (local, _) in anchors.items()})


def bank_estimates(Y: np.ndarray, cols: dict, w: np.ndarray, anchors: dict, bank: dict, eps: dict) -> dict:
    """{scenario: (M,)} bank_joint of rows ``Y`` (M, I; only the anchors are read) with eps {scenario: eps}."""
    return bank_estimates_of(Y, cols, w, _sets(cols, anchors), bank, eps)


def fills(Y: np.ndarray, cols: dict, w: np.ndarray, anchors: dict, bank: dict, lam: dict) -> dict:
    """{scenario: (M,)} fill of rows ``Y`` (M, I; only the anchors are read) with lam {scenario: lam}."""
    return fill_estimates(Y, cols, w, _sets(cols, anchors), bank, lam)


def _sets(cols: dict, anchors: dict) -> dict:
    """{scenario: AnchorSet} of ``anchors`` ({scenario: (local, weights)} of one budget)."""
    return {
        s: AnchorSet(s, CLUSTERING, 0, np.asarray(local), cols[s][np.asarray(local)], np.asarray(weights))
        for s, (local, weights) in anchors.items()
    }


def anchor_matrix(Y: np.ndarray, w: np.ndarray, cols: dict, anchors: dict) -> np.ndarray:
    """(M, S) the anchor-weighted mean of every scenario (``anchors``: {scenario: (local, weights)} of one
    budget), NaN where a row answered none of the scenario's anchors."""
    out = np.full((len(Y), len(cols)), np.nan)
    for j, (s, c) in enumerate(cols.items()):
        local, weights = anchors[s]
        Ya = np.atleast_2d(Y[:, c[np.asarray(local)]])
        has = ~np.isnan(Ya).all(1)
        if has.any():
            out[has, j] = est.anchor_estimate(Ya[has], weights)
    return out


def fit_prior(Yb: np.ndarray, truth: np.ndarray, w: np.ndarray, cols: dict, anchors: dict) -> ShrinkagePrior:
    """The shrinkage prior of rows ``Yb`` (their accuracies ``truth`` (F, S) and anchor estimates at ``anchors``)."""
    return ShrinkagePrior.fit(truth, anchor_matrix(Yb, w, cols, anchors), list(cols))
