"""Routing core: KNN imputation, tie-breaking, routing figures, cost-aware routing, CV selection, saved routers."""

import numpy as np
import pytest

from tinybench_assets.core.routing import (
    evaluate_routing,
    impute_item_params,
    nearest,
    paired_bootstrap_ci,
    route,
    route_with_cost,
    select_router,
)
from tinybench_assets.core.routing.routers import (
    BestSingleRouter,
    EnsembleRouter,
    KNNIRTRouter,
    KNNVoteRouter,
    LogisticRouter,
    MFRouter,
)
from tinybench_assets.core.routing.saved import load_router, save_router


def clustered(n_per=150, d=8, seed=0, noise=0.15):
    """Two question clusters in embedding space; model 0 is strong on cluster A, model 1 on B, model 2 middling."""
    g = np.random.default_rng(seed)
    centres = np.eye(d)[:2]
    lab = np.repeat([0, 1], n_per)
    E = centres[lab] + noise * g.normal(size=(2 * n_per, d))
    p = np.array([[0.95, 0.25, 0.6], [0.25, 0.95, 0.6]])[lab]
    Y = (g.random(p.shape) < p).astype(float)
    return E, Y, lab


def test_imputation_known_answer():
    # training questions on three directions; each direction's a and b are constant -> a query near a direction gets them
    g = np.random.default_rng(1)
    dirs = np.eye(3)
    lab = np.repeat([0, 1, 2], 10)
    E_tr = dirs[lab] + 0.01 * g.normal(size=(30, 3))
    a_tr = np.array([[1.0, 0.0], [0.0, 2.0], [-1.0, 1.0]])[lab]
    b_tr = np.array([-1.0, 0.5, 2.0])[lab]
    E_q = np.array([[0.9, 0.1, 0.0], [0.0, 0.1, 1.0]])
    imp = impute_item_params(E_q, E_tr, a_tr, b_tr, k=10)
    assert np.allclose(imp.a, [[1.0, 0.0], [-1.0, 1.0]]) and np.allclose(imp.b, [-1.0, 2.0])
    assert (lab[imp.idx[0]] == 0).all() and (lab[imp.idx[1]] == 2).all()
    assert np.all(np.diff(imp.sim, axis=1) <= 1e-6)  # most similar first
    # k = 15 mixes in 5 neighbours of the second-closest direction: the uniform mean moves by 1/3 of the gap
    imp15 = impute_item_params(E_q[:1], E_tr, a_tr, b_tr, k=15)
    assert np.isclose(imp15.b[0], (10 * -1.0 + 5 * 0.5) / 15)
    # similarity weighting pulls it back toward the closer direction
    imp15s = impute_item_params(E_q[:1], E_tr, a_tr, b_tr, k=15, weighting="similarity")
    assert -1.0 < imp15s.b[0] < imp15.b[0] - 0.2
    with pytest.raises(ValueError):
        impute_item_params(E_q, E_tr, a_tr, b_tr, k=3, weighting="nope")


def test_nearest_matches_brute_force():
    g = np.random.default_rng(2)
    A, B = g.normal(size=(50, 6)), g.normal(size=(80, 6))
    idx, sim = nearest(A, B, 7, chunk=16)
    An, Bn = A / np.linalg.norm(A, axis=1, keepdims=True), B / np.linalg.norm(B, axis=1, keepdims=True)
    S = An @ Bn.T
    assert np.array_equal(idx, np.argsort(-S, axis=1, kind="stable")[:, :7])
    assert np.allclose(sim, np.take_along_axis(S, idx, axis=1), atol=1e-5)


