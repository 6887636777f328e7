"""Routing threshold, served router, out-of-distribution guard and cost figures on tiny synthetic data: the properties
their docstrings state that the other routing tests leave open (a mutation review: each test fails on a mutant that
moved a rank, a budget fallback, a guard's quantile, an objective's rule or an interval's level)."""

import numpy as np
import pytest

from tinybench_assets.core.routing.cost import (
    OperatingPoint,
    Policy,
    aiq,
    cost_quality_report,
    expected_cost,
    lambda_grid,
    nondecreasing_hull,
    pick_point,
    policy_figures,
)
from tinybench_assets.core.routing.guard import GuardedRouter
from tinybench_assets.core.routing.routers import BestSingleRouter
from tinybench_assets.core.routing.served import RouterFileError, ServedRouter
from tinybench_assets.core.routing.surface import SurfaceFeatures
from tinybench_assets.core.routing.threshold import (
    calibrate_cost,
    calibrate_share,
    gains,
    share_threshold,
    threshold_picks,
)

PRIOR = np.array([0.5, 0.6, 0.8])  # model 2 is the strongest


class FixedRouter:
    """A router whose P(correct) is the same row for every question."""

    def __init__(self, row):
        self.row = np.asarray(row, dtype=float)

    def predict_proba(self, X):
        return np.tile(self.row, (len(X), 1))


# ---------------------------------------------------------------- threshold.py


def test_a_threshold_calibrated_on_one_half_sends_the_asked_share_of_the_other():
    """On the questions it is calibrated on (distinct gains) the threshold sends exactly the asked share to the
    strongest model, none at 0 and all at 1; on new questions like them, about that share."""
    P = np.random.default_rng(0).random((4000, 3))
    mine, new = P[:2000], P[2000:]
    for share in (0.0, 0.25, 1.0):
        cal = calibrate_share(mine, PRIOR, share)
        assert cal.strong_share == share and cal.n_questions == 2000
        assert abs((threshold_picks(cal.threshold, new, PRIOR) == 2).mean() - share) < 0.03


def test_a_tie_straddling_the_asked_rank_goes_to_its_nearer_side():
    """Four questions tie at gain 0.5 across the asked rank: the threshold sends the count nearer the asked one (2 of
    8 for 3, 6 of 8 for 5), not the farther."""
    g = np.array([0.9, 0.5, 0.1, 0.5, 0.8, 0.5, 0.2, 0.5])
    assert (g >= share_threshold(g, 3 / 8)).sum() == 2
    assert (g >= share_threshold(g, 5 / 8)).sum() == 6


def test_an_out_of_distribution_question_gains_enough_for_any_threshold():
    """A flagged question's gain reaches every threshold, however far its P leans to the other models."""
    P = np.array([[0.9, 0.1, 0.0], [0.2, 0.3, 0.4]])
    g = gains(P, PRIOR, ood=[True, False])
    assert all(g[0] >= t for t in (-1.0, 0.0, 1.0, 1e300)) and g[1] == pytest.approx(0.1)


def test_cost_calibration_meets_a_budget_of_the_all_weak_cost_and_falls_back_to_the_cheapest():
    """Prices 1 (weak) and 10 (strongest): a budget of exactly the all-weak cost is met with no strong call; a budget
    below it is not met and serves the cheapest routing (all weak); 3.7 affords 3 of 10 strong calls."""
    P = np.column_stack([np.full(10, 0.5), np.linspace(0.05, 0.95, 10)])
    prior, price = np.array([0.5, 0.8]), np.array([1.0, 10.0])
    at = calibrate_cost(P, prior, price, max_cost=1.0)
    assert at.met and at.strong_share == 0.0 and at.mean_cost == 1.0
    under = calibrate_cost(P, prior, price, max_cost=0.5)
    assert not under.met and under.strong_share == 0.0 and under.mean_cost == 1.0
    assert calibrate_cost(P, prior, price, max_cost=3.7).strong_share == pytest.approx(0.3)


