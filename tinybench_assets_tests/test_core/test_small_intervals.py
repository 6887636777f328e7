"""The small boards' intervals (core/estimation/small_intervals.py) and the big predictor's validation folds
(core/estimation/served_intervals.py), on small hand-made inputs: the ungrouped conformal quantile, the widest of
several intervals, the T2 map cross-fitted without the scored fold, pooled widths where the other residuals are all
zero, and folds that keep a family together."""

from __future__ import annotations

import numpy as np
import pytest

from tinybench_assets.core.estimation.calibration import ConformalInterval, IsotonicCalibrator
from tinybench_assets.core.estimation.served_intervals import SERVED_FOLDS, ServedIntervals, validation_folds
from tinybench_assets.core.estimation.small_intervals import (
    fold_isotonic,
    pooled_half_widths,
    symmetric_interval,
    widest,
)


def test_symmetric_interval_without_groups_is_the_finite_sample_quantile():
    ci = symmetric_interval(np.zeros(19), np.arange(1, 20) / 100, 0.1, "none")
    assert (ci.q_lo_, ci.q_hi_, ci.n_) == (-0.18, 0.18, 19)


def test_widest_takes_the_widest_bounds_and_the_fewest_residuals():
    a, b = ConformalInterval(0.1, "none"), ConformalInterval(0.1, "none")
    a.q_lo_, a.q_hi_, a.n_ = -1.0, 1.0, 5
    b.q_lo_, b.q_hi_, b.n_ = -2.0, 2.0, 10
    c = widest([a, b])
    assert (c.q_lo_, c.q_hi_, c.n_) == (-2.0, 2.0, 5)


def test_the_t2_map_of_each_fold_is_fitted_without_it():
    """Ten pairs (the minimum) in folds of 8, 1 and 1: each fold's T2 is the isotonic map of the other folds'
    pairs (two pairs are enough), never one that saw the fold."""
    rng = np.random.default_rng(0)
    x = rng.random(10)
    t = x + rng.normal(0, 0.05, 10)
    folds = np.array([0] * 8 + [1, 2])
    oof, cal = fold_isotonic(x, t, folds)
    assert cal is not None and np.isfinite(oof).all()
    for f in range(3):
        tr = folds != f
        want = IsotonicCalibrator(tails=True).fit(x[tr], t[tr]).transform(x[folds == f])
        np.testing.assert_allclose(oof[folds == f], want)


def test_a_residual_whose_others_are_all_exact_is_scaled_by_its_own_keys_mae():
    """Key "a": five exact estimates and one 0.4 off. Its leave-one-out MAE is 0 for the outlier, so it is scaled by
    a's MAE (0.4 / 6): score 6, the largest pooled score, so a's half-width is 6 x 0.4 / 6 = 0.4."""
    rows = np.ones(6, dtype=bool)
    est = {"a": np.array([0.5] * 5 + [0.9]), "b": 0.5 + np.arange(6) / 100}
    h = pooled_half_widths(est, {"a": np.full(6, 0.5), "b": np.full(6, 0.5)}, rows, 0.1)
    assert h["a"] == pytest.approx(0.4, abs=1e-12)


def test_validation_folds_keep_a_family_together_use_every_fold_and_follow_the_seed():
    groups = np.repeat([f"g{i}" for i in range(100)], 3)
    f = validation_folds(300, groups, 0)
    assert all(len(set(f[groups == g])) == 1 for g in np.unique(groups))
    assert set(f) == set(range(SERVED_FOLDS))
    assert not np.array_equal(validation_folds(50, None, 0), validation_folds(50, None, 1))


def test_two_validation_pairs_are_enough_for_a_served_interval():
    step = ServedIntervals(0.1, "none")
    step.intervals_ = {}
    pairs = [(np.array([0.5]), np.array([0.52])), (np.array([0.6]), np.array([0.58]))]
    step._fit_pairs(10, {("s", "tinybench"): pairs})
    assert (10, "s", "tinybench") in step.intervals_
