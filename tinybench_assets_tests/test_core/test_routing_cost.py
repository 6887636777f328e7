"""Cost-quality routing: the zero router's hull, AIQ, the serving objectives (choices on training questions only)."""

import numpy as np
import pytest

from tinybench_assets.core.routing.cost import (
    OperatingPoint,
    Policy,
    aiq,
    choose_point,
    cost_quality_report,
    expected_cost,
    hull_value,
    lambda_grid,
    nondecreasing_hull,
    pick_point,
    policy_figures,
)


def test_nondecreasing_hull_and_aiq_by_hand():
    # a cheap weak model, a mid one below the chord (not a vertex), a dear strong one, a dearer worse one
    cost, acc = [1.0, 2.0, 3.0, 4.0], [0.4, 0.5, 0.8, 0.7]
    hc, ha = nondecreasing_hull(cost, acc)
    assert hc.tolist() == [1.0, 3.0] and ha.tolist() == [0.4, 0.8]  # (2, 0.5) under the chord; (4, 0.7) past the top
    assert hull_value(hc, ha, [0.5, 2.0, 3.5]).tolist() == pytest.approx([0.0, 0.6, 0.8])
    # area over [1, 4]: trapezoid 1..3 (mean 0.6 x 2) + flat 3..4 (0.8 x 1) = 2.0, over 3
    assert aiq(cost, acc, 1.0, 4.0, n_grid=3001) == pytest.approx(2.0 / 3.0, abs=1e-4)
    assert np.isnan(aiq(cost, acc, 2.0, 2.0))


def _world(n=400, seed=0):
    """Two models: a cheap one right on 'easy' questions, a dear one right on most; P knows which is which."""
    g = np.random.default_rng(seed)
    easy = g.random(n) < 0.6
    Y = np.stack([np.where(easy, g.random(n) < 0.9, g.random(n) < 0.2), g.random(n) < 0.85], axis=1).astype(float)
    P = np.stack([np.where(easy, 0.9, 0.2), np.full(n, 0.85)], axis=1)
    C = np.tile([0.001, 0.02], (n, 1))
    return P, Y, C


def test_a_router_that_knows_the_questions_beats_the_zero_router_and_serves_cheaply():
    P, Y, C = _world()
    prior = Y.mean(axis=0)
    point = choose_point(P, Y, C, prior, "quality_at_min_cost", tolerance=0.02)
    assert (
        point.policy.kind != "single" and point.accuracy >= Y[:, 1].mean() - 0.02 and point.cost < 0.5 * C[:, 1].mean()
    )
    P2, Y2, C2 = _world(seed=1)  # new questions
    picks = point.policy.picks(P2, expected_cost(C), prior)
    rep = cost_quality_report(P2, Y2, C2, prior, picks, model_cost=expected_cost(C), n_boot=200, seed=0)
    assert rep["aiq_router"] > rep["aiq_zero"] and rep["aiq_delta_ci"][0] > 0
    assert rep["cost_ratio"] < 0.5 and rep["served_acc"] >= rep["best_single_acc"] - 0.05
    # a router whose P says nothing (constant) is no better than the zero router
    flat = np.tile(prior, (len(P2), 1))
    rep0 = cost_quality_report(flat, Y2, C2, prior, point.policy.picks(flat, expected_cost(C), prior), n_boot=200)
    assert rep0["aiq_delta"] <= 1e-9


def test_objectives_choose_on_training_figures_only():
    P, Y, C = _world()
    prior = Y.mean(axis=0)
    cheap = choose_point(P, Y, C, prior, "max_cost", max_cost=0.0011)
    assert cheap.cost <= 0.0011
    strict = choose_point(P, Y, C, prior, "min_accuracy", min_accuracy=0.99)  # unreachable: the most accurate
    assert "none" in strict.rule and not strict.met and cheap.met
    assert choose_point(P, Y, C, prior, "accuracy").policy == Policy("lambda", 0.0)
    with pytest.raises(ValueError, match="unknown objective"):
        choose_point(P, Y, C, prior, "cheapest")
    assert len(lambda_grid(C[0])) == 121 and lambda_grid(C[0])[0] == 0.0


def test_quality_at_min_cost_reads_its_tolerance():
    """The cheapest point within ``tolerance`` of the best single model's accuracy: half a point below it and 2.5x
    cheaper is served at a tolerance of 1 point, not at 0.1."""
    pts = [OperatingPoint(Policy("single"), 0.70, 0.005, ""), OperatingPoint(Policy("lambda", 0.5), 0.695, 0.002, "")]
    assert pick_point(pts, "quality_at_min_cost", tolerance=0.01).policy == Policy("lambda", 0.5)
    assert pick_point(pts, "quality_at_min_cost", tolerance=0.001).policy == Policy("single")


