"""Isotonic full-score calibration and conformal intervals."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from tinybench_assets.core.estimation.calibration import (
    ConformalInterval,
    IsotonicCalibrator,
    StoredIsotonicMap,
    conformal_quantile,
    coverage,
    cross_fitted_isotonic,
)
from tinybench_assets.core.estimation.served_intervals import ServedIntervals


def _served(val_t1: dict, truth) -> ServedIntervals:
    """A ServedIntervals step fitted on one scenario "s" at n = 10: ``val_t1`` {(c, 10, "s", estimator): (V,)}, the
    validation models' truths (V,), no families."""
    data = SimpleNamespace(
        layout=SimpleNamespace(scenarios=["s"]),
        T1v=pd.DataFrame({"s": truth}),
        val={("c", 10): ({(s, e): x for (_, _, s, e), x in val_t1.items()}, {})},
    )
    done = {"split": SimpleNamespace(val_groups_=None), "anchors": SimpleNamespace(n_values=(10,))}
    step = ServedIntervals(0.1, "none", 0)
    step.fit(data, done)
    return step


def test_isotonic_map_is_monotone_clipped_and_bounded():
    rng = np.random.default_rng(0)
    x = rng.random(800)
    y = np.clip(0.2 + 0.9 * x**2 + rng.normal(0, 0.05, 800), -0.2, 1.3)  # noisy, sometimes out of [0, 1]
    cal = IsotonicCalibrator().fit(x, y)
    grid = np.linspace(-0.5, 1.5, 401)
    out = cal.transform(grid)
    assert np.all(np.diff(out) >= -1e-12)  # monotone non-decreasing
    assert out.min() >= 0.0 and out.max() <= 1.0
    # out of the fitted range: clipped to the end values
    assert out[0] == pytest.approx(cal.transform(np.array([x.min()]))[0])
    assert out[-1] == pytest.approx(cal.transform(np.array([x.max()]))[0])
    # it actually learns the map
    assert np.abs(cal.transform(x) - (0.2 + 0.9 * x**2)).mean() < 0.03
    # NaN in -> NaN out
    assert np.isnan(cal.transform(np.array([np.nan]))[0])


def test_isotonic_tails_go_on_along_the_least_squares_slope_and_travel_in_the_artifact():
    """With tails, an estimate past the fitted range continues the map from its end along the pairs' least-squares
    slope (clipped map: the end value); the stored map (to_dict / StoredIsotonicMap) gives the same numbers, an old
    map without the field stays clipped, and a negative slope is refused."""
    rng = np.random.default_rng(1)
    x = rng.uniform(0.2, 0.6, 60)
    y = 0.1 + 0.5 * x + rng.normal(0, 0.01, 60)
    cal = IsotonicCalibrator(tails=True).fit(x, y)
    assert cal.slope_ == pytest.approx(0.5, abs=0.05)
    top, bottom = cal.transform(np.array([x.max()]))[0], cal.transform(np.array([x.min()]))[0]
    got = cal.transform(np.array([0.9, 0.0, 5.0, np.nan]))
    assert got[0] == pytest.approx(top + cal.slope_ * (0.9 - x.max()))
    assert got[1] == pytest.approx(bottom - cal.slope_ * x.min())
    assert got[2] == 1.0 and np.isnan(got[3])  # within the bounds; NaN in, NaN out
    assert IsotonicCalibrator().fit(x, y).transform(np.array([0.9]))[0] == pytest.approx(top)  # clipped
    d = cal.to_dict()
    grid = np.linspace(-0.2, 1.2, 57)
    np.testing.assert_allclose(StoredIsotonicMap.from_dict(d).transform(grid), cal.transform(grid))
    old = {k: v for k, v in d.items() if k != "slope"}
    assert StoredIsotonicMap.from_dict(old).transform(np.array([0.9]))[0] == pytest.approx(top)
    with pytest.raises(ValueError, match="slope"):
        StoredIsotonicMap.from_dict({**d, "slope": -0.1})
    assert IsotonicCalibrator(tails=True).fit([0.3, 0.3], [0.2, 0.4]).slope_ == 0.0  # x does not vary


def test_cross_fitted_isotonic_residuals_are_not_in_sample():
    rng = np.random.default_rng(1)
    x = rng.random(300)
    y = x + rng.normal(0, 0.1, 300)
    oof, cal = cross_fitted_isotonic(x, y, seed=0)
    in_sample = np.abs(cal.transform(x) - y).mean()
    out_of_fold = np.abs(oof - y).mean()
    assert out_of_fold > in_sample  # isotonic overfits in sample; the out-of-fold error is the honest one


