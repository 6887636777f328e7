"""Cost-quality routing: the zero router's hull, AIQ, the serving objectives (choices on training questions only)."""
import numpy as np
import pytest

from tinybench_assets.core.routing.cost import (
    aiq, choose_point, cost_quality_report, hull_value, lambda_grid, nondecreasing_hull, serve_picks,
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
    assert point.lam is not None and point.accuracy >= Y[:, 1].mean() - 0.02 and point.cost < 0.5 * C[:, 1].mean()
    P2, Y2, C2 = _world(seed=1)  # new questions
    picks = serve_picks(point, P2, C2, prior)
    rep = cost_quality_report(P2, Y2, C2, prior, picks, n_boot=200, seed=0)
    assert rep["aiq_router"] > rep["aiq_zero"] and rep["aiq_delta_ci"][0] > 0
    assert rep["cost_ratio"] < 0.5 and rep["served_acc"] >= rep["best_single_acc"] - 0.05
    # a router whose P says nothing (constant) is no better than the zero router
    flat = np.tile(prior, (len(P2), 1))
    rep0 = cost_quality_report(flat, Y2, C2, prior, serve_picks(point, flat, C2, prior), n_boot=200)
    assert rep0["aiq_delta"] <= 1e-9


def test_objectives_choose_on_training_figures_only():
    P, Y, C = _world()
    prior = Y.mean(axis=0)
    cheap = choose_point(P, Y, C, prior, "max_cost", max_cost=0.0011)
    assert cheap.cost <= 0.0011
    strict = choose_point(P, Y, C, prior, "min_accuracy", min_accuracy=0.99)  # unreachable: the most accurate
    assert "none" in strict.rule and not strict.met and cheap.met
    assert choose_point(P, Y, C, prior, "accuracy").lam == 0.0
    with pytest.raises(ValueError, match="unknown objective"):
        choose_point(P, Y, C, prior, "cheapest")
    assert len(lambda_grid(C)) == 121 and lambda_grid(C)[0] == 0.0


def test_the_assets_cost_choice_never_reads_test_predictions():
    """router_accuracy's cost choice gets the test P of every fitted family (for their names only): replacing those
    predictions with noise must not move the served (family, lambda)."""
    from types import SimpleNamespace

    from tinybench_assets.core.routing.select import select_router
    from tinybench_assets.defs.assets.router_eval import cost_choice

    P, Y, C = _world(n=300)
    g = np.random.default_rng(3)
    E = (P + 0.05 * g.normal(size=P.shape)).astype(np.float32)
    sel = select_router(E, Y, families=["best_single", "knn_vote"], n_folds=3, n_boot=50, margins=[0.0],
                        grid={"knn_vote": {"k": [5, 10], "weighting": ["uniform"]}})
    cfg = SimpleNamespace(tolerance=0.02, max_cost=None, min_accuracy=None)
    prior = Y.mean(axis=0)
    zeros = cost_choice(cfg, "quality_at_min_cost", sel, {f: np.zeros((7, 2)) for f in sel.oof}, Y, C, prior)
    noise = cost_choice(cfg, "quality_at_min_cost", sel, {f: g.random((7, 2)) for f in sel.oof}, Y, C, prior)
    assert zeros == noise and zeros[1].lam is not None


def test_cascade_serves_the_cheapest_confident_model_and_escalates():
    from tinybench_assets.core.routing.cost import cascade_figures, cascade_picks

    # model 0 cheap, model 1 dear and the best; the cheap one is confident on the first two questions only
    P = np.array([[0.9, 0.8], [0.7, 0.9], [0.2, 0.9], [0.1, 0.6]])
    C = np.tile([1.0, 10.0], (4, 1))
    Y = np.array([[1, 1], [1, 1], [0, 1], [0, 0]], dtype=float)
    prior = np.array([0.5, 0.75])
    assert cascade_picks(P, C, prior, 0.65).tolist() == [0, 0, 1, 1]
    assert cascade_picks(P, C, prior, 0.0).tolist() == [0, 0, 0, 0]       # everyone is confident enough
    assert cascade_picks(P, C, prior, 0.95).tolist() == [1, 1, 1, 1]      # nobody is: the best single model
    taus, acc, cost = cascade_figures(P, Y, C, prior, [0.0, 0.65, 0.95])
    assert acc.tolist() == [0.5, 0.75, 0.75] and cost.tolist() == [1.0, 5.5, 10.0]
