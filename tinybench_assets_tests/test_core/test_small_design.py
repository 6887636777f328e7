"""The anchors' design per scenario (core/estimation/small_design.py): nested anchor points (each budget's anchors a
subset of the next larger one's, weights that sum to one, the order listing them budget by budget), and the choice
of design on out-of-fold error, each fold's decision read without that fold."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from tinybench_assets.core.estimation.small_design import choose_designs, nested_kmeans


def test_nested_anchor_points():
    rng = np.random.default_rng(0)
    theta, b = rng.normal(size=(25, 1)), rng.normal(size=300)
    Ys = (rng.random((25, 300)) < 1 / (1 + np.exp(-(theta - b)))).astype(float)
    ws = rng.uniform(0.5, 1.5, 300)
    anchors, order = nested_kmeans(Ys, ws, (10, 30, 50, 30), n_init=2, seed=0)
    assert sorted(anchors) == [10, 30, 50]
    assert sorted(order.tolist()) == list(range(300))  # a permutation of the pool
    for small, large in ((10, 30), (30, 50)):
        assert set(anchors[small][0]) <= set(anchors[large][0])
    for k, (local, weights) in anchors.items():
        assert len(set(local.tolist())) == k and np.isclose(weights.sum(), 1.0) and (weights > 0).all()
        assert order[:k].tolist() == local.tolist()  # the first k of the order are the budget's anchors, as listed
    # each anchor's weight is the balance-weight mass it stands for: the larger budget's masses summed
    big, small = anchors[50], anchors[30]
    assert np.isclose(sum(small[1]), sum(big[1]))


def _choices(errors: dict, truth: np.ndarray) -> dict:
    return {("s", n): SimpleNamespace(oof_served=truth + e) for n, e in errors.items()}


def test_design_choice_per_fold_reads_only_the_other_folds():
    truth = np.linspace(0.2, 0.8, 12)
    folds = np.repeat([0, 1, 2], 4)
    strat = np.where(folds == 0, 0.01, 0.045)  # stratified: better on fold 0 only
    kmeans = np.full(12, 0.03)
    by = {"stratified": _choices({30: strat, 100: strat}, truth), "kmeans": _choices({30: kmeans, 100: kmeans}, truth)}
    picks = choose_designs(by, truth[:, None], folds, ["s"], [30, 100])
    assert picks[None] == {"s": "kmeans"}  # every row: 0.033 against 0.03
    assert picks[0] == {"s": "kmeans"}  # without fold 0 stratified is worse still (0.045)
    assert picks[1] == picks[2] == {"s": "stratified"}  # with fold 0 and without one other: 0.0275

    tie = choose_designs(
        {"stratified": _choices({30: kmeans}, truth), "kmeans": _choices({30: kmeans}, truth)},
        truth[:, None],
        folds,
        ["s"],
        [30],
    )
    assert tie[None] == {"s": "stratified"}  # a tie goes to the first design


def test_predictor_serves_anchor_points_where_they_win(monkeypatch, tmp_path):
    """A scenario the design choice gives to anchor points (forced here) is refitted and served on nested anchor
    points, noted, and the saved tiny benchmark estimates as predict does."""
    from tinybench_assets.core import tiny_benchmark as tb
    from tinybench_assets.core.estimation import small_design
    from tinybench_assets.core.estimation.small_board import SmallBoardPredictor

    from .test_small_board import FAST, world

    Y, w, cols, full, groups, items = world(n_models=16, n_families=4, items=(60, 60))
    real = small_design.choose_designs

    def s1_kmeans(by, truth, folds, scenarios, ns):
        assert set(by) == {"stratified", "kmeans"}  # both designs were fitted fold by fold
        return {k: {**v, "s1": "kmeans"} for k, v in real(by, truth, folds, scenarios, ns).items()}

    monkeypatch.setattr(small_design, "choose_designs", s1_kmeans)
    monkeypatch.setattr(small_design, "MIN_POOL", 50)  # anchor points are tried on pools of 50 items or more here
    p = SmallBoardPredictor(**{**FAST, "pick_design": True, "guard": False}).fit(Y, w, cols, full, groups, items=items)
    assert p.designs_[None]["s1"] == "kmeans" and p.guard_.designs["s1"] == "kmeans"
    assert any("anchor points" in note and "'s1'" in note for note in p.notes_)
    fit = p.served_.fits["s1"]
    assert set(fit.anchors[10][0]) <= set(fit.anchors[30][0]) and fit.order[:30].tolist() == fit.anchors[30][0].tolist()
    served = p.predict(Y, n=30)
    assert np.isfinite(served.estimate).all()
    tb.save_artifact(p.to_artifact("sim", 30), folder=tmp_path)
    art = tb.load_artifact(tmp_path)
    ans = {it: float(Y[2, items.index(it)]) for s in cols for it in art["scenarios"][s]["anchors"]["items"]}
    got = tb.estimate_from_artifact(art, ans)
    np.testing.assert_allclose(got.estimate, served[served.model == 2].estimate, rtol=0, atol=1e-12)


def test_anchor_points_tried_and_not_kept_leave_the_first_choice_and_its_notes(monkeypatch):
    """A board whose anchor points are fitted fold by fold and then lose serves what it served before the trial, and
    keeps that choice's notes (here: no T2 for lack of full scores)."""
    from tinybench_assets.core.estimation import small_design
    from tinybench_assets.core.estimation.small_board import SmallBoardPredictor

    from .test_small_board import FAST, world

    Y, w, cols, _, groups, items = world(n_models=16, n_families=4, items=(60, 60))
    real = small_design.choose_designs

    def stratified(by, truth, folds, scenarios, ns):
        assert set(by) == {"stratified", "kmeans"}  # anchor points were fitted fold by fold
        return {k: dict.fromkeys(v, "stratified") for k, v in real(by, truth, folds, scenarios, ns).items()}

    monkeypatch.setattr(small_design, "choose_designs", stratified)
    monkeypatch.setattr(small_design, "MIN_POOL", 50)
    tried = SmallBoardPredictor(**{**FAST, "pick_design": True, "guard": False}).fit(
        Y, w, cols, None, groups, items=items
    )
    plain = SmallBoardPredictor(**{**FAST, "guard": False}).fit(Y, w, cols, None, groups, items=items)
    assert sum("no T2" in note for note in tried.notes_) == len(cols)
    assert tried.notes_ == plain.notes_
    assert {k: c.t1 for k, c in tried.choices_.items()} == {k: c.t1 for k, c in plain.choices_.items()}