def test_tie_break_by_training_accuracy_and_margin():
    P = np.array([[0.5, 0.5, 0.5], [0.2, 0.6, 0.6], [0.9, 0.1, 0.1], [0.5, 0.52, 0.49]])
    prior = np.array([0.3, 0.4, 0.7])
    assert route(P, prior).tolist() == [2, 2, 0, 1]
    # plain argmax would send every full tie to model 0
    assert P.argmax(axis=1).tolist()[0] == 0
    # a margin keeps questions on the default model (2) unless another beats it by more than the margin
    assert route(P, prior, margin=0.05).tolist() == [2, 2, 0, 2]
    with pytest.raises(ValueError):
        route(P, prior[:2])


def test_evaluate_routing_hand_made():
    Y = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 0], [1, 1, 1]], dtype=float)
    picks = np.array([0, 1, 2, 1])
    ev = evaluate_routing(Y, picks, best_model=0, models=["a", "b", "c"], n_boot=500)
    assert ev["router_acc"] == 0.75 and ev["best_single_acc"] == 0.5 and ev["oracle_acc"] == 0.75
    assert np.isclose(ev["random_acc"], 5 / 12)
    assert ev["pick_share"] == {"a": 0.25, "b": 0.5, "c": 0.25}
    assert np.isclose(ev["delta"], 0.25)
    lo, hi = ev["delta_ci95"]
    assert 0.0 <= lo <= 0.25 <= hi <= 1.0
    assert np.isclose(ev["no_info_acc"], 0.25 * 0.5 + 0.5 * 0.5 + 0.25 * 0.25)
    with pytest.raises(ValueError):
        evaluate_routing(np.array([[1.0, np.nan]]), np.array([0]), 0)


def test_paired_bootstrap_interval_covers_and_shrinks():
    g = np.random.default_rng(3)
    x, y = (g.random(4000) < 0.7).astype(float), (g.random(4000) < 0.6).astype(float)
    lo, hi = paired_bootstrap_ci(x, y, n_boot=1000)
    assert lo < x.mean() - y.mean() < hi and 0 < lo and hi - lo < 0.06
    lo2, hi2 = paired_bootstrap_ci(x[:400], y[:400], n_boot=1000)
    assert hi2 - lo2 > hi - lo


def test_cost_aware_routing_toy():
    # model 0 cheap and right half the time; model 1 ten times dearer and always right
    n = 200
    Y = np.column_stack([np.arange(n) % 2, np.ones(n)]).astype(float)
    P = np.column_stack([np.full(n, 0.5), np.full(n, 0.95)])
    C = np.column_stack([np.full(n, 1.0), np.full(n, 10.0)])
    prior = Y.mean(axis=0)
    assert (route_with_cost(P, C, 0.0, prior) == 1).all()
    assert (route_with_cost(P, C, 1.0, prior) == 0).all()  # 0.95 - 10 < 0.5 - 1
    from tinybench_assets.core.routing.cost import cost_quality_report

    rep = cost_quality_report(P, Y, C, prior, np.ones(n, dtype=int), n_boot=50)
    assert np.isclose(min(rep["curve_cost"]), 1.0) and np.isclose(max(rep["curve_cost"]), 10.0)
    assert set(np.round(rep["curve_acc"], 3)) == {0.5, 1.0}
    # no information about the questions: the router's hull is the zero router's (a random mix of the two models)
    assert np.isclose(rep["aiq_router"], rep["aiq_zero"]) and np.isclose(rep["aiq_zero"], 0.75, atol=0.01)
    assert rep["cost_ratio"] == 1.0 and rep["served_acc"] == 1.0


