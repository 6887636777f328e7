"""Estimator formulas: exactness at n = N, unbiasedness under a true IRT model, lambdas, stacking."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tinybench_assets.core.estimation import estimators as E
from tinybench_assets.core.irt import item_curve
from tinybench_assets.core.responses import ResponseMatrix

torch.set_num_threads(1)


def _irt_world(n_models=400, n_items=30, dim=2, seed=0):
    """A matrix drawn from a known 2PL, one scenario with unequal subscenarios (balance weights != 1)."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=(n_models, dim))
    a = np.abs(rng.normal(1.0, 0.3, size=(n_items, dim)))
    b = rng.normal(size=n_items)
    P = item_curve(theta, a, b)
    Y = (rng.random(P.shape) < P).astype(float)
    subs = np.array(["x"] * 5 + ["y"] * (n_items - 5), dtype=object)
    rm = ResponseMatrix(
        Y,
        [f"m{i}" for i in range(n_models)],
        [f"i{j}" for j in range(n_items)],
        np.array(["s"] * n_items, dtype=object),
        subs,
    )
    return rm, theta, a, b, P


def test_exact_when_every_item_is_observed():
    rm, theta, a, b, P = _irt_world()
    w = rm.balance_weights()
    assert not np.allclose(w, 1.0)  # balance weights really differ from uniform
    truth = rm.accuracy()["s"].to_numpy()
    anchors = np.arange(30)
    weights = w / w.sum()
    Ya = rm.scores[:, anchors]
    np.testing.assert_allclose(E.anchor_estimate(Ya, weights), truth, atol=1e-12)
    np.testing.assert_allclose(E.pirt_estimate(Ya, P, anchors, w), truth, atol=1e-12)
    np.testing.assert_allclose(E.random_estimate(rm.scores, w, 30, seed=3), truth, atol=1e-12)
    np.testing.assert_allclose(E.weighted_accuracy(rm.scores, w), truth, atol=1e-12)
    # gp-IRT of two exact estimates is exact for every lambda
    for lam in (0.0, 0.37, 1.0):
        np.testing.assert_allclose(
            E.gpirt_estimate(E.anchor_estimate(Ya, weights), E.pirt_estimate(Ya, P, anchors, w), lam), truth, atol=1e-12
        )


def test_pirt_is_unbiased_with_the_true_irt_model():
    # with the true P and n < N, E[pirt - truth] = 0 and its error is far below a plain IRT miss-weighting
    rm, theta, a, b, P = _irt_world(n_models=4000, n_items=40, seed=1)
    w = rm.balance_weights()
    truth = rm.accuracy()["s"].to_numpy()
    anchors = np.array([0, 3, 7, 12, 20, 33])
    est = E.pirt_estimate(rm.scores[:, anchors], P, anchors, w)
    err = est - truth
    assert abs(err.mean()) < 3 * err.std() / np.sqrt(len(err))  # unbiased within 3 standard errors
    # the tutorial's lambda = n / N is the default
    lam = len(anchors) / 40
    manual = lam * (rm.scores[:, anchors] * w[anchors]).mean(1) + (1 - lam) * (
        P[:, np.setdiff1d(np.arange(40), anchors)] * w[np.setdiff1d(np.arange(40), anchors)]
    ).mean(1)
    np.testing.assert_allclose(est, manual, atol=1e-12)
    # the IRT estimate with the true P equals the expected accuracy
    np.testing.assert_allclose(E.irt_estimate(P, w), (P * w).mean(1), atol=1e-12)


def test_random_estimate_is_seeded_and_uses_n_items():
    Y = np.random.default_rng(0).integers(0, 2, size=(50, 20)).astype(float)
    w = np.ones(20)
    e1, e2 = E.random_estimate(Y, w, 5, seed=1), E.random_estimate(Y, w, 5, seed=1)
    np.testing.assert_array_equal(e1, e2)
    assert not np.array_equal(e1, E.random_estimate(Y, w, 5, seed=2))
    assert set(np.unique(e1 * 5)) <= set(range(6))  # a mean of exactly 5 binary answers
    idx = E.random_items(50, 20, 5, seed=1)
    assert all(len(np.unique(r)) == 5 for r in idx)


