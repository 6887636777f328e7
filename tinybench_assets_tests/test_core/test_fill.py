"""The ridge fill-in estimator (core/estimation/fill.py), twins (core/estimation/twins.py) and the small boards'
random-items gate (core/estimation/small_guard.gate): the fill-in recovers a board model's score from its anchors,
extrapolates to a model stronger than the board where the answer bank pulls it back, predicts unanswered anchors,
and is served through the artifact as the predictor computes it; twins are found by agreement; the gate serves the
anchors' plain mean only where the served rule loses to random items and the plain mean did better."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from tinybench_assets.core.estimation.anchor_sets import AnchorSet
from tinybench_assets.core.estimation.bank import bank_arrays, bank_estimates
from tinybench_assets.core.estimation.fill import FILL, fill_estimates, fill_means
from tinybench_assets.core.estimation.small_choice import Rule, ScenarioChoice
from tinybench_assets.core.estimation.small_guard import gate
from tinybench_assets.core.estimation.twins import agreement, twin_mask, twin_share

from .test_small_board import fitted, saved_estimate


def _low_rank_board(models=30, items=400, seed=0):
    """0/1 answers of a two-factor logistic model: (Y (M, I), abilities (M, 2))."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=(models, 2))
    a, b = np.abs(rng.normal(1.0, 0.3, size=(items, 2))), rng.normal(size=items)
    P = 1 / (1 + np.exp(-(theta @ a.T - b)))
    return (rng.random(P.shape) < P).astype(float), theta, a, b, rng


def _one_scenario(Y, anchors):
    cols = {"s": np.arange(Y.shape[1])}
    sets = {"s": AnchorSet("s", "correctness", 0, anchors, anchors, np.full(len(anchors), 1 / len(anchors)))}
    return cols, np.ones(Y.shape[1]), sets


def test_fill_recovers_a_board_model_and_extrapolates_beyond_the_board():
    Y, theta, a, b, rng = _low_rank_board()
    anchors = np.sort(rng.choice(Y.shape[1], 60, replace=False))
    cols, w, sets = _one_scenario(Y, anchors)
    bank = bank_arrays(Y, cols, w, {"s": anchors})
    truth = Y.mean(1)
    own = fill_estimates(Y, cols, w, sets, bank, {"s": 0.01})["s"]  # the board's own models: near their truth
    assert np.mean(np.abs(own - truth)) < 0.02
    # new models far stronger than every board model: the fill-in follows them, the answer bank cannot
    strong_theta = theta[np.argsort(-theta.sum(1))[:5]] + 1.5
    P = 1 / (1 + np.exp(-(strong_theta @ a.T - b)))
    Yn = (rng.random(P.shape) < P).astype(float)
    t = Yn.mean(1)
    assert t.min() > truth.max() - 0.05  # they lie beyond the board
    fill = fill_estimates(Yn, cols, w, sets, bank, {"s": 0.01})["s"]
    bank_est = bank_estimates(Yn, cols, w, sets, {**bank}, {"s": 0.1})["s"]
    assert np.mean(np.abs(fill - t)) < 0.5 * np.mean(np.abs(bank_est - t))


def test_fill_predicts_unanswered_anchors_and_needs_an_answer():
    Y, *_ = _low_rank_board(models=20, items=200, seed=1)
    anchors = np.arange(0, 200, 5)
    cols, w, sets = _one_scenario(Y, anchors)
    bank = bank_arrays(Y, cols, w, {"s": anchors})
    Yn = Y[:3].copy()
    Yn[0, anchors[:10]] = np.nan  # row 0 skipped a quarter of its anchors
    Yn[2, :] = np.nan  # row 2 answered nothing
    pa, pv = fill_means(Yn[:, anchors], bank["answers"], bank["values"], 0.1)
    assert np.isfinite(pa[0]).all() and ((pa[0] >= 0) & (pa[0] <= 1)).all()
    assert np.isnan(pa[2]).all() and np.isnan(pv[2]).all()
    est = fill_estimates(Yn, cols, w, sets, bank, {"s": 0.1})["s"]
    assert np.isfinite(est[:2]).all() and np.isnan(est[2])
    # the skipped anchors count as predicted, not as wrong: the estimate moves toward the full-answer one
    full = fill_estimates(Y[:1], cols, w, sets, bank, {"s": 0.1})["s"][0]
    wrong = fill_estimates(np.where(np.isnan(Yn[:1]), 0.0, Yn[:1]), cols, w, sets, bank, {"s": 0.1})["s"][0]
    assert abs(est[0] - full) <= abs(wrong - full) + 1e-12