def test_selection_finds_real_signal_and_shuffled_answers_remove_the_gain():
    E, Y, lab = clustered(seed=0)
    Et, Yt, labt = clustered(seed=1)
    fams = ["best_single", "knn_vote", "knn_shrunk", "knn_irt", "logistic"]
    grid = {"knn_irt": {"dim": [1, 2], "k": [10, 20]}}
    sel = select_router(E, Y, families=fams, grid=grid, n_folds=3, seed=0, n_boot=300)
    assert sel.served != "best_single" and sel.gate[sel.served] > 0
    assert sel.best[sel.served][1] > sel.best["best_single"][1] + 0.15
    router = sel.make(sel.served).fit(E, Y)
    prior = Y.mean(axis=0)
    picks = route(router.predict_proba(Et), prior, margin=sel.margin)
    best = int(np.argmax(prior))
    ev = evaluate_routing(Yt, picks, best, n_boot=300)
    assert ev["router_acc"] > ev["best_single_acc"] + 0.15 and ev["delta_ci95"][0] > 0
    assert ev["router_acc"] > ev["no_info_acc"] + 0.15
    # the same routes scored against shuffled test answers: the gain over what the pick shares alone give vanishes
    g = np.random.default_rng(0)
    evs = [evaluate_routing(Yt[g.permutation(len(Yt))], picks, best, n_boot=10) for _ in range(20)]
    assert abs(np.mean([e["router_acc"] - e["no_info_acc"] for e in evs])) < 0.02
    # training answers shuffled: there is nothing to learn, and the gate serves the best single model
    Ys = Y[np.random.default_rng(4).permutation(len(Y))]
    sel_s = select_router(E, Ys, families=["best_single", "knn_vote", "logistic"], n_folds=3, seed=0, n_boot=300)
    assert sel_s.served == "best_single"


def test_cv_table_and_ensemble():
    E, Y, _ = clustered(n_per=60, seed=2)
    sel = select_router(
        E, Y, families=["best_single", "knn_vote", "logistic"], n_folds=3, seed=1, n_boot=200, margins=[0.0, 0.1]
    )
    t = sel.table
    assert set(t["family"]) == {"best_single", "knn_vote", "logistic", "ensemble"}
    assert t["served"].sum() == 1 and (t.groupby("family")["chosen_in_family"].sum() == 1).all()
    assert ((t["cv_acc"] >= 0) & (t["cv_acc"] <= 1)).all()
    assert isinstance(sel.make("ensemble"), EnsembleRouter)
    # same inputs, same choice
    sel2 = select_router(
        E, Y, families=["best_single", "knn_vote", "logistic"], n_folds=3, seed=1, n_boot=200, margins=[0.0, 0.1]
    )
    assert sel2.served == sel.served and sel2.best == sel.best


@pytest.mark.parametrize(
    "make",
    [
        lambda: BestSingleRouter(),
        lambda: KNNVoteRouter(k=7, weighting="similarity", shrink=2.0),
        lambda: KNNIRTRouter(dim=2, k=5),
        lambda: LogisticRouter(C=0.5),
        lambda: EnsembleRouter([KNNVoteRouter(k=5), LogisticRouter(C=1.0)]),
        lambda: MFRouter(rank=3, l2=1e-3),
        lambda: EnsembleRouter([MFRouter(rank=2), KNNVoteRouter(k=5)]),
    ],
)
def test_saved_router_predicts_the_same(tmp_path, make):
    E, Y, _ = clustered(n_per=40, seed=3)
    Y[0, 1] = np.nan  # a missing cell is tolerated in training
    r = make().fit(E, Y)
    P = r.predict_proba(E[:25])
    assert P.shape == (25, 3) and ((P >= 0) & (P <= 1)).all()
    save_router(r, tmp_path / "r.npz", {"models": ["a", "b", "c"], "margin": 0.0})
    r2, meta = load_router(tmp_path / "r.npz")
    assert meta["models"] == ["a", "b", "c"] and type(r2) is type(r)
    assert np.allclose(r2.predict_proba(E[:25]), P)