def test_tutorial_lambda():
    # b^2 / (v / (4 n) + b^2)
    assert E.tutorial_lambda(0.03, 0.2, 30) == pytest.approx(0.03**2 / (0.2 / 120 + 0.03**2))
    assert E.tutorial_lambda(0.0, 0.2, 30) == 0.0
    assert E.tutorial_lambda(1.0, 0.2, 30) > 0.99
    assert E.tutorial_lambda(0.03, 0.2, 100) > E.tutorial_lambda(0.03, 0.2, 10)  # more anchors -> trust them more
    Y = np.array([[1, 0, 1, 0], [1, 1, 1, 1.0]])
    assert E.mean_item_variance(Y) == pytest.approx((0.25 + 0.0) / 2)


def test_choose_lambda_recovers_the_mixing_weight():
    rng = np.random.default_rng(0)
    a, p = rng.random(500), rng.random(500)
    truth = 0.3 * a + 0.7 * p
    lam, maes = E.choose_lambda(a, p, truth)
    assert lam == pytest.approx(0.3)
    assert maes.shape == E.LAMBDA_GRID.shape and maes.min() == pytest.approx(0.0, abs=1e-12)


def test_convex_stack_recovers_weights_and_oof_is_honest():
    rng = np.random.default_rng(0)
    X = rng.random((600, 3))
    t = X @ np.array([0.6, 0.0, 0.4]) + rng.normal(0, 0.01, 600)
    w = E.convex_weights(X, t)
    assert w.sum() == pytest.approx(1.0) and np.all(w >= 0)
    np.testing.assert_allclose(w, [0.6, 0.0, 0.4], atol=0.02)
    oof, w_all = E.stack_out_of_fold(X, t, seed=0)
    assert np.abs(oof - t).mean() < 0.02
    np.testing.assert_allclose(w_all, w)
    # each fold's prediction reads weights fitted without it: on noise, worse than the in-sample fit
    Xn, tn = rng.random((30, 5)), rng.random(30)
    oof_n, w_n = E.stack_out_of_fold(Xn, tn, seed=0)
    assert np.abs(oof_n - tn).mean() > np.abs(Xn @ w_n - tn).mean() + 0.005


def test_the_predictors_stacks_add_out_of_fold_validation_outputs():
    """The stacks step (the big board's predictor) adds each stack's validation outputs for the calibrators and the
    selector to score: a model's own row comes from weights fitted without it, for T1 and for the T2 input, so moving
    its target moves the weights and every other fold's rows, never its own."""
    import types

    import pandas as pd

    from tinybench_assets.core.estimation.stacks import Stacks

    rng = np.random.default_rng(0)
    t = rng.uniform(0.2, 0.8, 30)

    def fitted(t1, t2):
        full = {("s", "gbm"): t - 0.05 + rng.normal(0, 0.02, 30), ("s", "fill"): t + 0.05 + rng.normal(0, 0.02, 30)}
        data = types.SimpleNamespace(
            val={("kmeans", 30): (full, {})},
            T1v={"s": pd.Series(t1)},
            T2v={"s": pd.Series(t2)},
            layout=types.SimpleNamespace(scenarios=["s"]),
        )
        Stacks(seed=0).fit(data, None)
        return full[("s", "stack_own")], data.val[("kmeans", 30)][1][("s", "stack_own")]

    state = rng.bit_generator.state
    v1, v2 = fitted(t, t)
    moved = t.copy()
    moved[0] += 0.4
    rng.bit_generator.state = state  # the same members
    w1, w2 = fitted(moved, moved)
    assert w1[0] == v1[0] and w2[0] == v2[0]  # model 0's own outputs: its target never read
    assert np.abs(w1 - v1).max() > 1e-3 and np.abs(w2 - v2).max() > 1e-3  # the target moved other folds' weights


def test_missing_anchor_answers_are_dropped_from_the_anchor_estimate():
    Ya = np.array([[1.0, np.nan, 0.0]])
    weights = np.array([0.5, 0.3, 0.2])
    assert E.anchor_estimate(Ya, weights)[0] == pytest.approx(0.5 / 0.7)
