"""Training data of the anchor predictor: the item layout, the fit / validation split of the training models, T1 truth.

:class:`Layout` is the fitted matrix's item layout (items, scenarios, balance weights, each scenario's columns) that
every step indexes; :class:`TrainingSplit` is the first step of the predictor: it splits the training models into
fit and validation models and hands the next steps a :class:`FitData`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pandas as pd

from ..json_floats import enc_list
from . import estimators as est
from .groups import grouped_test_mask

MIN_VALIDATION_MODELS = 10  # per scenario, for grouped validation (else the random share)
# share of the training models, the strongest by mean pool accuracy, that the frontier step's probe holds out of its
# own fit (:mod:`.frontier_probe`): its validation then holds models beyond its fit models' range, as a new model
# stronger than the board is beyond the training models'
FRONTIER_SHARE = 0.05


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


@dataclass
class Layout:
    """The item layout of a response matrix: item ids, scenario names (in order), each item's scenario, the balance
    weights (I_all,) and each scenario's column indices {scenario: (N_s,)}."""

    items: list
    scenarios: list
    w: np.ndarray
    cols: dict

    def to_dict(self, s: str) -> dict:
        """Scenario ``s``'s pool as the artifact stores it: its size, item ids and balance weights."""
        cols = self.cols[s]
        return {
            "n_items": int(len(cols)),
            "items": [str(self.items[j]) for j in cols],
            "balance_weights": enc_list(self.w[cols]),
        }

    @classmethod
    def from_dict(cls, blocks: dict, order: list) -> "Layout":
        """The layout of scenario blocks ({scenario: :meth:`to_dict`'s fields, decoded}) laid out one after another in
        ``order``."""
        items, w, cols, start = [], [], {}, 0
        for s in order:
            items += list(blocks[s]["items"])
            w.append(np.asarray(blocks[s]["balance_weights"], dtype=float))
            cols[s] = np.arange(start, start + len(blocks[s]["items"]))
            start += len(blocks[s]["items"])
        return cls(items, list(order), np.concatenate(w), cols)

    @classmethod
    def of(cls, matrix) -> "Layout":
        scenarios = list(pd.unique(matrix.scenarios))
        return cls(
            list(matrix.items),
            scenarios,
            matrix.balance_weights(),
            {s: np.flatnonzero(matrix.scenarios == s) for s in scenarios},
        )

    def pool_accuracy(self, Y) -> pd.DataFrame:
        """T1 truth: balance-weighted accuracy on the whole item pool, (M, scenarios) DataFrame, NaN where
        a model has no answer in a scenario. Y : (M, I_all) aligned with the items."""
        Y = np.asarray(Y, dtype=float)
        out = {}
        for s in self.scenarios:
            Ys = Y[:, self.cols[s]]
            acc = est.weighted_accuracy(Ys, self.w[self.cols[s]])
            out[s] = np.where(np.isnan(Ys).all(1), np.nan, acc)
        return pd.DataFrame(out, columns=self.scenarios)


@dataclass
class FitData:
    """What flows through the predictor's fit: the layout, the fit models' answers Yf (F, I_all) and full scores T2f
    (F, scenarios), the validation models' answers Yv (V, I_all), T1 truth T1v and full scores T2v (V, scenarios), the
    worker pool of the independent fits, the frontier probe's output ``probe`` (:mod:`.frontier_probe`), and the
    validation outputs the steps add as they fit: ``val`` {(clustering,
    n): (estimates {(scenario, estimator): (V,)}, full-score inputs {(scenario, estimator): (V,)})} (clustering
    "random": the random baseline) and ``records`` (one validation-MAE row per clustering, n, scenario, estimator)."""

    layout: Layout
    Yf: np.ndarray
    Yv: np.ndarray
    T1v: pd.DataFrame
    T2f: pd.DataFrame
    T2v: pd.DataFrame
    strong: np.ndarray | None = None  # (V,) bool: validation models among the strongest share of the training models
    strong_fit: np.ndarray | None = None  # (F,) bool: fit models among that share (the frontier probe's validation)
    pool: object = None
    val: dict = field(default_factory=dict)
    probe: object = None  # the frontier probe's output: (its FitData, its validation models' families or None)
    records: list = field(default_factory=list)