def test_matrix_factorization_router_learns_who_answers_what_and_is_deterministic():
    """The MF family recovers the clusters' specialists (test questions of another draw), gets through the CV and the
    gate like any family, and two fits with one seed are identical."""
    E, Y, lab = clustered(seed=0)
    Et, _, labt = clustered(seed=1)
    r = MFRouter(rank=2, l2=1e-3).fit(E, Y)
    P = r.predict_proba(Et)
    assert (P.argmax(axis=1) == np.where(labt == 0, 0, 1)).mean() > 0.95
    assert np.array_equal(P, MFRouter(rank=2, l2=1e-3).fit(E, Y).predict_proba(Et))
    sel = select_router(
        E, Y, families=["best_single", "mf"], grid={"mf": {"rank": [2], "l2": [1e-3]}}, n_folds=3, seed=0, n_boot=300
    )
    assert sel.served == "mf" and sel.gate["mf"] > 0 and sel.best["mf"][1] > sel.best["best_single"][1] + 0.15
    # no signal (answers shuffled across questions): the gate keeps the best single model
    Ys = Y[np.random.default_rng(5).permutation(len(Y))]
    assert (
        select_router(
            E,
            Ys,
            families=["best_single", "mf"],
            grid={"mf": {"rank": [2], "l2": [1e-3]}},
            n_folds=3,
            seed=0,
            n_boot=300,
        ).served
        == "best_single"
    )


def test_ensemble_of_fitted_members_equals_fitting_it():
    """router_accuracy builds the ensemble from the members it already fitted: the same P as fitting the ensemble."""
    E, Y, _ = clustered(seed=0)
    Et, _, _ = clustered(seed=1)
    members = [KNNVoteRouter(k=10).fit(E, Y), LogisticRouter(C=1.0).fit(E, Y)]
    fresh = EnsembleRouter([KNNVoteRouter(k=10), LogisticRouter(C=1.0)]).fit(E, Y)
    reused = EnsembleRouter.of_fitted(members, Y)
    assert np.allclose(reused.predict_proba(Et), fresh.predict_proba(Et)) and np.array_equal(reused.acc_, fresh.acc_)


def test_the_gate_bound_is_bonferroni_corrected_over_the_candidates():
    """Each candidate's gate is the lower end of its paired-bootstrap CV gain over the best single model at level
    1 - 2 (1 - gate_level) / (number of candidates): three candidates, a wider interval than one would get alone."""
    from tinybench_assets.core.routing.metrics import paired_bootstrap_ci
    from tinybench_assets.core.routing.select import _gate

    rng = np.random.default_rng(0)
    nc = {
        f: (rng.random(400) < p).astype(float) for f, p in (("best_single", 0.6), ("a", 0.66), ("b", 0.6), ("c", 0.5))
    }
    gate = _gate(dict.fromkeys(nc), nc, n_boot=500, seed=0, gate_level=0.95)
    assert np.isnan(gate["best_single"])
    for f in "abc":
        want = paired_bootstrap_ci(nc[f], nc["best_single"], n_boot=500, seed=0, level=1 - 0.1 / 3)[0]
        alone = paired_bootstrap_ci(nc[f], nc["best_single"], n_boot=500, seed=0, level=0.9)[0]
        assert gate[f] == pytest.approx(want) and gate[f] < alone


def test_the_ensembles_margin_for_a_fold_is_chosen_without_it():
    """_ensemble's nested correctness: fold f's margin is the one with the best accuracy on the other folds. Margin 0
    is right on fold 0 only, margin 0.1 everywhere else: every fold gets 0.1, so fold 0 scores 0."""
    from tinybench_assets.core.routing.select import _ensemble

    fold = np.arange(20) % 4
    table = {0.0: (fold == 0).astype(float), 0.1: (fold != 0).astype(float)}
    P = np.full((20, 2), 0.5)
    cand = {"m": [({}, "k", table[0.1])]}
    rows, (config, acc), _, out = _ensemble(
        ["m"], cand, {"k": P}, {"m": P}, lambda P_, mg: table[mg], [0.0, 0.1], fold, 4
    )
    np.testing.assert_array_equal(out, table[0.1])
    assert acc == 0.75 and config["margin"] == 0.1 and [r["cv_acc"] for r in rows] == [0.25, 0.75]
