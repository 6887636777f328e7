"""Stacks (step 8), calibrators (step 9), their isotonic maps and conformal intervals, and the small boards' nested
stratified anchors: properties their docstrings state, each on a tiny synthetic board."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from tinybench_assets.core.estimation.calibration import (
    ConformalInterval,
    IsotonicCalibrator,
    StoredIsotonicMap,
    coverage,
    cross_fitted_isotonic,
)
from tinybench_assets.core.estimation.calibrators import Calibrators
from tinybench_assets.core.estimation.stacks import Stacks
from tinybench_assets.core.estimation.strata import nested_order, prefix_allocation

KEY = ("kmeans", 30)


def _data(val, t1, t2):
    """The validation data a step's ``fit`` reads: one scenario "s"."""
    return SimpleNamespace(
        val=val, T1v={"s": pd.Series(t1)}, T2v={"s": pd.Series(t2)}, layout=SimpleNamespace(scenarios=["s"]), records=[]
    )


def _two_members(rng, t1, t2, swap=False):
    """gbm tracks the T1 target and fill's T2 input tracks the T2 target (``swap``: the other way round); the rest
    is noise."""
    m = len(t1)
    good1, good2 = t1 + rng.normal(0, 0.01, m), t2 + rng.normal(0, 0.01, m)
    noise1, noise2 = rng.uniform(0.2, 0.8, m), rng.uniform(0.2, 0.8, m)
    if swap:
        return {("s", "gbm"): noise1, ("s", "fill"): good1}, {("s", "gbm"): good2, ("s", "fill"): noise2}
    return {("s", "gbm"): good1, ("s", "fill"): noise1}, {("s", "gbm"): noise2, ("s", "fill"): good2}


def test_stack_weights_are_convex_and_fitted_on_each_targets_own_inputs():
    """w_t1 is fitted on the T1 estimates against T1, w_t2 on the T2 inputs against T2: both convex."""
    rng = np.random.default_rng(0)
    t1, t2 = rng.uniform(0.2, 0.8, 60), rng.uniform(0.2, 0.8, 60)
    step = Stacks(seed=0)
    step.fit(_data({KEY: _two_members(rng, t1, t2)}, t1, t2), None)
    st = step.of(*KEY, "s")["stack_own"]
    assert st["members"] == ["gbm", "fill"]
    for w in (st["w_t1"], st["w_t2"]):
        assert np.all(w >= 0) and w.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(st["w_t1"], [1.0, 0.0], atol=0.05)
    np.testing.assert_allclose(st["w_t2"], [0.0, 1.0], atol=0.05)


def test_stack_transform_applies_each_targets_weights_of_its_own_budget():
    """On new models the T1 stack reads the T1 weights of the asked (c, n) and the T2 stack the T2 inputs with the
    T2 weights, though another budget's stacks weigh the members the other way round."""
    rng = np.random.default_rng(1)
    t1, t2 = rng.uniform(0.2, 0.8, 60), rng.uniform(0.2, 0.8, 60)
    val = {KEY: _two_members(rng, t1, t2), ("kmeans", 10): _two_members(rng, t1, t2, swap=True)}
    step = Stacks(seed=0)
    step.fit(_data(val, t1, t2), None)
    a, b, c, d = rng.uniform(0.2, 0.8, (4, 5))
    full, t2raw = {("s", "gbm"): a, ("s", "fill"): b}, {("s", "gbm"): c, ("s", "fill"): d}
    step.transform(full, t2raw, *KEY)
    np.testing.assert_allclose(full[("s", "stack_own")], a, atol=0.03)
    np.testing.assert_allclose(t2raw[("s", "stack_own")], d, atol=0.03)


def test_stack_leaves_out_models_with_a_missing_member_and_needs_two_members():
    """A validation model without one member's output gets no stack output (NaN) and does not enter the weights; a
    scenario with a single member gets no stack (it would only copy that member)."""
    rng = np.random.default_rng(2)
    t = rng.uniform(0.2, 0.8, 40)
    full = {("s", "gbm"): t + rng.normal(0, 0.01, 40), ("s", "fill"): t + 0.1}
    full[("s", "gbm")][0] = np.nan
    step = Stacks(seed=0)
    step.fit(_data({KEY: (full, {})}, t, t), None)
    out = full[("s", "stack_own")]
    assert np.isnan(out[0]) and np.isfinite(out[1:]).all()
    w = step.of(*KEY, "s")["stack_own"]["w_t1"]
    assert np.isfinite(w).all() and np.all(w >= 0) and w.sum() == pytest.approx(1.0)
    alone = {("s", "gbm"): t.copy()}
    step.fit(_data({KEY: (alone, {})}, t, t), None)
    assert step.stacks_ == {} and set(alone) == {("s", "gbm")}