@pytest.mark.parametrize("symmetric", [False, True])  # symmetric: the frontier rule's interval (e -+ q)
@pytest.mark.parametrize("scale", ["binomial", "none"])
@pytest.mark.parametrize("alpha", [0.1, 0.2])
def test_conformal_interval_covers_nominal_on_simulated_models(scale, alpha, symmetric):
    rng = np.random.default_rng(2)

    def draw(m):
        truth = rng.beta(2, 3, m)
        sd = 0.01 + 0.08 * np.sqrt(truth * (1 - truth))  # heteroscedastic, like accuracy estimates
        est = np.clip(truth + rng.normal(0.005, sd), 0, 1)  # with a little bias
        return est, truth

    e_cal, t_cal = draw(2000)
    iv = ConformalInterval(alpha=alpha, scale=scale, symmetric=symmetric).fit(e_cal, t_cal)
    e_new, t_new = draw(40000)
    lo, up = iv.predict(e_new)
    cov = coverage(lo, up, t_new)
    assert abs(cov - (1 - alpha)) < 0.025
    assert np.all((lo >= 0) & (up <= 1) & (lo <= up))


def test_binomial_scale_narrows_intervals_near_the_bounds():
    rng = np.random.default_rng(3)
    truth = rng.random(3000)
    est = truth + rng.normal(0, 0.02 + 0.1 * np.sqrt(truth * (1 - truth)))
    iv = ConformalInterval(alpha=0.1, scale="binomial").fit(est, truth)
    lo, up = iv.predict(np.array([0.03, 0.5]))
    assert (up - lo)[0] < (up - lo)[1]


def test_conformal_quantile_finite_sample():
    s = np.arange(1, 10, dtype=float)  # 9 scores
    assert conformal_quantile(s, 0.9) == 9.0  # ceil(10 * 0.9) = 9th smallest
    assert conformal_quantile(s, 0.5) == 5.0
    assert conformal_quantile(s, 0.99) == np.inf  # too few scores for that level


def test_served_interval_allows_for_the_winners_curse():
    """Forty equally good noisy estimators: the validation winner's own residuals look better than they are, so an
    interval fitted on them under-covers new models; the out-of-selection residuals of the served interval do not."""
    rng = np.random.default_rng(0)
    V, K = 60, 40
    truth = rng.uniform(0.3, 0.7, V)
    val_t1 = {("c", 10, "s", f"e{k}"): truth + rng.normal(0, 0.05, V) for k in range(K)}
    step = _served(val_t1, truth)
    served = step.intervals_[(10, "s", "tinybench")]
    winner = min(val_t1, key=lambda k: np.mean(np.abs(val_t1[k] - truth)))
    naive = ConformalInterval(0.1, "none").fit(val_t1[winner], truth)
    assert served.q_hi_ - served.q_lo_ > naive.q_hi_ - naive.q_lo_
    # on new models every estimator has the same error distribution: the served interval covers ~90 %
    new_truth = rng.uniform(0.3, 0.7, 20000)
    est = new_truth + rng.normal(0, 0.05, 20000)
    lo, up = served.predict(est)
    assert 0.86 <= np.mean((new_truth >= lo) & (new_truth <= up)) <= 0.97
    assert step.predict(10, "s", "tinybench", est[:3], None)[0].shape == (3,)
    assert step.predict(20, "s", "tinybench", est[:3], "fallback") == "fallback"


def test_the_choice_in_each_fold_ranks_estimators_by_absolute_error():
    """The out-of-selection residuals come from the estimator each fold's choice picks by its MAE on the other folds:
    an estimator 20 points low has the lowest signed mean error and must not be picked over one 1 point off."""
    rng = np.random.default_rng(0)
    truth = rng.uniform(0.3, 0.7, 50)
    step = _served({("c", 10, "s", "good"): truth + rng.normal(0, 0.01, 50), ("c", 10, "s", "low"): truth - 0.2}, truth)
    lo, up = step.intervals_[(10, "s", "tinybench")].predict(np.array([0.5]))  # the good estimator's reading
    assert lo[0] <= 0.5 <= up[0] and up[0] - lo[0] < 0.1  # the low one's residuals put it at [0.7, 0.7]


def test_big_board_t2_interval_is_sized_on_out_of_fold_isotonic_residuals():
    """The big board's T2 interval (Calibrators) covers new models: it is fitted on the isotonic map's cross-fitted
    residuals. Sized on the map's in-sample residuals (the map has seen each target) it covered about 0.81 here."""
    import types

    import pandas as pd

    from tinybench_assets.core.estimation.calibrators import Calibrators

    covs = []
    for rep in range(20):
        rng = np.random.default_rng(rep)
        x = rng.uniform(0.3, 0.7, 30)  # 30 validation models' estimates, their full scores 5 points off at random
        t2 = x + rng.normal(0, 0.05, 30)
        key = ("kmeans", 30)
        data = types.SimpleNamespace(
            val={key: ({("s", "e"): x}, {})}, T1v={"s": pd.Series(t2)}, T2v={"s": pd.Series(t2)}, records=[]
        )
        cal = Calibrators()
        cal.fit(data, None)
        x_new = rng.uniform(0.3, 0.7, 2000)
        t_new = x_new + rng.normal(0, 0.05, 2000)
        out = cal.predict(x_new, x_new, *key, "s", "e")
        covs.append(np.mean((t_new >= out["lower_t2"]) & (t_new <= out["upper_t2"])))
    assert np.mean(covs) >= 0.87, np.mean(covs)