def test_fill_is_served_through_the_artifact_as_computed(tmp_path):
    """fill forced into the served choice: predict == fill_estimates on the served bank == the saved artifact."""
    Y, p0 = fitted()
    p = copy.deepcopy(p0)
    n = 30
    for s in p.layout_.scenarios:
        ch = p.choices_[(s, n)]
        assert ch.fill_lam is not None and any(r.estimator == FILL for r in ch.rules)
        ch.t1 = FILL
    p.served_.models.clear()
    served = p.predict(Y, n=n)
    bank = p.served_.bank[("correctness", n)]
    L = p.layout_
    sets = {
        s: AnchorSet(s, "correctness", n, loc, L.cols[s][loc], wt)
        for s, (loc, wt) in ((s, p.served_.fits[s].anchors[n]) for s in L.scenarios)
    }
    mine = fill_estimates(Y, L.cols, L.w, sets, bank, bank["fill"])
    for s in L.scenarios:
        np.testing.assert_allclose(served[served.scenario == s].estimate, mine[s], rtol=0, atol=1e-12)
    art = p.to_artifact("small-sim", n)
    assert art["learned"]["bank"]["fill"] == {s: p.choices_[(s, n)].fill_lam for s in L.scenarios}
    row = 3
    df = saved_estimate(art, Y, L.items, row, tmp_path)
    assert list(df.estimator) == [FILL] * len(L.scenarios)
    np.testing.assert_allclose(df.estimate, [mine[s][row] for s in L.scenarios], rtol=0, atol=1e-12)


def test_twins_by_agreement():
    rng = np.random.default_rng(0)
    train = (rng.random((5, 200)) < 0.5).astype(float)
    near = train[2].copy()
    near[:1] = 1 - near[:1]  # 199 of 200 agree: a twin at 0.99
    far = (rng.random(200) < 0.5).astype(float)
    test = np.vstack([train[0], near, far, np.full(200, np.nan)])
    assert twin_mask(test, train).tolist() == [True, True, False, False]
    assert twin_mask(test, train, threshold=1.0).tolist() == [True, False, False, False]
    assert agreement(test[:1], train[:1])[0, 0] == 1.0
    share = twin_share(test, train, {"a": np.arange(100), "b": np.arange(100, 200)})
    assert share == {"a": 2 / 3, "b": 2 / 3}  # the unanswered row does not count
    # agreement counts the items both answered: a training model that answered half of them, all alike, is a twin
    half = train[3].copy()
    half[100:] = np.nan
    assert agreement(train[3:4], half[None])[0, 0] == 1.0 and twin_mask(train[3:4], half[None]).all()


def _choice(served, plain, truth):
    rules = [Rule("anchor", 1), Rule("shrunk_joint", 1)]
    cv = [{"served_t1": False}, {"served_t1": True}, {"estimator": "served", "cv_mae_t1": np.nan}]
    return ScenarioChoice(
        "s",
        30,
        30,
        1,
        "shrunk_joint",
        "shrunk_joint",
        {},
        rules,
        cv=cv,
        oof=[plain, served],
        oof_served=served.copy(),
        t1_json="shrunk_joint",
    )


