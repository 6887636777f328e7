"""Base estimates of the anchor predictor (anchor, irt, p-IRT, per-scenario and joint fit), the learned
regressors' features, and the random-sampling baseline: functions of the fitted steps, no state of their own."""

from __future__ import annotations

import numpy as np

from ..irt import item_curve
from . import estimators as est
from .anchor_sets import linear_score


def feature_width(anchor_sets: dict, irt: dict, s: str, kind: str) -> int:
    """Width of :func:`features`' regressor features of scenario ``s``: its anchors + D + its linear score when it
    has one ("sep"); every scenario's anchors + the joint D + every linear score ("joint").
    anchor_sets : {scenario: AnchorSet} of one (clustering, n); irt : {scenario | "joint": fit with ``a`` (I, D)}."""
    if kind == "sep":
        A = anchor_sets[s]
        return len(A.items) + int(irt[s].a.shape[1]) + int(A.linear is not None)
    return (
        sum(len(A.items) for A in anchor_sets.values())
        + int(irt["joint"].a.shape[1])
        + sum(A.linear is not None for A in anchor_sets.values())
    )


def features(Y, lay, irt, anchors, c, n):
    """Base estimates and regressor features for rows Y (M, I_all); reads only the anchors of (c, n).

    lay : the item layout; irt : the fitted IRT step; anchors : the fitted anchor step.
    Returns (base: {(s, estimator): (M,)}, feats: {("sep"|"joint", s): (M, F)}, has: {s: (M,) bool}).
    """
    Y = np.asarray(Y, dtype=float)
    base, feats, has, lin_all = {}, {}, {}, []
    allc = anchors.columns(c, n, lay.scenarios)
    Yall = Y[:, allc]
    pj = irt.params_["joint"]
    thj = irt.ability("joint", Yall, allc)
    for s in lay.scenarios:
        A = anchors.sets_[(c, n, s)]
        cols, w = lay.cols[s], lay.w[lay.cols[s]]
        Ya = Y[:, A.items]
        h = ~np.isnan(Ya).all(1)
        has[s] = h
        Yz = np.where(np.isnan(Ya), 0.0, Ya)  # a partly answered anchor set is scored as answered
        p = irt.params_[s]
        th = irt.ability(s, Ya, A.local)
        P = item_curve(th, p.a, p.b)
        Pj = item_curve(thj, pj.a[cols], pj.b[cols])
        vals = {
            "anchor": est.anchor_estimate(Ya, A.weights),
            "irt": est.irt_estimate(P, w),
            "pirt": est.pirt_estimate(Yz, P, A.local, w),
            "irt_joint": est.irt_estimate(Pj, w),
            "pirt_joint": est.pirt_estimate(Yz, Pj, A.local, w),
        }
        for k, v in vals.items():
            base[(s, k)] = np.where(h, v, np.nan)
        # Abilities enter the trees rounded: models with the same answers get bit-identical features whatever
        # else is in the batch, so a tree split (often at such a shared value) never flips on float noise.
        lin = linear_score(A, Ya)
        feats[("sep", s)] = np.hstack([Ya, np.round(th, 8)] + ([] if lin is None else [lin[:, None]]))
        if lin is not None:
            lin_all.append(lin[:, None])
    for s in lay.scenarios:  # joint: every anchor, the joint abilities, every scenario's linear score
        feats[("joint", s)] = np.hstack([Yall, np.round(thj, 8)] + lin_all)
    return base, feats, has


def random_baseline(Y, lay, anchors, s, n, seed):
    """Random-sampling baseline of scenario ``s``: (M,) estimates from ``anchors.n_for(s, n)`` random items per row."""
    cols = lay.cols[s]
    Ys = Y[:, cols]
    h = ~np.isnan(Ys).all(1)
    return np.where(h, est.random_estimate(Ys, lay.w[cols], anchors.n_for(s, n), seed=seed), np.nan)
