"""A model stronger than the board (core/estimation/frontier.py): the frontier split holds out the strongest models,
the training split marks the strongest training models, the frontier probe refits without them, and the frontier
rule, fitted on training models only, serves models beyond the board with an extrapolating estimator, its own interval and a note, the same
from the predictor and from the artifact."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from tinybench_assets.core import tiny_benchmark as tb
from tinybench_assets.core.estimation.backtest import run_backtest, split_plan
from tinybench_assets.core.estimation.frontier import (
    EXTRAPOLATING,
    Frontier,
    FrontierRule,
    _twin_free,
    board_strength,
    frontier_split,
    twin_free_rows,
)
from tinybench_assets.core.estimation.frontier_probe import FrontierProbe
from tinybench_assets.core.estimation.inference import beyond_board
from tinybench_assets.core.estimation.predictor import AnchorPredictor
from tinybench_assets.core.estimation.training import TrainingSplit
from tinybench_assets_tests.test_core.test_backtest import FAST
from tinybench_assets_tests.test_core.test_choices import _sel_table
from tinybench_assets_tests.test_core.test_predictor_batch import openllm_slice

torch.set_num_threads(1)


def test_frontier_split_holds_out_the_strongest():
    strength = np.array([0.5, 0.9, np.nan, 0.7, 0.95, 0.1, 0.8, 0.92, 0.3, 0.6])
    exclude = np.zeros(10, dtype=bool)
    exclude[4] = True  # the strongest, in the lockbox: on neither side
    train, test = frontier_split(strength, 0.25, seed=0, exclude=exclude)
    assert set(test) == {1, 7} and 4 not in train and 2 not in train  # round(0.25 * 8) = 2 of the 8 usable
    assert strength[test].min() >= strength[train].max()
    train2, _ = frontier_split(strength, 0.25, seed=0, exclude=exclude, max_train_models=3)
    assert len(train2) == 3 and set(train2) <= set(train)
    plan = split_plan(10, ("frontier",), 3, strength=strength, frontier_fraction=0.25, exclude=exclude)
    assert len(plan) == 1 and plan[0][0] == "frontier"  # one split whatever n_splits: the test side is fixed
    with pytest.raises(ValueError, match="strength"):
        split_plan(10, ("frontier",))


def test_training_split_marks_the_strongest_training_models_and_the_probe_fits_without_them():
    rm, full, train, _ = openllm_slice(("arc", "truthfulqa"), 200)
    plain = TrainingSplit(frontier_share=0)
    data0 = plain.fit(rm, None, train, None)
    assert not data0.strong.any() and not data0.strong_fit.any()
    split = TrainingSplit(frontier_share=0.1)
    data = split.fit(rm, None, train, None)
    # the split itself does not depend on the share: the served fit keeps every training model it had
    assert list(split.fit_rows_) == list(plain.fit_rows_) and list(split.val_rows_) == list(plain.val_rows_)
    strength = board_strength(rm)[train]
    top = set(train[np.argsort(-strength, kind="stable")[: int(0.1 * len(train))]])
    assert set(split.strong_rows_) == top and split.n_strong_ == len(top)
    assert set(split.fit_rows_[data.strong_fit]) | set(split.val_rows_[data.strong]) == top
    assert data.strong_fit.any()
    probe = FrontierProbe.probe_data(data)
    assert (
        len(probe.Yf) == len(data.Yf) - data.strong_fit.sum() and len(probe.Yv) == len(data.Yv) + data.strong_fit.sum()
    )
    assert probe.strong.sum() == len(top) and len(probe.T1v) == len(probe.Yv) == len(probe.T2v)
    fitted_strong = data.Yf[data.strong_fit]
    assert np.array_equal(probe.Yv[len(data.Yv) :], fitted_strong, equal_nan=True)
    assert not any(np.array_equal(r, f, equal_nan=True) for r in probe.Yf for f in fitted_strong[:3])


@pytest.fixture(scope="module")
def frontier_fit():
    """A predictor fitted on the weaker 95 % of a real openllm slice (arc, truthfulqa), and the strongest 5 %."""
    rm, full, _, _ = openllm_slice(("arc", "truthfulqa"), 700)
    train, test = frontier_split(board_strength(rm), 0.05, seed=0)
    pred = AnchorPredictor(n_values=(10,), **{**FAST, "learned": False}).fit(rm, full, train)
    return rm, full, train, test, pred


@pytest.mark.timeout(600)
def test_the_frontier_rule_serves_models_beyond_the_board(frontier_fit):
    rm, _, train, test, pred = frontier_fit
    fr = pred.named_steps["frontier"]
    assert fr.rules_, "no frontier rule fitted"
    for (n, s, name), rule in fr.rules_.items():
        assert rule.t1[1] in EXTRAPOLATING and rule.n_models >= 20 and rule.position == "irt"
        assert rule.t1[0] == pred.named_steps["selector"].selection_[(n, s, name)]["t1"][0]
    probe, split = pred.named_steps["probe"], pred.named_steps["split"]
    assert probe.n_fit_ < split.n_fit_ and probe.n_strong_ == split.n_strong_ and probe.seconds_ > 0
    assert set(probe.worst_) == {(c, 10) for c in FAST.get("clusterings", ("correctness", "forward"))}
    assert (probe.table_.estimator.isin(EXTRAPOLATING)).all() and (probe.table_.n_models >= 20).all()
    est = pred.estimate(rm.scores[test], np.asarray(rm.models)[test])
    served = est[est.estimator == "tinybench"]
    beyond = served.source.str.startswith("beyond-board:")
    assert beyond.mean() > 0.5  # most of the strongest 5 % are placed beyond the board
    weak = pred.estimate(rm.scores[train[:50]], np.asarray(rm.models)[train[:50]])
    assert weak[weak.estimator == "tinybench"].source.str.startswith("beyond-board:").mean() < 0.2
    row = served[beyond].iloc[0]
    rule = fr.rules_[(10, row.scenario, "tinybench")]
    assert row.source == f"beyond-board:{rule.t1[0]}/{rule.t1[1]}"
    lo, up = rule.interval.predict(np.array([row.estimate]))
    pos = est[(est.model == row.model) & (est.scenario == row.scenario) & (est.estimator == rule.position)]
    pos = pos[pos.clustering == rule.t1[0]].estimate.to_numpy()
    plo, pup = rule.interval_position.predict(pos)
    # the chosen estimate's interval and the position's own, each symmetric (module docstring)
    assert (row.lower, row.upper) == pytest.approx((min(lo[0], plo[0]), max(up[0], pup[0])))
    assert row.lower <= row.estimate <= row.upper
    for iv in (rule.interval, rule.interval_position):
        assert iv.symmetric and iv.q_lo_ == -iv.q_hi_ > -1
    # the full score's interval: the line's, widened to the board's own (the served T2 estimator's) where both exist
    for r in served[beyond].itertuples():
        rl = fr.rules_[(10, r.scenario, "tinybench")]
        c2, e2 = pred.named_steps["selector"].selection_[(10, r.scenario, "tinybench")]["t2"]
        at = est[(est.model == r.model) & (est.scenario == r.scenario) & (est.clustering == c2)]
        board = at[at.estimator == e2].iloc[0]
        p = (
            at[at.estimator == rl.position]
            if c2 == rl.t1[0]
            else est[(est.model == r.model) & (est.clustering == rl.t1[0])]
        )
        p = p[(p.scenario == r.scenario) & (p.estimator == rl.position)].estimate.to_numpy()
        alone = rl.serve(np.array([r.estimate]), p)
        assert r.estimate_t2 == pytest.approx(alone["estimate_t2"][0], nan_ok=True)
        if rl.t2_line is None or not np.isfinite(board.lower_t2):
            continue
        assert r.lower_t2 == pytest.approx(min(alone["lower_t2"][0], board.lower_t2))
        assert r.upper_t2 == pytest.approx(max(alone["upper_t2"][0], board.upper_t2))
    # where the board's full-score interval reaches past the line's, the served one spans it (the estimate stays)
    rl = fr.rules_[(10, row.scenario, "tinybench")]
    cache = {
        (rl.t1[0], row.scenario, rl.position): {"estimate": pos},
        (rl.t1[0], row.scenario, rl.t1[1]): {"estimate": np.array([row.estimate])},
    }
    cols = {
        k: np.array([getattr(row, k)]) for k in ("estimate", "lower", "upper", "estimate_t2", "lower_t2", "upper_t2")
    }
    cols["lower_t2"], cols["upper_t2"] = np.array([0.0]), np.array([1.0])
    beyond_board(rl, cache, rl.t1[0], row.scenario, cols, np.array(["board"], dtype=object))
    if rl.t2_line is not None:
        assert (cols["lower_t2"][0], cols["upper_t2"][0], cols["estimate_t2"][0]) == (
            0.0,
            1.0,
            pytest.approx(row.estimate_t2),
        )
    back = FrontierRule.from_dict(rule.to_dict())
    assert back.interval_position.to_dict() == rule.interval_position.to_dict()


@pytest.mark.timeout(600)
def test_the_served_fit_does_not_depend_on_the_frontier_share(frontier_fit):
    """The probe fits beside the served fit: without a frontier share every estimator of the board's models is the
    same; the served rows differ only for models beyond the board, or where the probe broke a tie of clusterings."""
    rm, full, train, test, pred = frontier_fit
    plain = AnchorPredictor(n_values=(10,), **{**FAST, "learned": False, "frontier_share": 0}).fit(rm, full, train)
    assert not plain.named_steps["frontier"].rules_ and pred.named_steps["frontier"].rules_
    assert not plain.named_steps["probe"].worst_
    pd.testing.assert_frame_equal(plain.validation, pred.validation)
    rows = np.concatenate([test, train[:40]])
    key = ["model", "scenario", "clustering", "estimator", "n"]
    a = pred.estimate(rm.scores[rows], np.asarray(rm.models)[rows]).set_index(key).sort_index()
    b = plain.estimate(rm.scores[rows], np.asarray(rm.models)[rows]).set_index(key).sort_index()
    each = a.index.get_level_values("clustering") != "selected"
    pd.testing.assert_frame_equal(a[each], b[each])
    if plain.selection.equals(pred.selection):
        same = ~each & ~a.source.astype(str).str.startswith("beyond-board:")
        assert (~same & ~each).any() and same.any()
        pd.testing.assert_frame_equal(a[same], b[same])


def test_the_rule_is_chosen_on_every_model_beyond_the_board_and_fitted_on_the_twin_free_ones():
    """Twins (answers equal to a fit model's) are estimated almost exactly and lie on their originals' T2 line: the
    intervals and the line come from the twin-free models, the estimator's choice from all of them."""
    rng = np.random.default_rng(0)
    v = 300
    t1 = rng.uniform(0.6, 0.9, v)
    twin = np.arange(v) < 280  # 20 twin-free models: under a tenth
    err = np.where(twin, 0.002, 0.1) * rng.choice([-1.0, 1.0], v)
    est = {"anchor": t1 + 2 * err, "irt": t1 + err}
    t2 = np.where(twin, 0.1, 0.2) + 0.5 * est["irt"]
    rows, folds = np.ones(v, dtype=bool), np.arange(v) % 5
    fr = Frontier()
    both = fr._fit_rule(est, rows, t1, t2, folds, t1 + err, cal=rows & ~twin)
    plain = fr._fit_rule(est, rows, t1, t2, folds, t1 + err)
    assert both.t1[1] == plain.t1[1] == "irt" and both.n_models == plain.n_models == v
    assert (both.n_calibration, plain.n_calibration) == (20, v)
    both.position, both.threshold = "irt", 0.5  # as Frontier.fit sets them
    assert FrontierRule.from_dict(both.to_dict()).n_calibration == 20
    old = {k: x for k, x in both.to_dict().items() if k != "n_calibration"}  # an artifact written before it
    assert FrontierRule.from_dict(old).n_calibration == v
    from tinybench_assets.core.tiny_benchmark.evaluate import _twin_free_words

    assert "no twin" in _twin_free_words(both) and _twin_free_words(FrontierRule.from_dict(old)) == ""
    assert both.interval.q_hi_ == pytest.approx(0.1, abs=1e-9) and plain.interval.q_hi_ < 0.06  # its floor
    assert both.interval_position.q_hi_ == pytest.approx(0.1, abs=1e-9) and plain.interval_position.q_hi_ < 0.06
    assert both.t2_line == pytest.approx((0.2, 0.5), abs=0.02) and plain.t2_line[0] < 0.18
    few = rows & (np.arange(v) >= v - 10)  # under MIN_FRONTIER_MODELS twin-free models: all of them
    assert _twin_free(rows, few).all() and (_twin_free(rows, ~twin) == ~twin).all()


def test_twins_are_read_on_each_scenarios_own_items():
    """A validation model that copies a fit model on one scenario and answers the other its own way is a twin on the
    first only: read on the whole row it would agree on about three quarters of the items and count as twin-free."""
    from types import SimpleNamespace

    rng = np.random.default_rng(1)
    Yf = (rng.random((3, 200)) < 0.6).astype(float)
    own = (rng.random((2, 200)) < 0.6).astype(float)
    Yv = own.copy()
    Yv[0, :100] = Yf[1, :100]  # scenario "a": model 1's answers item for item
    probe = SimpleNamespace(Yf=Yf, Yv=Yv, layout=SimpleNamespace(cols={"a": np.arange(100), "b": np.arange(100, 200)}))
    assert list(twin_free_rows(probe, "a")) == [False, True]
    assert list(twin_free_rows(probe, "b")) == [True, True]


def test_the_fitted_rule_calibrates_on_the_probes_twin_free_models():
    """Frontier.fit reads the twins off the probe's answers and fits the intervals and the T2 line on the rest: 280
    of 300 models beyond the board copy a fit model (estimated almost exactly), 20 do not; the interval is theirs."""
    from types import SimpleNamespace

    from tinybench_assets.core.estimation.frontier_probe import POSITION

    rng = np.random.default_rng(3)
    v, twin = 300, np.arange(300) < 280
    Yf = (rng.random((40, 60)) < 0.6).astype(float)
    Yv = (rng.random((v, 60)) < 0.6).astype(float)
    Yv[twin] = Yf[np.arange(v)[twin] % 40]
    t1 = rng.uniform(0.6, 0.9, v)
    err = np.where(twin, 0.002, 0.1) * rng.choice([-1.0, 1.0], v)
    full = {("s", POSITION): t1 + err, ("s", "anchor"): t1 + 2 * err}
    probe = SimpleNamespace(
        Yf=Yf,
        Yv=Yv,
        val={("c", 10): (full, {})},
        strong=np.zeros(v, dtype=bool),
        T1v=pd.DataFrame({"s": t1}),
        T2v=pd.DataFrame({"s": 0.1 + 0.5 * (t1 + err)}),
        layout=SimpleNamespace(cols={"s": np.arange(60)}, scenarios=["s"]),
    )
    data = SimpleNamespace(probe=(probe, None), val={("c", 10): (full, {})}, strong=np.zeros(v, dtype=bool))
    done = {"selector": SimpleNamespace(selection_={(10, "s", "tinybench"): {"t1": ("c", "irt")}})}
    rules = {}
    for free in (True, False):
        fr = Frontier(share=1.0, twin_free=free)
        fr.fit(data, done)
        rules[free] = fr.rules_[(10, "s", "tinybench")]
    assert (rules[True].n_models, rules[False].n_models) == (v, v)
    assert (rules[True].n_calibration, rules[False].n_calibration) == (20, v)
    assert rules[True].interval.q_hi_ == pytest.approx(0.1, abs=1e-9) and rules[False].interval.q_hi_ < 0.06


def test_the_probe_table_names_the_extrapolating_estimator_with_the_lowest_error():
    """The probe's table (and its worst ratio, which breaks the clusterings' ties) reads, per scenario, the
    extrapolating estimator nearest the truth on the models beyond its board, not any other."""
    from types import SimpleNamespace

    from tinybench_assets.core.estimation.frontier_probe import MIN_FRONTIER_MODELS, POSITION

    v = 4 * MIN_FRONTIER_MODELS
    rng = np.random.default_rng(2)
    t1 = np.linspace(0.3, 0.9, v)
    est = {POSITION: t1 + 0.03 * rng.standard_normal(v), "anchor": t1 + 0.10, "pirt": t1 - 0.01}
    val = {
        ("kmeans", 10): ({("s", e): x for e, x in est.items()}, {}),
        ("random", 10): ({("s", "random"): t1 + 0.05}, {}),
    }
    probe = SimpleNamespace(
        val=val, strong=np.zeros(v, dtype=bool), T1v=pd.DataFrame({"s": t1}), layout=SimpleNamespace(scenarios=["s"])
    )
    fp = FrontierProbe(share=0.5)
    fp._score(probe)
    (row,) = fp.table_.itertuples()
    assert row.estimator == "pirt" and row.mae == pytest.approx(0.01)
    assert row.random_mae == pytest.approx(0.05) and fp.worst_ == {("kmeans", 10): pytest.approx(0.2)}


def test_the_probe_breaks_a_tie_of_clusterings_only():
    from tinybench_assets.core.estimation.selection import TIE, choose

    def table(mae_b):
        return _sel_table({"a": {"irt": 0.020}, "b": {"irt": mae_b}})

    worst = {"a": 1.6, "b": 0.9}  # "a" fails beyond the board, "b" holds
    tie = choose(table(0.020 * (1 + TIE / 2)), ["x", "y"], worst)
    assert tie[("x", "tinybench")]["t1"][0] == "b"
    apart = choose(table(0.020 * (1 + 2 * TIE)), ["x", "y"], worst)
    assert apart[("x", "tinybench")]["t1"][0] == "a"
    assert choose(table(0.020 * (1 + TIE / 2)), ["x", "y"])[("x", "tinybench")]["t1"][0] == "a"  # no probe


@pytest.mark.timeout(600)
def test_the_frontier_rule_is_chosen_on_training_models_only(frontier_fit):
    rm, full, train, test, pred = frontier_fit
    changed = rm.scores.copy()
    changed[test] = 1.0 - changed[test]  # the held-out models' answers never reach any choice
    other = type(rm)(changed, rm.models, rm.items, rm.scenarios, rm.subscenarios)
    pred2 = AnchorPredictor(n_values=(10,), **{**FAST, "learned": False}).fit(other, full, train)
    a, b = pred.named_steps["frontier"].rules_, pred2.named_steps["frontier"].rules_
    assert {k: r.to_dict() for k, r in a.items()} == {k: r.to_dict() for k, r in b.items()}


@pytest.mark.timeout(600)
def test_the_artifact_serves_the_frontier_rule_with_a_note(frontier_fit, tmp_path):
    rm, _, _, test, pred = frontier_fit
    tb.save_artifact(tb.export_tiny_benchmark(pred, leaderboard="openllm", n=10), None, tmp_path)
    art = tb.load_artifact(tmp_path)
    model = tb.load_model(art, learned=False)
    rules = pred.named_steps["frontier"].rules_
    assert {k: r.to_dict() for k, r in model.steps["frontier"].rules_.items()} == {
        k: r.to_dict() for k, r in rules.items() if k[2] == "tinybench"
    }
    ref = pred.estimate(rm.scores[test], np.asarray(rm.models)[test], n_values=[10])
    ref = ref[ref.estimator == "tinybench"]
    model_name = ref[ref.source.str.startswith("beyond-board:")].model.iloc[0]
    row = int(np.flatnonzero(np.asarray(rm.models) == model_name)[0])
    answers = {
        it: float(rm.scores[row, rm.items.index(it)])
        for s in art["scenario_order"]
        for it in art["scenarios"][s]["anchors"]["items"]
    }
    df = tb.estimate_from_artifact(art, answers)
    mine = ref[ref.model == model_name].set_index("scenario")
    notes = " ".join(df.attrs["notes"])
    assert "beyond the board" in notes and "tinybench adaptive" in notes and "no twin on the board" in notes
    assert "the full score's interval also spans" in notes
    for r in df.itertuples():
        if mine.loc[r.scenario].source.startswith("beyond-board:"):
            assert r.source == "json (beyond the board)" and r.scenario in notes
            for col in ("estimate", "lower", "upper", "estimate_t2", "lower_t2", "upper_t2"):
                assert getattr(r, col) == pytest.approx(mine.loc[r.scenario][col], abs=1e-9, nan_ok=True), col


def test_a_corrupt_frontier_rule_is_refused_with_its_path(frontier_fit, tmp_path):
    _, _, _, _, pred = frontier_fit
    art = tb.export_tiny_benchmark(pred, leaderboard="openllm", n=10)
    s = next(s for s in art["scenario_order"] if art["scenarios"][s]["recommended_learned"].get("frontier"))
    art["scenarios"][s]["recommended_learned"]["frontier"]["t1"]["estimator"] = "gbm"
    with pytest.raises(tb.ArtifactError, match=rf"scenarios\.{s}\.recommended_learned\.frontier\.t1\.estimator"):
        tb.load_model(art, learned=False)


@pytest.mark.timeout(600)
def test_the_backtest_runs_a_frontier_split():
    rm, full, _, _ = openllm_slice(("arc",), 300)
    plan = split_plan(len(rm.models), ("frontier",), strength=board_strength(rm), frontier_fraction=0.1)
    res = run_backtest(rm, full, splits=plan, predictor_params={"n_values": (10,), **FAST, "learned": False})
    assert set(res.estimates.split_kind) == {"frontier"}
    assert set(res.estimates.model) == set(np.asarray(rm.models)[plan[0][2]])


def test_the_rules_interval_comes_from_each_folds_pick_made_without_it():
    """anchor wins on every row through fold 0 alone; without fold 0, irt wins and misses fold 0 by 8 points: the
    rule's interval reads those misses (each fold's pick made without it), not the winner's own residuals."""
    from tinybench_assets.core.estimation.calibration import ConformalInterval

    rng = np.random.default_rng(3)
    v = 60
    t1, sign = rng.uniform(0.6, 0.9, v), rng.choice([-1.0, 1.0], v)
    rows, folds = np.ones(v, dtype=bool), np.arange(v) % 5
    on0 = folds == 0
    est = {"anchor": t1 + sign * np.where(on0, 0.0, 0.045), "irt": t1 + sign * np.where(on0, 0.08, 0.03)}
    fr = Frontier()
    rule = fr._fit_rule(est, rows, t1, t1, folds, t1)
    own = ConformalInterval(fr.alpha, fr.interval_scale, symmetric=True).fit(est["anchor"], t1)
    assert rule.t1[1] == "anchor" and own.q_hi_ == pytest.approx(0.045)
    assert rule.interval.q_hi_ == pytest.approx(0.08)


def test_the_rules_t2_interval_reads_each_folds_line_fitted_without_it():
    """Full scores on a line but fold 0's 10 points above it: each fold's T2 is predicted by the line fitted on the
    other folds, so the interval reaches fold 0's whole 10-point miss (the line on every row misses it by 8)."""
    rng = np.random.default_rng(4)
    v = 60
    x, folds = rng.uniform(0.5, 0.9, v), np.arange(v) % 5
    t2 = 0.1 + 0.8 * x + np.where(folds == 0, 0.1, 0.0)
    _, iv = Frontier()._t2_line(x, t2, np.ones(v, dtype=bool), folds)
    assert iv.q_hi_ == pytest.approx(0.1)


def test_the_full_score_interval_carries_the_t1_interval_through_the_line():
    """Beyond the board the line's input is as uncertain as the T1 estimate: the T2 interval spans the line at both
    ends of the T1 interval (with the line's own margins), not only the line's margins around its estimate; and a
    position exactly at the threshold is at or above it."""
    from tinybench_assets.core.estimation.calibration import ConformalInterval
    from tinybench_assets.core.estimation.frontier_probe import at_or_above

    iv2 = ConformalInterval(scale="none").fit(np.full(20, 0.5), 0.5 + np.linspace(-0.02, 0.02, 20))
    rule = FrontierRule("irt", 0.5, ("c", "irt"), iv2, (0.1, 0.8), iv2, 30)
    e2, lo2, up2 = rule.t2(np.array([0.7]), np.array([0.5]), np.array([0.9]))
    assert e2[0] == pytest.approx(0.66)
    assert lo2[0] == pytest.approx(0.1 + 0.8 * 0.5 - 0.02) and up2[0] == pytest.approx(0.1 + 0.8 * 0.9 + 0.02)
    assert at_or_above(np.array([0.7, 0.7 - 1e-12, 0.69]), 0.7).tolist() == [True, True, False]