def test_the_assets_cost_choice_never_reads_test_predictions():
    """router_accuracy's cost choice gets the test P of every fitted family (for their names only): replacing those
    predictions with noise must not move the served (family, lambda)."""
    from types import SimpleNamespace

    from tinybench_assets.core.routing.select import select_router
    from tinybench_assets.defs.router_cost_report import cost_choice

    P, Y, C = _world(n=300)
    g = np.random.default_rng(3)
    E = (P + 0.05 * g.normal(size=P.shape)).astype(np.float32)
    sel = select_router(
        E,
        Y,
        families=["best_single", "knn_vote"],
        n_folds=3,
        n_boot=50,
        margins=[0.0],
        grid={"knn_vote": {"k": [5, 10], "weighting": ["uniform"]}},
    )
    cfg = SimpleNamespace(tolerance=0.02, max_cost=None, min_accuracy=None)
    prior = Y.mean(axis=0)
    zeros = cost_choice(cfg, "quality_at_min_cost", sel, {f: np.zeros((7, 2)) for f in sel.oof}, Y, C, prior)
    noise = cost_choice(cfg, "quality_at_min_cost", sel, {f: g.random((7, 2)) for f in sel.oof}, Y, C, prior)
    assert zeros == noise and zeros[1].policy.kind != "single"
    from tinybench_assets.defs.router_cost_report import curve_family

    fam, gains = curve_family(sel, {f: g.random((7, 2)) for f in sel.oof}, Y, C, prior)
    assert fam == "knn_vote" and gains["knn_vote"] > 0.02 and abs(gains["best_single"]) < 1e-9  # P knows the questions


def test_cascade_serves_the_cheapest_confident_model_and_escalates():
    # model 0 cheap, model 1 dear and the best; the cheap one is confident on the first two questions only
    P = np.array([[0.9, 0.8], [0.7, 0.9], [0.2, 0.9], [0.1, 0.6]])
    C = np.tile([1.0, 10.0], (4, 1))
    Y = np.array([[1, 1], [1, 1], [0, 1], [0, 0]], dtype=float)
    prior = np.array([0.5, 0.75])
    mc = expected_cost(C)
    assert Policy("cascade", 0.65).picks(P, mc, prior).tolist() == [0, 0, 1, 1]
    assert Policy("cascade", 0.0).picks(P, mc, prior).tolist() == [0, 0, 0, 0]  # everyone is confident enough
    assert Policy("cascade", 0.95).picks(P, mc, prior).tolist() == [1, 1, 1, 1]  # nobody is: the best single model
    acc, cost = policy_figures([Policy("cascade", t) for t in (0.0, 0.65, 0.95)], P, Y, C, prior)
    assert acc.tolist() == [0.5, 0.75, 0.75] and cost.tolist() == [1.0, 5.5, 10.0]
    with pytest.raises(ValueError, match="unknown routing policy"):
        Policy("greedy", 1.0)
    with pytest.raises(ValueError, match="needs a value"):
        Policy("cascade")


def test_routing_prices_models_at_their_expected_cost_not_the_realized_one():
    """A model's cost on a question is known only after it answers: routing uses each model's mean training cost, the
    realized per-question costs only account for the picks. Shuffling the realized costs within each model moves no
    pick, and the realized cost of a cheap answer never lures a question to a dear model."""
    P, Y, C = _world(n=200)
    g = np.random.default_rng(0)
    C = C * g.uniform(0.2, 1.8, size=C.shape)  # per-question costs vary around each model's mean
    prior = Y.mean(axis=0)
    pols = [Policy("lambda", v) for v in lambda_grid(expected_cost(C))] + [Policy("cascade", 0.5)]
    shuffled = np.column_stack([g.permutation(C[:, m]) for m in range(C.shape[1])])
    for p in pols:
        assert (p.picks(P, expected_cost(C), prior) == p.picks(P, expected_cost(shuffled), prior)).all()
    acc, cost = policy_figures(pols, P, Y, C, prior)
    acc2, cost2 = policy_figures(pols, P, Y, shuffled, prior)
    assert (acc == acc2).all() and not np.allclose(cost, cost2)  # same picks, accounted at what they really cost


def test_a_cascade_is_served_when_training_questions_say_it_is_cheapest():
    """Model 0 is cheap and right exactly where P says it is confident; models 1 and 2 are dear, 1 the best. At the
    tolerance, the cascade (cheap model when confident, else the best) is cheaper than any lambda point, which
    trades model 0's confidence against model 2's lower price."""
    from types import SimpleNamespace

    from tinybench_assets.defs.router_cost_report import cost_choice

    n = 400
    g = np.random.default_rng(1)
    sure = g.random(n) < 0.5
    Y = np.column_stack([sure, g.random(n) < 0.9, g.random(n) < 0.85]).astype(float)
    P = np.column_stack([np.where(sure, 0.96, 0.3), np.full(n, 0.9), np.full(n, 0.85)])
    C = np.tile([0.001, 0.02, 0.0195], (n, 1))
    prior = Y.mean(axis=0)
    sel = SimpleNamespace(oof={"knn_vote": P}, served="best_single")
    cfg = SimpleNamespace(tolerance=0.01, max_cost=None, min_accuracy=None)
    fam, point = cost_choice(cfg, "quality_at_min_cost", sel, {"knn_vote": P}, Y, C, prior)
    assert fam == "knn_vote" and point.policy.kind == "cascade" and point.met
    assert point.cost < 0.6 * C[:, 1].mean() and point.accuracy >= Y[:, 1].mean() - 0.01
