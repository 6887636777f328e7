"""The answer-bank estimator (core/estimation/bank.py): its posterior, the bank's missing answers and scenarios, and
on a real openllm slice that it (and the ridge fill-in on its arrays) estimates held-out models better than their
anchors alone and earns a stack weight."""

from __future__ import annotations

import numpy as np
import pytest

from tinybench_assets.core.estimation.bank import bank_values, posterior_means, soft_answers
from tinybench_assets.core.estimation.fill import FILL_LAMBDAS


def test_a_model_that_answers_like_one_bank_model_gets_its_values():
    rng = np.random.default_rng(0)
    B = (rng.random((50, 40)) < 0.5).astype(float)
    vals = rng.random((50, 3))
    got = posterior_means(B[[7, 21]], B, vals, eps=0.02)
    np.testing.assert_allclose(got, vals[[7, 21]], atol=1e-6)
    # a large eps flattens the posterior toward the bank's mean
    flat = posterior_means(B[[7]], B, vals, eps=0.49)
    np.testing.assert_allclose(flat[0], vals.mean(0), atol=0.02)
    # unanswered items carry no evidence; a model with no answer gets NaN
    Y = B[[7]].copy()
    Y[0, 20:] = np.nan
    part = posterior_means(Y, B, vals, eps=0.02)
    same = np.flatnonzero((B[:, :20] == B[7, :20]).all(1))
    np.testing.assert_allclose(part[0], vals[same].mean(0), atol=1e-6)
    assert np.isnan(posterior_means(np.full((1, 40), np.nan), B, vals, 0.1)).all()


def test_bank_models_without_a_scenario_get_no_weight_for_it_even_when_they_match_best():
    # 400 items at eps 0.05: the perfect match outweighs the other model by e^-1178 (underflows in one shared exp)
    B = np.vstack([np.ones(400), np.zeros(400)])
    vals = np.array([[np.nan, 0.2], [0.7, 0.9]])
    got = posterior_means(np.ones((1, 400)), B, vals, eps=0.05)
    assert got[0, 0] == pytest.approx(0.7) and got[0, 1] == pytest.approx(0.2)
    assert np.isnan(posterior_means(np.ones((1, 400)), B, np.array([[np.nan], [np.nan]]), 0.05)).all()


def test_soft_answers_and_values_of_the_unseen_items():
    Y = np.array([[1.0, np.nan, 0.0, 1.0], [0.0, 1.0, np.nan, 1.0], [np.nan] * 4])
    S = soft_answers(Y)
    np.testing.assert_allclose(S[:, 1], [1.0, 1.0, 1.0])
    np.testing.assert_allclose(S[2], [0.5, 1.0, 0.0, 1.0])
    w = np.array([1.0, 1.0, 2.0, 4.0])
    v = bank_values(Y, np.arange(4), [3], w)  # item 3 is the anchor: weights 1, 1, 2 of 8 on the unseen items
    np.testing.assert_allclose(v[:2], [(1 + 1 + 0) / 8, (0 + 1 + 0) / 8])
    assert np.isnan(v[2])


@pytest.mark.timeout(600)
def test_openllm_bank_beats_the_anchors_and_joins_the_stack():
    from tinybench_assets_tests.test_core.test_tiny_benchmark_openllm import openllm_fit

    rm, test, pred = openllm_fit()
    models = np.asarray(rm.models, dtype=object)[test]
    df = pred.estimate(rm.scores[test], models, n_values=[10])
    truth = pred.pool_accuracy(rm.scores[test])
    truth.index = models
    df = df[df.clustering != "selected"]
    df = df.assign(ae=(df.estimate - truth.stack().reindex(list(zip(df.model, df.scenario))).to_numpy()).abs())
    mae = df.groupby("estimator").ae.mean()
    assert mae["bank_joint"] < 0.9 * mae["anchor"], mae
    # the ridge fill-in on the same bank (issue 58's collaborative estimator) beats the anchors too
    assert mae["fill"] < 0.9 * mae["anchor"], mae
    # eps and fill's lam were chosen per scenario on validation models, and the fitted stacks give the bank weight
    for b in pred.named_steps["bank"].banks_.values():
        assert set(b["eps"]) == set(b["fill"]) == set(pred.layout.scenarios)
        assert set(b["fill"].values()) <= set(FILL_LAMBDAS)
    w = [
        st["w_t1"][st["members"].index("bank_joint")]
        for k, st in pred.named_steps["stacks"].stacks_.items()
        if k[3] == "stack"
    ]
    assert max(w) > 0.05, w


def test_the_posterior_does_not_depend_on_how_rows_are_blocked(monkeypatch):
    from tinybench_assets.core.estimation import bank

    rng = np.random.default_rng(3)
    B = (rng.random((300, 30)) < 0.5).astype(float)
    Y = (rng.random((50, 30)) < 0.5).astype(float)
    vals = rng.random((300, 2))
    whole = posterior_means(Y, B, vals, 0.2)
    monkeypatch.setattr(bank, "CHUNK_CELLS", 300 * 7)  # blocks of 7 rows, the last one short
    np.testing.assert_allclose(posterior_means(Y, B, vals, 0.2), whole, rtol=0, atol=1e-12)