class TrainingSplit:
    """Step 1: the fit / validation split of the training models.

    Parameters: ``val_fraction`` (share of training models held out as validation models), ``seed``,
    ``max_fit_models`` (subsample the fit models to at most this many; None = all), ``frontier_share`` (the strongest
    share of the training models by mean pool accuracy over the scenarios, marked in :class:`FitData` for the
    frontier step, whose probe fits without them; 0 = none). The split itself does not depend on it.

    Fitted attributes: ``layout_`` (:class:`Layout`), ``validation_split_`` ("grouped" or "random"), ``n_fit_``,
    ``n_val_``, ``n_strong_`` (fit and validation models in the strongest share), ``val_groups_`` and
    ``fit_groups_`` (family of each validation / fit model, None for a random split), ``val_rows_``, ``fit_rows_``
    and ``strong_rows_`` (rows of the matrix).
    """

    def __init__(
        self,
        val_fraction: float = 0.25,
        seed: int = 0,
        max_fit_models: int | None = None,
        frontier_share: float = FRONTIER_SHARE,
    ):
        self.val_fraction, self.seed, self.max_fit_models = val_fraction, seed, max_fit_models
        self.frontier_share = frontier_share

    def fit(self, matrix, full_scores, train, groups) -> FitData:
        """Split the training rows ``train`` of ``matrix`` (see :meth:`AnchorPredictor.fit` for the arguments)."""
        rows = np.arange(matrix.shape[0]) if train is None else np.asarray(train)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        lay = self.layout_ = Layout.of(matrix)
        Y = matrix.scores[rows]
        t1_all = lay.pool_accuracy(Y).to_numpy()
        t2 = full_scores_wide(full_scores, np.asarray(matrix.models, dtype=object)[rows], lay.scenarios).to_numpy()
        fit_rel, val_rel = split_models(len(rows), self.val_fraction, self.seed)
        self.validation_split_ = "random"
        if groups is not None:
            is_val = grouped_test_mask(
                np.asarray(groups, dtype=object)[rows], self.val_fraction, f"validation:{self.seed}"
            )
            # whole families as validation models, unless that leaves a scenario with too few of them (few models,
            # or families that never ran it): then the random share, as without groups
            seen = ~np.isnan(Y)
            per_scen = [int((seen[is_val][:, lay.cols[s]].any(1)).sum()) for s in lay.scenarios]
            if min(per_scen) >= MIN_VALIDATION_MODELS and (~is_val).sum() >= MIN_VALIDATION_MODELS:
                fit_rel, val_rel = np.flatnonzero(~is_val), np.flatnonzero(is_val)
                self.validation_split_ = "grouped"
        if self.max_fit_models is not None and len(fit_rel) > self.max_fit_models:
            fit_rel = np.sort(np.random.default_rng(self.seed + 1).choice(fit_rel, self.max_fit_models, replace=False))
        strong_fit, strong = self._strongest(t1_all, fit_rel, val_rel)
        self.n_fit_, self.n_val_, self.n_strong_ = len(fit_rel), len(val_rel), int(strong_fit.sum() + strong.sum())
        # family of each validation / fit model (None: random validation): the intervals' folds follow families
        fam = None if self.validation_split_ != "grouped" else np.asarray(groups, dtype=object)[rows]
        self.val_groups_ = None if fam is None else fam[val_rel]
        self.fit_groups_ = None if fam is None else fam[fit_rel]
        self.val_rows_ = rows[
            val_rel
        ]  # rows of ``matrix`` used as validation models (adaptive calibration reuses them)
        self.fit_rows_ = rows[fit_rel]
        self.strong_rows_ = np.sort(np.concatenate([rows[fit_rel[strong_fit]], rows[val_rel[strong]]]))
        frame = partial(pd.DataFrame, columns=lay.scenarios)
        return FitData(
            lay,
            Y[fit_rel],
            Y[val_rel],
            frame(t1_all[val_rel]),
            frame(t2[fit_rel]),
            frame(t2[val_rel]),
            strong,
            strong_fit,
        )

    def _strongest(self, t1, fit_rel, val_rel) -> tuple[np.ndarray, np.ndarray]:
        """(strong fit (F,) bool, strong validation (V,) bool): the fit and validation rows among the
        ``frontier_share`` of the training rows with the highest mean pool accuracy (``t1`` (M, S), NaN where a model
        lacks a scenario); none while the fit would keep fewer than ``MIN_VALIDATION_MODELS`` models without them."""
        n_top = int(np.floor(self.frontier_share * len(t1)))
        strength = np.nanmean(np.where(np.isnan(t1).all(1, keepdims=True), -np.inf, t1), axis=1)
        top = np.argsort(-strength, kind="stable")[:n_top]
        strong_fit, strong = np.isin(fit_rel, top), np.isin(val_rel, top)
        if n_top == 0 or len(fit_rel) - strong_fit.sum() < MIN_VALIDATION_MODELS:
            return np.zeros(len(fit_rel), dtype=bool), np.zeros(len(val_rel), dtype=bool)
        return strong_fit, strong