# ---------------------------------------------------------------- served.py


def test_served_router_refuses_a_router_whose_p_does_not_match_its_models():
    """A router giving P for three models under a description of two is an error, not a route."""
    meta = {"models": ["a", "b"], "prior": [0.4, 0.6], "encoder": "x"}
    with pytest.raises(RouterFileError, match="shape"):
        ServedRouter(FixedRouter([0.2, 0.9, 0.1]), meta).route(np.zeros((2, 4)))
    assert ServedRouter(FixedRouter([0.9, 0.2]), meta).route(np.zeros((2, 4)))[1].tolist() == [0, 0]


def test_a_router_file_without_a_partition_is_served_for_any_partition(tmp_path):
    """Only a file that names another partition is refused: one that names none is read."""
    E, Y = np.eye(4, dtype=np.float32), np.array([[1, 0], [1, 1], [0, 1], [1, 1]], dtype=float)
    ServedRouter(BestSingleRouter().fit(E, Y), {"models": ["a", "b"], "prior": [0.75, 0.75], "encoder": "x"}).save(
        tmp_path / "r.npz"
    )
    assert ServedRouter.load(tmp_path / "r.npz", partition="routellm.mmlu").models == ["a", "b"]


def test_served_inputs_carry_the_surface_features_the_router_was_trained_with():
    """A router trained with surface features gets them beside the embeddings; one trained without gets the
    embeddings alone."""
    E, texts = np.ones((2, 3), dtype=np.float32), ["Question: why?\nAnswer:", "A. yes\nB. no"]
    surface = SurfaceFeatures(32)
    meta = {"models": ["a", "b"], "prior": [0.4, 0.6], "encoder": "x"}
    X = ServedRouter(None, {**meta, "surface": surface.params()}).inputs(E, texts)
    assert X.shape == (2, 35) and np.array_equal(X, surface.join(E, texts))
    assert ServedRouter(None, meta).inputs(E, texts) is E


# ---------------------------------------------------------------- guard.py


def test_guard_flags_about_its_quantile_of_new_questions_like_the_training_ones():
    """New questions drawn like the training questions are flagged at about the guard's quantile (the default:
    rarely), the leave-one-out similarities giving the threshold."""
    g = np.random.default_rng(0)
    E, new = g.normal(size=(400, 8)), g.normal(size=(1000, 8))
    Y = (g.random((400, 2)) < 0.5).astype(float)
    base = BestSingleRouter().fit(E, Y)
    rate = GuardedRouter(base, quantile=0.1).fit(E, Y).novelty(new)[1].mean()
    assert 0.04 < rate < 0.2
    default = GuardedRouter(base).fit(E, Y)
    assert default.novelty(new)[1].mean() < 0.05


# ---------------------------------------------------------------- cost.py


def test_cascade_serves_a_model_whose_p_equals_the_bar():
    """The cascade sends a question to the first cheap model whose P is at least the bar, equality included."""
    P = np.array([[0.5, 0.9], [0.49, 0.9]])
    assert Policy("cascade", 0.5).picks(P, np.array([1.0, 10.0]), np.array([0.5, 0.8])).tolist() == [0, 1]


def test_hull_keeps_the_more_accurate_of_two_points_at_one_cost():
    """Two operating points at the same cost: the hull (and AIQ) reads the more accurate one."""
    hc, ha = nondecreasing_hull([1.0, 1.0, 2.0], [0.3, 0.6, 0.8])
    assert hc.tolist() == [1.0, 2.0] and ha.tolist() == [0.6, 0.8]
    assert aiq([1.0, 1.0, 2.0], [0.3, 0.6, 0.8], 1.0, 2.0, n_grid=1001) == pytest.approx(0.7, abs=1e-6)