def test_stacks_from_dict_keeps_only_the_accepted_stacks():
    """Read back from the artifact, a step holds the stacks ``keep`` accepts, and they give the fitted outputs."""
    rng = np.random.default_rng(3)
    t1, t2 = rng.uniform(0.2, 0.8, 60), rng.uniform(0.2, 0.8, 60)
    step = Stacks(seed=0)
    step.fit(_data({KEY: _two_members(rng, t1, t2)}, t1, t2), None)
    blocks = {"s": step.to_dict(*KEY, "s")}
    assert set(Stacks.from_dict(blocks, *KEY).of(*KEY, "s")) == {"stack", "stack_own"}
    kept = Stacks.from_dict(blocks, *KEY, keep=lambda s, name: name == "stack_own")
    assert set(kept.of(*KEY, "s")) == {"stack_own"}
    new = {("s", "gbm"): rng.random(4), ("s", "fill"): rng.random(4)}
    a, b = dict(new), dict(new)
    step.transform(a, {}, *KEY)
    kept.transform(b, {}, *KEY)
    np.testing.assert_allclose(b[("s", "stack_own")], a[("s", "stack_own")])


def _calibration_world(rng, m):
    """T1 estimate x of the T1 score t1; the T2 score is half of it and its input x2 is 0.3 too high."""
    t1 = rng.uniform(0.3, 0.7, m)
    t2 = 0.5 * t1 + rng.normal(0, 0.01, m)
    return t1 + rng.normal(0, 0.02, m), t2 + 0.3 + rng.normal(0, 0.02, m), t1, t2


def test_calibrators_cover_each_target_from_its_own_input():
    """The T1 interval is around the T1 estimate and covers T1; the T2 map reads the T2 input and removes its bias,
    and the T2 interval around the mapped score covers T2 (alpha = 0.1)."""
    rng = np.random.default_rng(4)
    x, x2, t1, t2 = _calibration_world(rng, 300)
    step = Calibrators(alpha=0.1)
    step.fit(_data({KEY: ({("s", "e"): x}, {("s", "e"): x2})}, t1, t2), None)
    x, x2, t1, t2 = _calibration_world(rng, 4000)
    out = step.predict(x, x2, *KEY, "s", "e")
    assert coverage(out["lower"], out["upper"], t1) >= 0.85
    assert np.mean(np.abs(out["estimate_t2"] - t2)) < 0.02
    assert coverage(out["lower_t2"], out["upper_t2"], t2) >= 0.85


def test_calibrators_records_finite_pairs_and_out_of_fold_t2_error():
    """A validation record counts the finite (estimate, truth) pairs and gives their mean absolute T1 error; its T2
    error is the cross-fitted one, above the map's in-sample error."""
    rng = np.random.default_rng(5)
    x, x2, t1, t2 = _calibration_world(rng, 60)
    x = x - 0.05  # biased low: a signed mean would differ from the absolute one
    t2 = t2 + rng.normal(0, 0.05, 60)
    t1[0], x[1] = np.nan, np.nan
    step = Calibrators()
    data = _data({KEY: ({("s", "e"): x}, {("s", "e"): x2})}, t1, t2)
    step.fit(data, None)
    (rec,) = data.records
    ok = np.isfinite(x) & np.isfinite(t1)
    assert rec["n_val"] == 58
    assert rec["val_mae_t1"] == pytest.approx(np.mean(np.abs(x[ok] - t1[ok])))
    in_sample = np.mean(np.abs(step.t2_maps_[(*KEY, "s", "e")].transform(x2) - t2))
    assert rec["val_mae_t2"] > in_sample


def test_calibrators_round_trip_through_the_artifact():
    """A step rebuilt from :meth:`Calibrators.to_dict` predicts the same intervals and calibrated scores."""
    rng = np.random.default_rng(6)
    x, x2, t1, t2 = _calibration_world(rng, 80)
    step = Calibrators(alpha=0.2, interval_scale="none")
    step.fit(_data({KEY: ({("s", "e"): x}, {("s", "e"): x2})}, t1, t2), None)
    back = Calibrators.from_dict({"s": step.to_dict(*KEY, "s", ["e"])}, *KEY)
    x, x2, _, _ = _calibration_world(rng, 50)
    want, got = step.predict(x, x2, *KEY, "s", "e"), back.predict(x, x2, *KEY, "s", "e")
    for k in want:
        np.testing.assert_allclose(got[k], want[k])


def test_isotonic_tails_leave_the_map_inside_the_fitted_range_alone():
    """With tails, estimates inside the fitted range get the clipped map's values; only those past it move."""
    rng = np.random.default_rng(7)
    x = rng.uniform(0.2, 0.6, 80)
    y = 0.1 + x**2 + rng.normal(0, 0.02, 80)
    inside = np.linspace(x.min(), x.max(), 101)
    tails, clipped = IsotonicCalibrator(tails=True).fit(x, y), IsotonicCalibrator().fit(x, y)
    np.testing.assert_allclose(tails.transform(inside), clipped.transform(inside))
    assert tails.transform(np.array([0.0]))[0] < clipped.transform(np.array([0.0]))[0]


