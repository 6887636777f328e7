"""Anchor selection of the anchor predictor: per-scenario anchor counts, KMeans anchors per (clustering, budget),
and views of the chosen anchors.

:class:`AnchorSetMixin` reads ``cols_``, ``w_``, ``irt_``, ``items_``, ``scenarios_`` and the parameters
``scenario_n``, ``n_values``, ``large_pool_items``, ``large_pool_scale``, ``n_init``, ``seed``; the predictor's
``fit`` fills ``anchors_`` ({(clustering, n, scenario): AnchorSet}) with :meth:`AnchorSetMixin._select`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import estimators as est
from ..anchors import AnchorSelector


@dataclass
class AnchorSet:
    """Anchors of one scenario for one (clustering, n).

    local : (n,) item indices within the scenario; items : (n,) column indices in the full matrix;
    weights : (n,) summing to 1.
    linear : the fit models' least-squares map from the anchor answers to the pool accuracy, {"fill" (n,): the
        answer used for an unanswered anchor (its mean on the fit models), "coef" (n,), "intercept"}; its score is
        one more feature of the learned regressors (:func:`linear_score`). None: no such feature (predictors and
        artifacts made before it).
    """

    scenario: str
    clustering: str
    n: int
    local: np.ndarray
    items: np.ndarray
    weights: np.ndarray
    linear: dict | None = None


def fit_linear(Ya: np.ndarray, target: np.ndarray, alpha: float = 1.0) -> dict:
    """Ridge (``alpha``, intercept unpenalized) of ``target`` (M,) on anchor answers Ya (M, n), NaN answers
    replaced by the anchor's mean: {"fill", "coef", "intercept"} for :func:`linear_score`."""
    Ya = np.asarray(Ya, dtype=float)
    seen = (~np.isnan(Ya)).sum(0)
    fill = np.where(seen > 0, np.nansum(Ya, axis=0) / np.maximum(seen, 1), 0.5)  # never answered: 0.5
    X = np.where(np.isnan(Ya), fill, Ya)
    xm, ym = X.mean(0), float(np.mean(target))
    Xc = X - xm
    coef = np.linalg.solve(Xc.T @ Xc + alpha * np.eye(X.shape[1]), Xc.T @ (np.asarray(target, dtype=float) - ym))
    return {"fill": fill, "coef": coef, "intercept": float(ym - xm @ coef)}


def linear_score(A: AnchorSet, Ya: np.ndarray) -> np.ndarray | None:
    """(M,) the anchor set's linear map applied to anchor answers Ya (M, n), rounded to 8 decimals like the
    abilities (the same answers give bit-identical features whatever the batch); None without a map."""
    lin = getattr(A, "linear", None)
    if lin is None:
        return None
    X = np.where(np.isnan(Ya), lin["fill"], Ya)
    return np.round(X @ lin["coef"] + lin["intercept"], 8)


# pickled predictors (data/artifacts/*/predictor.pkl) name the class by the public module that re-exports it
AnchorSet.__module__ = "tinybench_assets.core.predictor"


class AnchorSetMixin:
    """Anchor counts, KMeans anchor selection and anchor tables."""

    def n_for(self, s: str, n: int) -> int:
        """Anchor count of scenario ``s`` at budget ``n`` (at most the scenario's pool size).

        An explicit ``scenario_n`` entry wins; else pools of at least ``large_pool_items`` items get
        ``round(n * large_pool_scale)``; else ``n``.
        """
        pool = len(self.cols_[s])
        override = getattr(self, "scenario_n", {}).get(s)  # older pickles lack the attribute
        if override is not None:
            count = override[n] if isinstance(override, dict) else override[self.n_values.index(n)]
        elif pool >= getattr(self, "large_pool_items", 10**12):
            count = round(n * self.large_pool_scale)
        else:
            count = n
        return int(max(1, min(int(count), pool)))

    def _select(self, Yf, c, n, s) -> AnchorSet:
        """KMeans anchors of scenario ``s`` for (clustering ``c``, budget ``n``) from the fit models Yf (F, I_all)."""
        cols = self.cols_[s]
        Ys = Yf[:, cols]
        Ys = Ys[~np.isnan(Ys).all(1)]
        p = self.irt_[s]
        sel = AnchorSelector(n_anchors=self.n_for(s, n), clustering=c, n_init=self.n_init, random_state=self.seed)
        sel.fit(Ys, self.w_[cols], a=p.a, b=p.b)
        # the fit models' linear map from these anchors' answers to the pool accuracy: a feature of the learned
        # regressors (on family-grouped openllm splits it lowered a gradient-boosted regressor's joint MAE ~6 %)
        target = est.weighted_accuracy(Ys, self.w_[cols])
        linear = fit_linear(Ys[:, sel.anchors_], target) if self.learned else None
        return AnchorSet(s, c, n, sel.anchors_, cols[sel.anchors_], sel.weights_, linear)

    def _anchor_cols(self, c, n):
        """(sum of anchor counts,) column indices of every scenario's anchors for (c, n), in scenario order."""
        return np.concatenate([self.anchors_[(c, n, s)].items for s in self.scenarios_])

    def _mask_to_anchors(self, Y, c, n):
        """Copy of Y with every cell but the anchors of (c, n) set to NaN: no other answer can leak in."""
        keep = self._anchor_cols(c, n)
        out = np.full_like(Y, np.nan)
        out[:, keep] = Y[:, keep]
        return out

    def anchor_table(self) -> pd.DataFrame:
        """All anchors: one row per (clustering, n, scenario, anchor) with item id and weight."""
        rows = []
        for (c, n, s), A in self.anchors_.items():
            for _loc, col, wt in zip(A.local, A.items, A.weights):
                rows.append({"clustering": c, "n": n, "scenario": s, "n_anchors": len(A.items), "item": self.items_[col],
                             "item_index": int(col), "weight": float(wt)})
        return pd.DataFrame(rows)

    def anchor_items(self, clustering: str, n: int) -> dict:
        """{scenario: list of item ids} a new model must answer for (clustering, n)."""
        return {s: [self.items_[j] for j in self.anchors_[(clustering, n, s)].items] for s in self.scenarios_}
