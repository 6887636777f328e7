"""Anchor selection: weights, balance weights, uniqueness, n >= N; forward selection."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tinybench_assets.core.estimation.anchors import AnchorSelector, forward_select, item_features, select_anchors
from tinybench_assets.core.estimation.estimators import anchor_estimate
from tinybench_assets.core.responses import ResponseMatrix
from tinybench_assets_tests.conftest import synthetic_2pl

torch.set_num_threads(1)


def _matrix_with_subscenarios(seed=0):
    """One scenario, three subscenarios of very unequal size (4, 10, 26 items)."""
    Y, theta, a, b = synthetic_2pl(300, 40, dim=2, seed=seed)
    subs = np.array(["s1"] * 4 + ["s2"] * 10 + ["s3"] * 26, dtype=object)
    rm = ResponseMatrix(
        Y, [f"m{i}" for i in range(300)], [f"i{j}" for j in range(40)], np.array(["sc"] * 40, dtype=object), subs
    )
    return rm, a, b


@pytest.mark.parametrize("clustering", ["correctness", "irt", "forward"])
def test_weights_sum_to_one_and_are_cluster_balance_mass(clustering):
    rm, a, b = _matrix_with_subscenarios()
    w = rm.balance_weights()
    sel = AnchorSelector(n_anchors=8, clustering=clustering, n_init=3, random_state=0).fit(rm.scores, w, a=a, b=b)
    assert sel.anchors_.shape == (8,) and sel.weights_.shape == (8,)
    assert sel.weights_.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(sel.weights_ > 0)
    # weight of anchor c = normalized balance-weight mass of cluster c
    expected = np.bincount(sel.labels_, weights=w / w.sum(), minlength=8)
    np.testing.assert_allclose(sel.weights_, expected, atol=1e-12)
    # the tutorial's balance weights give each subscenario 1/3 of the mass whatever its size (4, 10, 26 items) ...
    for sub in ("s1", "s2", "s3"):
        assert (w / w.sum())[rm.subscenarios == sub].sum() == pytest.approx(1 / 3, abs=1e-12)
    # ... and the anchor weights carry them: they are not the clusters' shares of items
    share = np.bincount(sel.labels_, minlength=8) / len(w)
    assert np.abs(sel.weights_ - share).max() > 0.02
    # anchors are distinct items
    assert len(np.unique(sel.anchors_)) == 8


def test_anchor_is_nearest_item_to_its_centroid_when_unique():
    rm, a, b = _matrix_with_subscenarios(seed=1)
    w = rm.balance_weights()
    sel = AnchorSelector(n_anchors=6, clustering="irt", n_init=3, random_state=3).fit(None, w, a=a, b=b)
    X = item_features("irt", a=a, b=b)
    # recompute the centroids from labels (weighted means) and check each anchor is the nearest item
    for c, anchor in enumerate(sel.anchors_):
        members = sel.labels_ == c
        centroid = np.average(X[members], axis=0, weights=w[members])
        d = ((X - centroid) ** 2).sum(1)
        assert d[anchor] <= d.min() + 1e-9


def test_no_duplicate_anchors_with_identical_items():
    # 12 items, but only 3 distinct correctness columns: nearest-item collisions are unavoidable
    rng = np.random.default_rng(0)
    base = (rng.random((50, 3)) < 0.5).astype(float)
    Y = base[:, np.repeat(np.arange(3), 4)]
    with pytest.warns(Warning):  # sklearn: fewer distinct points than clusters
        anchors, weights = select_anchors(Y, np.ones(12), 6, clustering="correctness", n_init=2, seed=0)
    assert len(np.unique(anchors)) == 6
    assert weights.sum() == pytest.approx(1.0)


def test_all_items_as_anchors_give_exact_balance_weighted_accuracy():
    rm, a, b = _matrix_with_subscenarios(seed=2)
    w = rm.balance_weights()
    for n in (40, 55):
        anchors, weights = select_anchors(rm.scores, w, n, clustering="correctness")
        np.testing.assert_array_equal(np.sort(anchors), np.arange(40))
        est = anchor_estimate(rm.scores[:, anchors], weights)
        np.testing.assert_allclose(est, rm.accuracy()["sc"].to_numpy(), atol=1e-12)


def test_seeded_and_deterministic():
    rm, a, b = _matrix_with_subscenarios(seed=3)
    w = rm.balance_weights()
    r1 = select_anchors(rm.scores, w, 10, seed=5, n_init=2)
    r2 = select_anchors(rm.scores, w, 10, seed=5, n_init=2)
    np.testing.assert_array_equal(r1[0], r2[0])
    np.testing.assert_allclose(r1[1], r2[1])


def test_anchors_beat_random_items_when_items_are_redundant():
    # the point of anchors: items come in groups that behave alike (here 10 "skills" of unequal size,
    # each answered right by a model iff it has the skill, with 3% noise). One anchor per group with
    # the group's weight is nearly exact; n random items miss or over-count groups.
    rng = np.random.default_rng(4)
    sizes = np.array([3, 5, 6, 8, 10, 12, 15, 18, 20, 23])
    group = np.repeat(np.arange(10), sizes)
    skill = rng.random((1000, 10)) < rng.random((1000, 1))
    Y = skill[:, group].astype(float)
    flip = rng.random(Y.shape) < 0.03
    Y = np.where(flip, 1 - Y, Y)
    train, test = Y[:700], Y[700:]
    w = np.ones(Y.shape[1])
    anchors, weights = select_anchors(train, w, 10, clustering="correctness", n_init=5, seed=0)
    assert sorted(group[anchors]) == list(range(10))  # one anchor per group
    np.testing.assert_allclose(np.sort(weights), np.sort(sizes / sizes.sum()))
    truth = test.mean(1)
    mae_anchor = np.abs(anchor_estimate(test[:, anchors], weights) - truth).mean()
    maes = [np.abs(test[:, rng.choice(Y.shape[1], 10, replace=False)].mean(1) - truth).mean() for _ in range(20)]
    assert mae_anchor < 0.5 * np.mean(maes)


def test_bad_inputs():
    with pytest.raises(ValueError):
        item_features("irt", Y=np.zeros((3, 4)))
    with pytest.raises(ValueError):
        item_features("tfidf", Y=np.zeros((3, 4)))
    with pytest.raises(ValueError):
        AnchorSelector(n_anchors=2).fit(np.zeros((5, 4)), np.ones(3))


def test_forward_select_finds_the_columns_a_linear_target_is_made_of():
    rng = np.random.default_rng(0)
    Y = (rng.random((400, 60)) < 0.5).astype(float)
    Y[:, 7] = 1.0  # constant: nothing to explain with
    Y[:, 8] = Y[:, 3]  # a copy of a column that will be picked
    target = 3.0 * Y[:, 3] + 2.0 * Y[:, 41] + 1.0 * Y[:, 17] + 0.5
    picked = forward_select(Y, target, 3)
    assert picked.tolist() == [3, 41, 17]  # largest contribution first
    more = forward_select(Y, target, 10)
    assert len(set(more.tolist())) == 10 and 7 not in more[:9]
    assert not {3, 8} <= set(more.tolist())  # the copy adds nothing once its twin is in
    noisy = target + rng.normal(0, 0.5, 400)
    np.testing.assert_array_equal(forward_select(Y, noisy, 6), forward_select(Y.copy(), noisy.copy(), 6))


def test_forward_select_matches_brute_force_stepwise_least_squares():
    rng = np.random.default_rng(1)
    Y = (rng.random((200, 25)) < rng.random(25)).astype(float)
    target = Y @ rng.normal(size=25) + rng.normal(0, 0.3, 200)
    chosen: list[int] = []
    for _ in range(6):
        best, best_rss = None, np.inf
        for j in range(25):
            if j in chosen:
                continue
            X = np.column_stack([np.ones(200), Y[:, chosen + [j]]])
            rss = np.sum((target - X @ np.linalg.lstsq(X, target, rcond=None)[0]) ** 2)
            if rss < best_rss - 1e-9:
                best, best_rss = j, rss
        chosen.append(best)
    assert forward_select(Y, target, 6).tolist() == chosen


def test_forward_anchors_predict_the_pool_better_than_kmeans_anchors_with_a_linear_fit():
    """On items that share a strong ability signal plus item-specific noise, forward-selected anchors let a linear
    fit on training models predict held-out models' pool accuracy better than KMeans (correctness) anchors do."""
    Y, theta, a, b = synthetic_2pl(1200, 150, dim=3, seed=4)
    w = np.ones(150)
    tr, te = np.arange(900), np.arange(900, 1200)
    acc = Y.mean(1)
    errs = {}
    for clustering in ("correctness", "forward"):
        sel = AnchorSelector(n_anchors=10, clustering=clustering, n_init=3, random_state=0).fit(Y[tr], w)
        X = np.column_stack([np.ones(1200), Y[:, sel.anchors_]])
        coef = np.linalg.lstsq(X[tr], acc[tr], rcond=None)[0]
        errs[clustering] = np.abs(X[te] @ coef - acc[te]).mean()
    assert errs["forward"] < 0.9 * errs["correctness"], errs


def test_forward_anchors_are_selected_for_the_balance_weighted_score():
    """Forward selection explains each model's balance-weighted accuracy: skewed weights pick other anchors than
    uniform ones, and those anchors track the weighted accuracy of the training models better."""
    rng = np.random.default_rng(4)
    theta, b = rng.normal(size=(80, 1)), rng.normal(size=40)
    Y = (rng.random((80, 40)) < 1 / (1 + np.exp(-(2 * theta - b)))).astype(float)
    Y[:, :20] = (rng.random((80, 20)) < 0.5).astype(float)  # the heavy half: noise the light half does not explain
    w = np.r_[np.full(20, 10.0), np.ones(20)] / 220
    skewed = AnchorSelector(n_anchors=6, clustering="forward").fit(Y, balance_weights=w)
    flat = AnchorSelector(n_anchors=6, clustering="forward").fit(Y)
    assert set(skewed.anchors_) != set(flat.anchors_)
    target = Y @ w

    def err(anchors):  # each model's estimate from these anchors, least-squares weights on the training models
        coef = np.linalg.lstsq(Y[:, anchors], target, rcond=None)[0]
        return np.abs(Y[:, anchors] @ coef - target).mean()

    assert err(skewed.anchors_) < err(flat.anchors_)