def test_gate_serves_the_plain_mean_only_where_the_rule_loses_to_random_items():
    rng = np.random.default_rng(0)
    truth = rng.uniform(0.2, 0.8, 40)
    folds = np.arange(40) % 5
    expected = np.full(40, 0.03)
    plain = truth + rng.choice([-1, 1], 40) * 0.02
    bad = truth + rng.choice([-1, 1], 40) * 0.05  # loses to random items (0.05 >= 0.03), and to the plain mean
    ch = _choice(bad, plain, truth)
    assert gate(ch, expected, truth, folds)
    assert ch.t1 == ch.t1_json == "anchor" and ch.cv[0]["served_t1"] and not ch.cv[1]["served_t1"]
    np.testing.assert_allclose(ch.oof_served, plain)
    assert abs(ch.served_mae - 0.02) < 1e-12 and ch.cv[-1]["cv_mae_t1"] == ch.served_mae
    good = truth + rng.choice([-1, 1], 40) * 0.01  # beats random items: kept
    ch = _choice(good, plain, truth)
    assert not gate(ch, expected, truth, folds) and ch.t1 == "shrunk_joint"
    np.testing.assert_allclose(ch.oof_served, good)
    worse_plain = truth + 0.08  # the rule loses to random items but the plain mean is worse still: kept
    ch = _choice(bad, worse_plain, truth)
    assert not gate(ch, expected, truth, folds) and ch.t1 == "shrunk_joint"
    better_plain = truth + rng.choice([-1, 1], 40) * 0.005  # the rule beats random items: kept, however good the
    ch = _choice(good, better_plain, truth)  # plain mean is (the gate is about random items, not a second choice)
    assert not gate(ch, expected, truth, folds) and ch.t1 == "shrunk_joint"
    np.testing.assert_allclose(ch.oof_served, good)


def test_each_folds_gate_decision_reads_only_the_other_folds():
    """The rule loses to random items only through fold 0's rows: fold 0's own decision (made without them) keeps
    the rule, every other fold's decision reads them and serves the plain mean; on every row the rule is kept."""
    rng = np.random.default_rng(1)
    truth = rng.uniform(0.2, 0.8, 40)
    folds = np.arange(40) % 5
    sign = rng.choice([-1, 1], 40)
    served = truth + sign * np.where(folds == 0, 0.10, 0.01)  # MAE 0.028 on every row, 0.0325 without folds 1-4
    plain = truth - sign * 0.005
    ch = _choice(served, plain, truth)
    assert not gate(ch, np.full(40, 0.03), truth, folds) and ch.t1 == "shrunk_joint"
    np.testing.assert_allclose(ch.oof_served[folds == 0], served[folds == 0])
    np.testing.assert_allclose(ch.oof_served[folds != 0], plain[folds != 0])


def test_fill_primal_and_dual_forms_agree():
    """More board models than answered anchors takes the (A, A) system: the same predictions as the (F, F) one."""
    rng = np.random.default_rng(2)
    B = (rng.random((40, 12)) < 0.5).astype(float)
    V = rng.random((40, 1))
    Ya = (rng.random((2, 12)) < 0.5).astype(float)
    pred_a, pred_v = fill_means(Ya, B, V, 0.3)
    mu, X = B.mean(0), (B - B.mean(0)).T  # by hand, the (F, F) form
    ridge = 0.3 * np.sum(X * X) / 40
    beta = np.linalg.solve(X.T @ X + ridge * np.eye(40), X.T @ (Ya - mu).T)
    np.testing.assert_allclose(pred_v[:, 0], V.mean() + (V[:, 0] - V.mean()) @ beta, atol=1e-10)
    np.testing.assert_allclose(pred_a, np.clip(mu + (X @ beta).T, 0, 1), atol=1e-10)


