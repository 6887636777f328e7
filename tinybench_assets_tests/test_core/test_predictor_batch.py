"""A model's estimate does not depend on which other models are estimated with it (real data: many models share
answer patterns, so their abilities coincide with tree thresholds)."""

import numpy as np
import pandas as pd
import pytest
import torch

from tinybench_assets.core.estimation.predictor import AnchorPredictor
from tinybench_assets.core.responses import ResponseMatrix, concat_scenarios
from tinybench_assets_tests.conftest import SHARED, _need_shared
from tinybench_assets_tests.test_core.test_backtest import FAST, _world

torch.set_num_threads(1)


def openllm_slice(scenarios, n_models):
    """(matrix, full scores, train rows, test rows): the first ``n_models`` models (by name) of real openllm
    scenarios, every 10th model a test model."""
    _need_shared()
    mats, fulls = [], []
    for sc in scenarios:
        resp = pd.read_parquet(SHARED / "openllm" / f"{sc}.responses.parquet")
        keep = sorted(resp["model"].unique())[:n_models]
        mats.append(ResponseMatrix.from_long(resp[resp["model"].isin(keep)]))
        fulls.append(pd.read_parquet(SHARED / "openllm" / f"{sc}.full_scores.parquet"))
    rm, full = concat_scenarios(mats), pd.concat(fulls)
    test = np.arange(0, len(rm.models), 10)
    return rm, full, np.setdiff1d(np.arange(len(rm.models)), test), test


def test_batch_and_single_estimates_agree():
    rm, full, train, test = openllm_slice(("arc", "truthfulqa"), 700)
    # few bins: thresholds fall on observed ability values, where float noise would flip a split
    pred = AnchorPredictor(n_values=(10,), **{**FAST, "learned": True, "gbm_params": {"max_bins": 16}}).fit(
        rm, full, train
    )
    Y, names = rm.scores[test], np.asarray(rm.models, dtype=object)[test]
    batch = pred.estimate(Y, names)
    single = pd.concat([pred.estimate(Y[i : i + 1], names[i : i + 1]) for i in range(len(names))])
    key = ["model", "scenario", "clustering", "estimator", "n"]
    both = batch.merge(single, on=key, suffixes=("_b", "_s"))
    assert len(both) == len(batch) and {"gbm", "gbm_joint"} <= set(both.estimator)
    for col in ("estimate", "lower", "upper", "estimate_t2"):
        assert np.allclose(both[f"{col}_b"], both[f"{col}_s"], atol=1e-9, equal_nan=True), col


def test_worker_processes_give_the_same_fit():
    """n_jobs=2 runs the IRT fits and the learned regressors in one-thread worker processes (issue 12): the
    fitted predictor is the same as in one process (torch is on one thread here too)."""
    rm, full, train, test = openllm_slice(("arc", "gsm8k"), 400)
    params = dict(n_values=(10,), **{**FAST, "learned": True})
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the workers' budget: other tests may have raised it, and the fits' sums follow it
    try:
        one = AnchorPredictor(**params, n_jobs=1).fit(rm, full, train)
        two = AnchorPredictor(**params, n_jobs=2).fit(rm, full, train)
    finally:
        torch.set_num_threads(threads)
    assert one.n_jobs_ == 1 and two.n_jobs_ == 2
    s1, s2 = one.named_steps, two.named_steps
    assert s1["learned"].models_.keys() == s2["learned"].models_.keys() and len(s1["learned"].models_) > 0
    for k in s1["irt"].params_:
        assert s1["irt"].dim_selection_[k].best_dim == s2["irt"].dim_selection_[k].best_dim
        np.testing.assert_array_equal(s1["irt"].params_[k].a, s2["irt"].params_[k].a)
        np.testing.assert_array_equal(s1["irt"].params_[k].b, s2["irt"].params_[k].b)
    pd.testing.assert_frame_equal(one.validation, two.validation, check_exact=True)
    Y, names = rm.scores[test], np.asarray(rm.models, dtype=object)[test]
    pd.testing.assert_frame_equal(one.estimate(Y, names), two.estimate(Y, names), check_exact=True)


def test_anchor_linear_map_is_a_least_squares_fit_and_a_learned_feature():
    """Each anchor set carries the fit models' ridge map from its answers to the pool accuracy; its score is the
    last feature of the per-scenario regressors and one column per scenario of the joint ones; an anchor set
    without a map (an older predictor or artifact) gives the features without it."""
    from tinybench_assets.core.estimation.anchor_sets import fit_linear, linear_score
    from tinybench_assets.core.estimation.base_estimates import feature_width, features

    rng = np.random.default_rng(0)
    X = (rng.random((600, 6)) < 0.5).astype(float)
    y = X @ np.array([0.3, -0.2, 0.1, 0.0, 0.25, 0.05]) + 0.1
    X[5, 2] = np.nan
    lin = fit_linear(X, y, alpha=1e-9)
    np.testing.assert_allclose(lin["coef"], [0.3, -0.2, 0.1, 0.0, 0.25, 0.05], atol=2e-3)
    assert lin["fill"][2] == pytest.approx(np.nanmean(X[:, 2]))
    rm, full = _world(n_models=200, seed=2)
    p = AnchorPredictor(n_values=(5,), **FAST).fit(rm, full)
    lay, st = p.layout, p.named_steps
    A = st["anchors"].of("correctness", 5)
    _, feats, _ = features(rm.scores[:7], lay, st["irt"], st["anchors"], "correctness", 5)
    irt = st["irt"].params_
    for s in lay.scenarios:
        assert A[s].linear is not None
        np.testing.assert_array_equal(feats[("sep", s)][:, -1], linear_score(A[s], rm.scores[:7][:, A[s].items]))
        assert feats[("sep", s)].shape[1] == feature_width(A, irt, s, "sep")
        assert feats[("joint", s)].shape[1] == feature_width(A, irt, s, "joint")
    for s in lay.scenarios:
        A[s].linear = None
    _, plain, _ = features(rm.scores[:7], lay, st["irt"], st["anchors"], "correctness", 5)
    s = lay.scenarios[0]
    assert plain[("sep", s)].shape[1] == feats[("sep", s)].shape[1] - 1 == feature_width(A, irt, s, "sep")
    assert plain[("joint", s)].shape[1] == feats[("joint", s)].shape[1] - len(lay.scenarios)
