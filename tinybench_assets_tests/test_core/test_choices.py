"""How the estimators and their settings are chosen, on small hand-made inputs: the small boards' choice
(core/estimation/small_choice.py, small_select.py, small_design.py), the answer bank's helpers (bank.py) and the big
predictor's selector (selection.py). Most of these read a fold's decision without that fold: each test here failed on
a mutant that let a choice read the rows it is scored on, or moved a threshold, a margin or a tie."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from tinybench_assets.core.estimation import small_design, small_select
from tinybench_assets.core.estimation.bank import _lowest_mae, bank_arrays, soft_answers
from tinybench_assets.core.estimation.selection import TIE, Selector, beyond_scores
from tinybench_assets.core.estimation.selection import choose as choose_clustering
from tinybench_assets.core.estimation.small_choice import (
    _nested_bank,
    _recommend,
    _t2_choice,
    bank_wins,
    choose,
    fold_gain,
)
from tinybench_assets.core.estimation.small_design import choose_designs, log_mae
from tinybench_assets.core.estimation.small_intervals import MIN_T2
from tinybench_assets.core.estimation.small_rules import BANK, FILL, Rule
from tinybench_assets.core.estimation.small_select import _row_variance, choose_board


def test_fold_gain_reads_only_the_rows_given():
    """fold_gain scores only ``rows``: rows left out (another fold's held-out models, or models without a truth)
    neither move the gain nor turn it into NaN."""
    M = 40
    folds = np.arange(M) % 4
    truth = np.full(M, 0.5)
    a, b = truth + 0.04, truth + 0.02  # b 2 points better on every row
    rows = np.ones(M, bool)
    rows[::5] = False
    b2 = b.copy()
    b2[~rows] = truth[~rows] + 0.5  # rows outside ``rows`` are far worse for b
    gain, se = fold_gain(a, b2, truth, rows, folds)
    assert gain == np.float64(fold_gain(a, b, truth, rows, folds)[0]) and abs(gain - 0.02) < 1e-12
    t = truth.copy()
    t[~rows] = np.nan  # a model without a truth is outside rows
    gain_nan, se_nan = fold_gain(a, b, t, np.isfinite(t), folds)
    assert np.isfinite(gain_nan) and abs(gain_nan - 0.02) < 1e-12


def test_nested_bank_reads_each_folds_eps_without_it():
    """_nested_bank: fold f's bank_joint is served at the eps best on the other folds, so fold f's own truths cannot
    move it (eps 0.1 is exact on fold 0 only, eps 0.2 better everywhere else)."""
    M = 40
    folds = np.arange(M) % 4
    truth = np.full(M, 0.5)
    on0 = folds == 0
    # eps 0.1: MAE 0.01875 on every row (wins), 0.025 without fold 0 (loses to eps 0.2's 0.02)
    bank = {0.1: truth + np.where(on0, 0.0, 0.025), 0.2: truth + 0.02}
    rows = np.ones(M, bool)
    eps_star, nested = _nested_bank(bank, truth, rows, folds)
    assert eps_star == 0.1
    np.testing.assert_array_equal(nested[on0], bank[0.2][on0])  # fold 0's eps read without fold 0
    np.testing.assert_array_equal(nested[~on0], bank[0.1][~on0])


def test_the_boards_rule_is_kept_unless_the_scenarios_best_beats_it_steadily():
    """choose(prefer=...): the scenario's best rule replaces the board's rule only when its fold-by-fold gain
    exceeds one standard error (a lucky fold is not enough; a steady gain is)."""
    M = 40
    folds = np.arange(M) % 8
    truth = np.full(M, 0.5)
    rows = np.ones(M, bool)
    rules = [Rule("anchor", 1), Rule("pirt", 1), Rule("irt", 1)]
    for irt, served in ((truth + np.where(folds == 0, 0.0, 0.042), "pirt"), (truth + 0.035, "irt")):
        base = {1: {"anchor": truth + 0.08, "pirt": truth + 0.04, "irt": irt}}
        assert choose(rules, base, truth, rows, folds).estimator == "irt"  # the lowest MAE in both cases
        assert choose(rules, base, truth, rows, folds, prefer=("pirt", 1)).estimator == served


def test_fold_gain_is_the_mean_per_fold_gain_and_its_standard_error():
    """fold_gain = (mean of the per-fold MAE differences, their sample sd / sqrt(#folds)); bank_wins needs
    gain > BANK_SE * se: per-fold gains -1, 1, 2, 6 points give gain 2, sd 2.94, se 1.47, so the bank wins (it
    would not if the margin were one sd)."""
    M = 40
    folds = np.arange(M) % 4
    truth = np.full(M, 0.5)
    d = np.array([-0.01, 0.01, 0.02, 0.06])
    a = truth + 0.1
    b = a - d[folds]  # above the truth on every row
    rows = np.ones(M, bool)
    gain, se = fold_gain(a, b, truth, rows, folds)
    assert abs(gain - d.mean()) < 1e-12 and abs(se - d.std(ddof=1) / 2) < 1e-12
    assert bank_wins(a, b, truth, rows, folds)


def test_design_choice_takes_the_geometric_mean_over_budgets():
    """choose_designs compares log MAEs averaged over the budgets (a geometric mean): stratified 1 and 10 points
    (geometric 3.16, arithmetic 5.5) beats kmeans 4 and 4 points."""

    truth = np.linspace(0.2, 0.8, 12)
    folds = np.repeat([0, 1, 2], 4)

    def ch(errors):
        return {("s", n): SimpleNamespace(oof_served=truth + e) for n, e in errors.items()}

    by = {"stratified": ch({30: 0.01, 100: 0.10}), "kmeans": ch({30: 0.04, 100: 0.04})}
    picks = choose_designs(by, truth[:, None], folds, ["s"], [30, 100])
    assert picks[None] == {"s": "stratified"}
    assert abs(log_mae(by["stratified"], "s", [30, 100], truth, np.ones(12, bool)) - np.log(np.sqrt(0.001))) < 1e-9


def test_anchor_points_are_tried_on_a_pool_of_exactly_min_pool_items():
    """pick_designs tries anchor points on scenarios of MIN_POOL items or more (the boundary included), not below."""

    class Tried(Exception):
        pass

    def run(design):
        raise Tried(design)

    def predictor(n_items):
        lay = SimpleNamespace(scenarios=["s"], cols={"s": np.arange(n_items)})
        return SimpleNamespace(
            layout_=lay,
            folds_=SimpleNamespace(n=2, ids=np.array([0, 1])),
            design="stratified",
            pick_design=True,
            oof_=None,
            choices_={},
            board_rules_={},
            notes_=[],
        )

    with pytest.raises(Tried) as e:
        small_design.pick_designs(predictor(small_design.MIN_POOL), None, run, [])
    assert e.value.args[0] == {0: {"s": "kmeans"}, 1: {"s": "kmeans"}}
    keep = small_design.pick_designs(predictor(small_design.MIN_POOL - 1), None, run, [])
    assert keep == {None: {"s": "stratified"}, 0: {"s": "stratified"}, 1: {"s": "stratified"}}


def test_the_design_note_gives_anchor_points_error_over_stratifieds():
    """pick_designs' note for a scenario served on anchor points states their out-of-fold error as a ratio to the
    stratified design's: 1 point against 4 points -> 0.25x."""

    truth = np.linspace(0.2, 0.8, 8)
    first = {("s", 30): SimpleNamespace(oof_served=truth + 0.04)}
    alt = {("s", 30): SimpleNamespace(oof_served=truth + 0.01)}
    p = SimpleNamespace(
        layout_=SimpleNamespace(scenarios=["s"], cols={"s": np.arange(small_design.MIN_POOL)}),
        folds_=SimpleNamespace(n=2, ids=np.arange(8) % 2),
        design="stratified",
        pick_design=True,
        oof_=None,
        choices_=first,
        board_rules_={},
        notes_=[],
        truth_=SimpleNamespace(t1=truth[:, None]),
        _ns=lambda: [30],
        _choose=lambda Y: alt,
    )
    notes = []
    picks = small_design.pick_designs(p, None, lambda design: "refit", notes)
    assert picks[None] == {"s": "kmeans"} and p.choices_ is alt
    assert notes == [small_design.design_note("s", 0.25)] and "0.25x" in notes[0]


def test_soft_answers_of_a_column_nobody_answered_is_one_half():
    Y = np.array([[1.0, np.nan], [0.0, np.nan]])
    np.testing.assert_array_equal(soft_answers(Y), [[1.0, 0.5], [0.0, 0.5]])


def test_bank_keeps_a_model_that_ran_only_some_scenarios():
    """bank_arrays keeps every row with a value in some scenario (NaN in the others), drops rows with none."""
    Y = np.array([[1.0, 0.0, 1.0, 1.0, 0.0, 1.0], [1.0, 1.0, 0.0] + [np.nan] * 3, [np.nan] * 6])
    cols = {"a": np.arange(3), "b": np.arange(3, 6)}
    bank = bank_arrays(Y, cols, np.ones(6), {"a": np.array([0]), "b": np.array([0])})
    assert bank["answers"].shape == (2, 2) and bank["values"].shape == (2, 2)
    assert np.isfinite(bank["values"][1, 0]) and np.isnan(bank["values"][1, 1])


def _sel_table(maes):
    """A validation table of the selector: {clustering: {estimator: T1 MAE}} on scenarios x and y."""
    return pd.DataFrame(
        [
            {"clustering": c, "scenario": s, "estimator": e, "val_mae_t1": m, "val_mae_t2": np.nan}
            for c, per in maes.items()
            for s in ("x", "y")
            for e, m in per.items()
        ]
    )


def test_the_tie_is_two_percent_of_the_best_mae():
    """selection.TIE: clusterings within 2 % of the best MAE tie (the probe breaks it), 3 % apart do not."""
    assert TIE == 0.02
    worst = {"a": 1.6, "b": 0.9}
    for mae_b, want in ((0.020 * 1.02, "b"), (0.020 * 1.03, "a")):
        got = choose_clustering(_sel_table({"a": {"irt": 0.020}, "b": {"irt": mae_b}}), ["x", "y"], worst)
        assert got[("x", "tinybench")]["t1"][0] == want


def test_the_clustering_is_ranked_by_its_best_estimator_per_scenario():
    """tinybench: the clustering with the lowest mean over scenarios of its *best* estimator's T1 MAE, not of every
    estimator's mean ("b" has the best estimator, "a" the better average)."""
    out = choose_clustering(
        _sel_table({"a": {"irt": 0.03, "pirt": 0.03}, "b": {"irt": 0.02, "pirt": 0.06}}), ["x", "y"]
    )
    assert out[("x", "tinybench")]["t1"] == ("b", "irt")


def test_beyond_scores_are_read_at_the_budget_only():

    probe = SimpleNamespace(worst_={("a", 10): 0.5, ("a", 30): 0.7, ("b", 10): np.nan, ("b", 30): 0.2})
    assert beyond_scores({"probe": probe}, 10) == {"a": 0.5}
    assert beyond_scores({"probe": probe}, 30) == {"a": 0.7, "b": 0.2}
    assert beyond_scores({}, 10) == {}


def test_the_selector_never_serves_the_random_baseline():

    recs = [
        {"clustering": c, "n": 10, "scenario": "x", "estimator": e, "val_mae_t1": m, "val_mae_t2": np.nan, "n_val": 5}
        for c, e, m in (("random", "anchor", 0.01), ("kmeans", "anchor", 0.03), ("kmeans", "irt", 0.02))
    ]
    sel = Selector()
    sel.fit(
        SimpleNamespace(records=recs, layout=SimpleNamespace(scenarios=["x"])),
        {"anchors": SimpleNamespace(n_values=[10])},
    )
    assert sel.selection_[(10, "x", "tinybench")]["t1"] == ("kmeans", "irt")
    assert isinstance(sel.validation_, pd.DataFrame) and "random" in set(sel.validation_.clustering)


def _stub_board(M=40):
    """A stub SmallBoardPredictor state for small_select.choose_board: one scenario, D = 1, n = 10, 4 folds, where
    gpirt_val's lambda is 0.5 (exact) without fold 0 and 0.1 on every row, and irt is 0.5 points off everywhere."""
    rng = np.random.default_rng(0)
    folds = np.arange(M) % 4
    on0 = folds == 0
    truth = rng.uniform(0.3, 0.7, M)
    d, sign = 0.01, rng.choice([-1.0, 1.0], M)
    anchor = truth + sign * np.where(on0, 9 * d, d)
    pirt = truth - sign * d
    off = truth + sign * 0.5 * d
    oof = SimpleNamespace(
        base={("a", 10, 1): {"anchor": anchor, "irt": off.copy(), "pirt": pirt}},
        shrink={("a", 10): {"shrunk": off + sign * 0.1 * d, "shrunk_joint": off + sign * 0.2 * d}},
        bias={("a", 1): np.full(M, 0.02)},
        bank={("a", 10): None},
        fill={("a", 10): None},
    )
    return SimpleNamespace(
        layout_=SimpleNamespace(cols={"a": np.arange(6)}, groups=np.array([f"g{i}" for i in range(M)])),
        folds_=SimpleNamespace(ids=folds, n=4),
        truth_=SimpleNamespace(t1=truth[:, None], t2=np.full((M, 1), np.nan)),
        counts_={("a", 10): 10},
        oof_=oof,
        dims=(1,),
        alpha=0.1,
        interval_scale="binomial",
        gate=False,
        _ns=lambda: [10],
    ), (rng.random((M, 6)) < 0.5).astype(float)


def test_the_boards_rule_without_a_fold_reads_neither_its_truths_nor_its_lambdas():
    """choose_board's board rule for fold f (the ``prefer`` of fold f's choice) is read on the other folds' rows,
    lambdas included: without fold 0 gpirt_val (lambda 0.5) is exact; on every row its lambda is 0.1 and irt wins."""
    p, Y = _stub_board()
    _, board_rules, _ = choose_board(p, Y)
    assert board_rules[10][None] == ("irt", 1)
    assert board_rules[10][0] == ("gpirt_val", 1)


def test_row_variance_is_each_models_answer_variance():
    """small_select._row_variance: each row's variance across its answered items (the tutorial's v), NaN for a row
    without answers."""
    Ys = np.array([[1.0, 0.0, 1.0, 1.0], [1.0, np.nan, 0.0, np.nan], [np.nan] * 4])
    v = _row_variance(Ys)
    np.testing.assert_allclose(v[:2], [0.1875, 0.25])
    assert np.isnan(v[2])


def test_board_notes_at_their_thresholds():
    """choose_board's notes: a 90 % conformal interval needs ceil(1 / alpha) - 1 = 9 families (9: no note, 8: a
    note); T2 needs MIN_T2 models with a full score (MIN_T2: no note, one fewer: a note)."""
    for fams, noted in ((9, False), (8, True)):
        p, Y = _stub_board()
        p.layout_.groups = np.array([f"g{i % fams}" for i in range(len(Y))])
        notes = choose_board(p, Y)[2]
        assert any("families" in x for x in notes) == noted, (fams, notes)
    for k, noted in ((MIN_T2, False), (MIN_T2 - 1, True)):
        p, Y = _stub_board()
        t2 = np.full(len(Y), np.nan)
        t2[:k] = p.truth_.t1[:k, 0]
        p.truth_.t2 = t2[:, None]
        notes = choose_board(p, Y)[2]
        assert any("no T2" in x for x in notes) == noted, (k, notes)


def test_choose_board_gates_every_choice_on_the_boards_folds(monkeypatch):
    """With ``gate`` on, choose_board calls small_guard.gate on every (scenario, n) choice with that scenario's
    truths and the board's fold ids (each fold's decision read without it), and notes a gated choice."""
    p, Y = _stub_board()
    p.gate = True
    p.layout_.w, p.layout_.subscenarios = np.ones(6), {"a": np.array(["a/u"] * 6)}
    M = len(Y)
    monkeypatch.setattr(small_select, "expected_errors", lambda *a: {"a": {10: np.full(M, 0.01)}})
    seen = []

    def gate(ch, expected, truth, folds):
        seen.append((ch.scenario, ch.n, np.asarray(folds).copy(), truth.copy()))
        return True

    monkeypatch.setattr(small_select, "gate", gate)
    _, _, notes = small_select.choose_board(p, Y)
    assert len(seen) == 1 and seen[0][:2] == ("a", 10)
    np.testing.assert_array_equal(seen[0][2], p.folds_.ids)
    np.testing.assert_array_equal(seen[0][3], p.truth_.t1[:, 0])
    assert any("random items" in x for x in notes)


def test_lowest_mae_picks_each_scenarios_best_grid_value():
    """bank._lowest_mae (eps and fill's lam of the big predictor's AnswerBank): per scenario the grid value with the
    lowest validation MAE against its finite truths."""

    t = {"a": np.array([0.3, 0.5, np.nan]), "b": np.array([0.6, 0.4, 0.5])}
    best = {"a": 0.2, "b": 0.3}

    def estimate(tag, xs):
        assert tag == "args"
        return {s: t[s] + abs(xs[s] - best[s]) if s == "a" else t[s] + min(abs(xs[s] - best[s]), 0.1) for s in t}

    data = SimpleNamespace(layout=SimpleNamespace(scenarios=["a", "b"]), T1v=pd.DataFrame(t))
    got = _lowest_mae(estimate, ("args",), (0.1, 0.2, 0.3, 0.4), data)
    assert got == {"a": 0.2, "b": 0.3}


def test_a_clustering_exactly_tie_away_from_the_best_still_ties():
    got = choose_clustering(
        _sel_table({"a": {"irt": 0.020}, "b": {"irt": 0.020 * (1 + TIE)}}), ["x", "y"], {"a": 1.6, "b": 0.9}
    )
    assert got[("x", "tinybench")]["t1"][0] == "b"


def test_t2_choice_is_the_lowest_t2_mae_replaced_by_fill_only_on_a_steady_gain():
    """small_choice._t2_choice: the JSON-evaluable candidate with the lowest cross-fitted T2 MAE, replaced by fill
    only when fill beats it by more than one standard error of the fold-by-fold gain."""

    M = 40
    folds = np.arange(M) % 8
    t2 = np.full(M, 0.5)
    rows = np.ones(M, bool)
    rules = [Rule("anchor", 1), Rule("pirt", 1), Rule(FILL, 1, lam=0.1)]
    for fill, want in ((t2 + np.where(folds == 0, 0.0, 0.042), 1), (t2 + 0.035, 2)):
        ch = SimpleNamespace(rules=rules, oof_t2=[t2 + 0.08, t2 + 0.04, fill])
        assert _t2_choice(ch, [0, 1, 2], t2, rows, folds) == want
        assert _t2_choice(ch, [0, 1], t2, rows, folds) == 1  # without fill: the lowest MAE


def test_the_json_recommendation_is_the_best_json_evaluable_exported_rule():
    """small_choice._recommend: t1_json is the exported rule with the lowest CV MAE among those the JSON alone can
    evaluate (the bank, better still, needs the learned file); without T2 maps t2_json follows it."""

    rules = [Rule("anchor", 1), Rule("pirt", 1), Rule("irt", 1), Rule(BANK, 1, eps=0.1)]
    ch = SimpleNamespace(
        rules=rules, cv=[{"cv_mae_t1": m} for m in (0.04, 0.02, 0.03, 0.01)], calibration_t2={}, t1_json="", t2_json=""
    )
    _recommend(ch, rules, np.full(10, np.nan), np.arange(10) % 2)
    assert ch.t1_json == ch.t2_json == "pirt"