def test_policy_figures_count_missing_answers_wrong_and_route_at_the_given_costs():
    """A missing answer counts as wrong; a lambda policy is routed at the expected costs given (the training means),
    not at the accounted questions' own costs; a model's expected cost skips questions without one."""
    P, Y = np.array([[0.9, 0.8], [0.9, 0.8]]), np.array([[np.nan, 1.0], [1.0, 1.0]])
    C = np.array([[1.0, 1.0], [1.0, 1.0]])
    acc, cost = policy_figures([Policy("lambda", 0.0)], P, Y, C, np.array([0.5, 0.6]))
    assert acc.tolist() == [0.5] and cost.tolist() == [1.0]
    dear_first = np.array([10.0, 1.0])  # at training costs model 0 is dear: lambda 1 routes to model 1
    acc, _ = policy_figures([Policy("lambda", 1.0)], P, Y, C, np.array([0.5, 0.6]), model_cost=dear_first)
    assert acc.tolist() == [1.0]
    assert expected_cost(np.array([[1.0, np.nan], [3.0, 4.0]])).tolist() == [2.0, 4.0]


def test_lambda_grid_runs_from_cost_barely_matters_to_the_cheapest_always_wins():
    """Costs in the thousands: the smallest positive lambda routes as lambda 0 (by P), the largest sends every
    question to the cheapest model."""
    P = np.array([[0.9, 0.1], [0.1, 0.9], [0.5, 0.55]])
    cost, prior = np.array([100.0, 2000.0]), np.array([0.5, 0.5])
    grid = lambda_grid(cost)
    assert Policy("lambda", grid[1]).picks(P, cost, prior).tolist() == [0, 1, 1]
    assert Policy("lambda", grid[-1]).picks(P, cost, prior).tolist() == [0, 0, 0]


def test_objectives_pick_the_cheapest_above_a_floor_and_the_most_accurate_under_a_cap():
    """min_accuracy: the cheapest point reaching it, else the most accurate; max_cost: the most accurate point within
    it, else the cheapest."""
    pts = [
        OperatingPoint(Policy("single"), 0.80, 5.0, ""),
        OperatingPoint(Policy("lambda", 0.1), 0.78, 2.0, ""),
        OperatingPoint(Policy("lambda", 1.0), 0.70, 1.0, ""),
        OperatingPoint(Policy("lambda", 9.0), 0.60, 0.5, ""),
    ]
    assert pick_point(pts, "min_accuracy", min_accuracy=0.75).cost == 2.0
    unmet = pick_point(pts, "min_accuracy", min_accuracy=0.9)
    assert not unmet.met and unmet.accuracy == 0.80
    assert pick_point(pts, "max_cost", max_cost=2.5).accuracy == 0.78
    broke = pick_point(pts, "max_cost", max_cost=0.1)
    assert not broke.met and broke.cost == 0.5


def test_cost_report_routes_at_training_costs_and_its_interval_has_the_asked_level():
    """The test questions are routed at the training mean costs passed in, not their own; the served accuracy's
    bootstrap interval spans about +-1.645 standard errors at level 0.90."""
    n = 400
    g = np.random.default_rng(0)
    Y = np.column_stack([g.random(n) < 0.5, np.ones(n)]).astype(float)
    P = np.tile([0.6, 0.9], (n, 1))
    C = np.tile([1.0, 1.2], (n, 1))  # at test costs lambda 1 keeps model 1 (0.9 - 1.2 > 0.6 - 1.0)
    train_cost = np.array([1.0, 2.0])  # at training costs it goes to model 0 (0.9 - 2.0 < 0.6 - 1.0)
    rep = cost_quality_report(P, Y, C, np.array([0.5, 1.0]), np.zeros(n, int), train_cost, [1.0], n_boot=1000)
    assert rep["curve_acc"].tolist() == [Y[:, 0].mean()]
    lo, hi = rep["served_acc_ci"]
    se = np.sqrt(Y[:, 0].mean() * (1 - Y[:, 0].mean()) / n)
    assert lo < rep["served_acc"] < hi and 2 * 1.45 * se < hi - lo < 2 * 1.85 * se
