"""Base estimates of the anchor predictor (anchor, irt, p-IRT, per-scenario and joint fit), the learned
regressors' features, and the random-sampling baseline.

:class:`BaseEstimatesMixin` reads ``anchors_``, ``irt_``, ``cols_``, ``w_``, ``scenarios_`` and the parameters
``device``, ``n_values`` (through ``n_for``); it sets nothing.
"""
from __future__ import annotations

import numpy as np

from .. import estimators as est
from ..irt import estimate_ability, item_curve
from .anchor_sets import linear_score


def feature_width(anchor_sets: dict, irt: dict, s: str, kind: str) -> int:
    """Width of :meth:`BaseEstimatesMixin._features`' regressor features of scenario ``s``: its anchors + D + its
    linear score when it has one ("sep"); every scenario's anchors + the joint D + every linear score ("joint").
    anchor_sets : {scenario: AnchorSet} of one (clustering, n); irt : {scenario | "joint": fit with ``a`` (I, D)}."""
    def has_linear(A):
        return getattr(A, "linear", None) is not None

    if kind == "sep":
        A = anchor_sets[s]
        return len(A.items) + int(irt[s].a.shape[1]) + int(has_linear(A))
    return (sum(len(A.items) for A in anchor_sets.values()) + int(irt["joint"].a.shape[1])
            + sum(has_linear(A) for A in anchor_sets.values()))


class BaseEstimatesMixin:
    """Estimates that need no validation fit, and the regressors' features."""

    def _features(self, Y, c, n):
        """Base estimates and regressor features for rows Y (M, I_all); reads only the anchors of (c, n).

        Returns (base: {(s, estimator): (M,)}, feats: {("sep"|"joint", s): (M, F)}, has: {s: (M,) bool}).
        """
        Y = np.asarray(Y, dtype=float)
        base, feats, has, lin_all = {}, {}, {}, []
        allc = self._anchor_cols(c, n)
        Yall = Y[:, allc]
        pj = self.irt_["joint"]
        thj = estimate_ability(Yall, pj.a[allc], pj.b[allc], device=self.device)
        for s in self.scenarios_:
            A = self.anchors_[(c, n, s)]
            cols, w = self.cols_[s], self.w_[self.cols_[s]]
            Ya = Y[:, A.items]
            h = ~np.isnan(Ya).all(1)
            has[s] = h
            Yz = np.where(np.isnan(Ya), 0.0, Ya)  # a partly answered anchor set is scored as answered
            p = self.irt_[s]
            th = estimate_ability(Ya, p.a[A.local], p.b[A.local], device=self.device)
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
        for s in self.scenarios_:  # joint: every anchor, the joint abilities, every scenario's linear score
            feats[("joint", s)] = np.hstack([Yall, np.round(thj, 8)] + lin_all)
        return base, feats, has

    def _random(self, Y, s, n, seed):
        """Random-sampling baseline of scenario ``s``: (M,) estimates from ``n_for(s, n)`` random items per row of Y."""
        cols = self.cols_[s]
        Ys = Y[:, cols]
        h = ~np.isnan(Ys).all(1)
        return np.where(h, est.random_estimate(Ys, self.w_[cols], self.n_for(s, n), seed=seed), np.nan)
