"""Training data of the anchor predictor: full scores, the seeded model splits, the fit / validation split, T1 truth.

:class:`TrainingSplitMixin` sets ``items_``, ``scenarios_``, ``item_scenarios_``, ``w_``, ``cols_``,
``validation_split_``, ``n_fit_``, ``n_val_``, ``val_groups_``, ``val_rows_`` and ``fit_rows_``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import estimators as est
from ..groups import grouped_test_mask

MIN_VALIDATION_MODELS = 10  # per scenario, for grouped validation (else the random share)


def full_scores_wide(full_scores: pd.DataFrame | None, models, scenarios) -> pd.DataFrame:
    """Models x scenarios table of full-benchmark scores (NaN where unknown).

    Accepts a long table (model, scenario, full_benchmark_score) or an already wide one.
    """
    if full_scores is None:
        return pd.DataFrame(np.nan, index=list(models), columns=list(scenarios))
    if {"model", "scenario", "full_benchmark_score"} <= set(full_scores.columns):
        wide = full_scores.pivot_table(index="model", columns="scenario", values="full_benchmark_score", aggfunc="mean")
    else:
        wide = full_scores
    return wide.reindex(index=list(models), columns=list(scenarios)).astype(float)


def split_models(n_models: int, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Seeded random split of row indices into (rest, held_out) with ``round(fraction * n)`` held out."""
    perm = np.random.default_rng(seed).permutation(n_models)
    k = int(round(fraction * n_models))
    return np.sort(perm[k:]), np.sort(perm[:k])


class TrainingSplitMixin:
    """The item layout of the fitted matrix and the split of the training models into fit and validation models.

    Reads the parameters ``val_fraction``, ``seed``, ``max_fit_models``.
    """

    def _split_training(self, matrix, full_scores, train, groups):
        """Set the item layout and the fit / validation split (see :meth:`AnchorPredictor.fit` for the arguments).

        Returns (Yf (F, I_all), Yv (V, I_all), T1v (V, scenarios), T2f (F, scenarios), T2v (V, scenarios)):
        the fit and validation models' scores, their pool accuracy (T1) and full-benchmark scores (T2).
        """
        rows = np.arange(matrix.shape[0]) if train is None else np.asarray(train)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        self.items_ = list(matrix.items)
        self.scenarios_ = list(pd.unique(matrix.scenarios))
        self.item_scenarios_ = np.asarray(matrix.scenarios)
        self.w_ = matrix.balance_weights()
        self.cols_ = {s: np.flatnonzero(matrix.scenarios == s) for s in self.scenarios_}
        Y = matrix.scores[rows]
        t1_all = self.pool_accuracy(Y).to_numpy()
        t2 = full_scores_wide(full_scores, np.asarray(matrix.models, dtype=object)[rows], self.scenarios_).to_numpy()
        fit_rel, val_rel = split_models(len(rows), self.val_fraction, self.seed)
        self.validation_split_ = "random"
        if groups is not None:
            is_val = grouped_test_mask(np.asarray(groups, dtype=object)[rows], self.val_fraction, f"validation:{self.seed}")
            # whole families as validation models, unless that leaves a scenario with too few of them (few models,
            # or families that never ran it): then the random share, as without groups
            seen = ~np.isnan(Y)
            per_scen = [int((seen[is_val][:, self.cols_[s]].any(1)).sum()) for s in self.scenarios_]
            if min(per_scen) >= MIN_VALIDATION_MODELS and (~is_val).sum() >= MIN_VALIDATION_MODELS:
                fit_rel, val_rel = np.flatnonzero(~is_val), np.flatnonzero(is_val)
                self.validation_split_ = "grouped"
        if self.max_fit_models is not None and len(fit_rel) > self.max_fit_models:
            fit_rel = np.sort(np.random.default_rng(self.seed + 1).choice(fit_rel, self.max_fit_models, replace=False))
        self.n_fit_, self.n_val_ = len(fit_rel), len(val_rel)
        # family of each validation model (None: random validation): the served intervals' folds follow families
        self.val_groups_ = None if self.validation_split_ != "grouped" else np.asarray(groups, dtype=object)[rows][val_rel]
        self.val_rows_ = rows[val_rel]  # rows of ``matrix`` used as validation models (adaptive calibration reuses them)
        self.fit_rows_ = rows[fit_rel]
        Yf, Yv = Y[fit_rel], Y[val_rel]
        T1v = pd.DataFrame(t1_all[val_rel], columns=self.scenarios_)
        T2f = pd.DataFrame(t2[fit_rel], columns=self.scenarios_)
        T2v = pd.DataFrame(t2[val_rel], columns=self.scenarios_)
        return Yf, Yv, T1v, T2f, T2v

    def pool_accuracy(self, Y) -> pd.DataFrame:
        """T1 truth: balance-weighted accuracy on the whole item pool, (M, scenarios) DataFrame, NaN where
        a model has no answer in a scenario. Y : (M, I_all) aligned with the fitted items."""
        Y = np.asarray(Y, dtype=float)
        out = {}
        for s in self.scenarios_:
            Ys = Y[:, self.cols_[s]]
            acc = est.weighted_accuracy(Ys, self.w_[self.cols_[s]])
            out[s] = np.where(np.isnan(Ys).all(1), np.nan, acc)
        return pd.DataFrame(out, columns=self.scenarios_)