def test_isotonic_map_stays_non_decreasing_on_decreasing_pairs():
    """Pairs that fall give a flat map (the map only goes up) with a zero tail slope, and the stored map with that
    zero slope reads back."""
    rng = np.random.default_rng(8)
    x = rng.uniform(0.2, 0.6, 50)
    y = 0.9 - x + rng.normal(0, 0.01, 50)
    cal = IsotonicCalibrator(tails=True).fit(x, y)
    grid = np.linspace(-0.2, 1.2, 141)
    out = cal.transform(grid)
    assert cal.slope_ == 0.0 and np.all(np.diff(out) >= 0)
    np.testing.assert_allclose(StoredIsotonicMap.from_dict(cal.to_dict()).transform(grid), out)


def test_conformal_interval_follows_a_biased_estimator():
    """Residuals are truth - estimate: an estimator 0.1 low gets an interval above it that covers new models."""
    rng = np.random.default_rng(9)
    e = rng.uniform(0.2, 0.7, 500)
    iv = ConformalInterval(alpha=0.1, scale="none").fit(e, e + 0.1 + rng.normal(0, 0.01, 500))
    e_new = rng.uniform(0.2, 0.7, 2000)
    lo, up = iv.predict(e_new)
    assert np.all(lo > e_new)
    assert coverage(lo, up, e_new + 0.1 + rng.normal(0, 0.01, 2000)) >= 0.85


def test_binomial_interval_keeps_a_floor_at_the_bounds():
    """The binomial scale is sqrt(e (1 - e)) + floor: an estimate of exactly 0 or 1 still gets an interval of
    positive width."""
    rng = np.random.default_rng(10)
    e = rng.uniform(0.1, 0.9, 500)
    iv = ConformalInterval(alpha=0.1).fit(e, e + rng.normal(0, 0.03, 500))
    lo, up = iv.predict(np.array([0.0, 1.0]))
    assert up[0] > 0.0 and lo[1] < 1.0


def test_non_finite_pairs_are_left_out_of_fits_and_coverage():
    """NaN pairs do not enter a conformal fit or the coverage, and get NaN out-of-fold isotonic predictions."""
    rng = np.random.default_rng(11)
    e = rng.uniform(0.2, 0.8, 100)
    t = e + rng.normal(0, 0.05, 100)
    e_nan, t_nan = np.append(e, [np.nan, 0.5]), np.append(t, [0.5, np.nan])
    a, b = ConformalInterval().fit(e, t), ConformalInterval().fit(e_nan, t_nan)
    assert (b.q_lo_, b.q_hi_, b.n_) == (a.q_lo_, a.q_hi_, 100)
    assert coverage(np.zeros(3), np.ones(3), np.array([0.5, np.nan, 0.2])) == 1.0
    oof, _ = cross_fitted_isotonic(e_nan, t_nan, seed=0)
    assert np.isnan(oof[-2:]).all() and np.isfinite(oof[:-2]).all()


def test_coverage_counts_truths_on_the_bounds():
    """[lower, upper] is closed: a truth on an end (e.g. 1.0 under an interval clipped at 1) is covered."""
    assert coverage(np.array([0.2, 0.8]), np.array([0.4, 1.0]), np.array([0.4, 1.0])) == 1.0
    assert coverage(np.array([0.2]), np.array([0.4]), np.array([0.2])) == 1.0


@pytest.mark.parametrize("size", [47, 97])
def test_every_prefix_of_a_stratum_spreads_over_its_difficulty(size):
    """Inside one subscenario the first k items cover the difficulty range evenly for every k: below any rank r,
    the first k hold k (r + 1) / size items, within 3."""
    rng = np.random.default_rng(size)
    p = rng.permutation(size) / size
    order = nested_order(p, np.full(size, "a"), np.ones(size), seed=0)
    ranks = np.argsort(np.argsort(p))[order]
    for k in range(1, size + 1):
        below = np.cumsum(np.bincount(ranks[:k], minlength=size))
        assert np.abs(below - k * np.arange(1, size + 1) / size).max() < 3, k


def test_first_positions_go_to_the_largest_deficit_ties_to_the_first_name():
    """Position 1 goes to the subscenario with the largest share; between equal shares, to the first name."""
    groups = np.array(["a"] * 10 + ["b"] * 10)
    assert prefix_allocation(groups, np.r_[np.full(10, 1.0), np.full(10, 4.0)], 1) == {"a": 0, "b": 1}
    assert prefix_allocation(groups, np.ones(20), 1) == {"a": 1, "b": 0}
    order = nested_order(np.linspace(0, 1, 20), groups, np.r_[np.full(10, 1.0), np.full(10, 4.0)])
    assert groups[order[0]] == "b"


def test_unknown_difficulty_is_ranked_as_the_median():
    """An item of unknown difficulty stands at the median rank: in nine items, the middle one, which the order asks
    first."""
    p = np.array([0.1, 0.2, 0.3, 0.4, np.nan, 0.6, 0.7, 0.8, 0.9])[::-1].copy()
    order = nested_order(p, np.full(9, "a"), np.ones(9), seed=0)
    assert np.isnan(p[order[0]])