def test_a_bank_model_without_a_value_counts_at_the_banks_mean():
    """A bank model that did not run the scenario counts as the bank's mean value there, not as zero."""
    rng = np.random.default_rng(0)
    B = (rng.random((8, 6)) < 0.5).astype(float)
    V = rng.random((8, 1))
    Ya = (rng.random((2, 6)) < 0.5).astype(float)
    missing, at_mean = V.copy(), V.copy()
    missing[3, 0] = np.nan
    at_mean[3, 0] = np.nanmean(missing)
    np.testing.assert_allclose(fill_means(Ya, B, missing, 0.1)[1], fill_means(Ya, B, at_mean, 0.1)[1], atol=1e-12)


def test_fill_adds_its_predicted_anchor_and_caps_the_rest_at_its_weight():
    """The estimate is the answered anchors, the predicted unanswered one (not a zero) and the predicted rest, clipped
    to the rest's share of the weight: a model beyond the board's best cannot score above 1 through the rest."""
    rng = np.random.default_rng(0)
    Y8 = np.zeros((1, 8))
    cols, w, sets = _one_scenario(Y8, np.arange(4))  # each anchor 1/8 of the score, the rest 1/2
    bank = {"answers": rng.random((6, 4)), "values": rng.uniform(0.1, 0.4, (6, 1))}
    y = np.array([[1.0, np.nan, 0.0, 1.0] + [np.nan] * 4])
    est = fill_estimates(y, cols, w, sets, bank, {"s": 0.1})["s"][0]
    pa, pv = fill_means(y[:, :4], bank["answers"], bank["values"], 0.1)
    assert pa[0, 1] > 0.01
    assert est == pytest.approx(
        np.array([1, pa[0, 1], 0, 1]) @ np.full(4, 1 / 8) + np.clip(pv[0, 0], 0, 0.5), abs=1e-12
    )
    answers = np.array([[0.25, 0.25, 0.25, 0.75], [0.5] * 4, [0.75, 0.75, 0.75, 0.25]])
    values = np.array([[0.15], [0.3], [0.45]])
    top = np.array([[1.0, 1.0, 1.0, 0.0] + [np.nan] * 4])  # beyond the best bank model: its predicted rest > 1/2
    assert fill_means(top[:, :4], answers, values, 0.01)[1][0, 0] > 0.5
    capped = fill_estimates(top, cols, w, sets, {"answers": answers, "values": values}, {"s": 0.01})["s"][0]
    assert capped == pytest.approx(3 / 8 + 0.5, abs=1e-12)


def test_fill_means_predicts_each_value_column_on_its_own():
    rng = np.random.default_rng(2)
    B = (rng.random((40, 12)) < 0.5).astype(float)
    V = rng.random((40, 2)) + [0, 5]
    Ya = (rng.random((2, 12)) < 0.5).astype(float)
    both = fill_means(Ya, B, V, 0.3)[1]
    for j in range(2):
        np.testing.assert_allclose(both[:, j], fill_means(Ya, B, V[:, [j]], 0.3)[1][:, 0], atol=1e-12)


def test_the_gate_fires_at_an_equal_error_and_never_on_a_choice_that_serves_the_plain_mean():
    """'Not below random items' includes equal: a rule whose out-of-fold MAE equals random items' expected error
    (0.125, exact in binary) is gated where the plain mean did better. A choice that already serves the plain mean
    is not gated (the predictor would add a gate note to it)."""
    truth, folds = np.full(40, 0.5), np.arange(40) % 5
    sign = np.where(np.arange(40) % 2, 1.0, -1.0)
    assert gate(_choice(truth + sign * 0.125, truth + sign * 0.0625, truth), np.full(40, 0.125), truth, folds)
    rng = np.random.default_rng(0)
    truth = rng.uniform(0.2, 0.8, 40)
    ch = _choice(truth + rng.choice([-1, 1], 40) * 0.05, truth + rng.choice([-1, 1], 40) * 0.02, truth)
    ch.t1 = ch.t1_json = "anchor"
    ch.cv[0]["served_t1"], ch.cv[1]["served_t1"] = True, False
    assert not gate(ch, np.full(40, 0.03), truth, folds)
