"""The small boards' guard (core/estimation/small_guard.py): the expected error of stratified random items against
a simulation, fold decisions that read no held-out row, the backtest refitted with each fold's own decision, and the
predictor serving random anchors (still nested) where the guard fires."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tinybench_assets.core.estimation import small_board, small_guard
from tinybench_assets.core.estimation.small_board import SmallBoardPredictor
from tinybench_assets.core.estimation.small_folds import family_folds, out_of_fold
from tinybench_assets.core.estimation.small_guard import RANDOM, fold_designs, guard, log_excess, random_item_error
from tinybench_assets.core.estimation.strata import nested_order, prefix_allocation, prefix_anchors
from tinybench_assets_tests.test_core.test_small_board import FAST, world

torch.set_num_threads(1)


def test_random_item_error_matches_a_simulation():
    rng = np.random.default_rng(3)
    M, sizes = 6, (40, 120, 80)
    subs = np.concatenate([np.full(k, f"u{j}") for j, k in enumerate(sizes)])
    ws = np.ones(len(subs))
    p = rng.uniform(0.2, 0.9, size=(M, len(sizes)))
    Ys = (rng.random((M, len(subs))) < np.repeat(p, sizes, axis=1)).astype(float)
    truth = Ys.mean(1)
    k = 30
    alloc = prefix_allocation(subs, ws, k)
    assert sum(alloc.values()) == k and set(alloc) == {"u0", "u1", "u2"}
    errs = []
    for seed in range(3000):  # the random design's anchors: a random nested order's first k, stratified weights
        order = nested_order(np.random.default_rng(seed).random(len(subs)), subs, ws, seed=seed)
        local, wt = prefix_anchors(order, k, subs, ws)
        errs.append(np.abs(Ys[:, local] @ wt - truth))
    simulated = np.mean(errs, axis=0)
    expected = random_item_error(Ys, ws, subs, k)
    np.testing.assert_allclose(expected, simulated, rtol=0.12)
    near = random_item_error(Ys, ws, None, 220)  # 220 of 240 items: the finite-population factor is 0.08 here
    draws = [Ys[:, np.random.default_rng(s).permutation(len(subs))[:220]].mean(1) for s in range(2000)]
    np.testing.assert_allclose(near, np.mean(np.abs(np.array(draws) - truth), axis=0), rtol=0.12)
    assert np.isnan(random_item_error(np.full((1, len(subs)), np.nan), ws, subs, k)).all()
    one = random_item_error(Ys, ws, None, len(subs))  # every item asked: no error left
    np.testing.assert_allclose(one, 0.0, atol=1e-12)


def test_guard_fold_decisions_read_no_held_out_row():
    rng = np.random.default_rng(0)
    M = 20
    folds = np.arange(M) % 4
    truth = {"a": rng.uniform(0.3, 0.7, M), "b": rng.uniform(0.3, 0.7, M)}
    served = {s: {10: t + rng.normal(0, 0.05, M), 30: t + rng.normal(0, 0.03, M)} for s, t in truth.items()}
    expected = {
        "a": {10: np.full(M, 0.02), 30: np.full(M, 0.01)},  # "a": served loses to random items
        "b": {10: np.full(M, 0.20), 30: np.full(M, 0.10)},
    }
    switch, excess = guard(served, expected, truth, folds)
    assert switch[None] == ["a"] and excess["a"] > 0 > excess["b"]
    assert all(sw == ["a"] for sw in switch.values())
    # fold 2's own rows changed beyond recognition: its decision stays, the others' and the served one follow
    bad = {s: {n: np.where(folds == 2, truth[s] + 0.9, x) for n, x in by_n.items()} for s, by_n in served.items()}
    moved_expected = {s: {n: np.where(folds == 2, 5.0, x) for n, x in by_n.items()} for s, by_n in expected.items()}
    switch2, _ = guard(bad, moved_expected, truth, folds)
    assert switch2[2] == switch[2]
    assert switch2[None] == [] != switch[None]
    assert fold_designs(switch, ["a", "b"], "stratified") == {f: {"a": RANDOM, "b": "stratified"} for f in range(4)}
    assert np.isnan(log_excess({10: np.full(M, np.nan)}, {10: np.ones(M)}, truth["a"], np.ones(M, bool)))


def test_out_of_fold_takes_a_design_per_fold_and_shares_the_irt_fits():
    Y, w, cols, _full, groups, _items = world(n_models=16, n_families=4, items=(60, 60))
    folds = family_folds(groups, 4, 0)
    counts = {(s, n): n for s in cols for n in (10, 20)}
    plan = {f: {"s0": (RANDOM if f % 2 else "stratified"), "s1": "stratified"} for f in range(4)}
    cache: dict = {}
    first = out_of_fold(Y, w, cols, folds, counts, (1,), seed=0, n_init=2, design="stratified", fit_cache=cache)
    assert set(cache) == {(f, s) for f in range(4) for s in cols} | {
        (f, s, "stratified") for f in range(4) for s in cols
    }
    second = out_of_fold(Y, w, cols, folds, counts, (1,), seed=0, n_init=2, design=plan, fit_cache=cache)
    orders = [second.fits[f]["s0"].order for f in range(4)]
    for f in range(4):
        assert second.fits[f]["s0"].irt[1] is first.fits[f]["s0"].irt[1]  # one 2PL per fold, fitted once
        assert second.fits[f]["s1"] is first.fits[f]["s1"]  # a fold's fit on a design it had: not fitted again
    assert (1, "s0", RANDOM) in cache and (0, "s0", RANDOM) not in cache
    again = out_of_fold(Y, w, cols, folds, counts, (1,), seed=0, n_init=2, design=plan, fit_cache=cache)
    for k, v in second.base.items():  # re-run from the cache: the same out-of-fold estimates
        for name, x in v.items():
            np.testing.assert_array_equal(again.base[k][name], x)
    # random anchors do not depend on the training rows: the same order in every random fold
    np.testing.assert_array_equal(orders[1], orders[3])
    assert not np.array_equal(orders[0], orders[1])
    for f in range(4):  # nested: the anchors of 10 are the first 10 of 20
        a = second.fits[f]["s0"].anchors
        np.testing.assert_array_equal(a[20][0][:10], a[10][0])


@pytest.mark.parametrize("expected_error, switched", [(1e-4, True), (1.0, False)])
def test_predictor_serves_random_anchors_where_the_guard_fires(monkeypatch, expected_error, switched):
    Y, w, cols, full, groups, items = world(n_models=16, n_families=4, items=(60, 60))
    calls = []
    real = small_board.out_of_fold

    def counting(*a, **k):
        calls.append(k["design"])
        return real(*a, **k)

    monkeypatch.setattr(small_board, "out_of_fold", counting)
    monkeypatch.setattr(small_guard, "random_item_error", lambda Ys, ws, subs, k: np.full(len(Ys), expected_error))
    p = SmallBoardPredictor(**{**FAST, "max_folds": 4}).fit(Y, w, cols, full, groups, items=items)
    if switched:
        assert p.guard_.designs == dict.fromkeys(cols, RANDOM)
        assert len(calls) == 2 and calls[0] == "stratified" and isinstance(calls[1], dict)
        assert all(v == RANDOM for per in calls[1].values() for v in per.values())
        assert sum("anchors drawn at random" in n for n in p.notes_) == len(cols)
        # random items are expected to do better everywhere: every (scenario, n) is named
        assert sum("no better than random items" in n for n in p.notes_) == len(cols) * len(FAST["n_values"])
        for s in cols:  # served anchors: the random order's prefixes, nested
            a = p.served_.fits[s].anchors
            np.testing.assert_array_equal(a[30][0][:10], a[10][0])
            np.testing.assert_array_equal(p.served_.fits[s].order[:30], a[30][0])
        est = p.predict(Y, n=30)
        assert np.isfinite(est.estimate).all()
    else:
        assert p.guard_.designs == dict.fromkeys(cols, "stratified") and calls == ["stratified"]
        assert all(v < 0 for v in p.guard_.excess.values())
        assert not any("no better than random items" in n for n in p.notes_)
    off = SmallBoardPredictor(**{**FAST, "max_folds": 4}, guard=False).fit(Y, w, cols, full, groups, items=items)
    assert off.guard_.designs == dict.fromkeys(cols, "stratified") and off.guard_.excess == {}


def test_random_item_error_weighs_only_the_strata_its_items_reach():
    """Two items over three strata reach two of them: each reached stratum is half the estimate's weight."""
    subs, ws = np.repeat(["a", "b", "c"], 40), np.ones(120)
    Y = np.zeros((1, 120))
    Y[0, ::2] = 1  # accuracy 0.5 in each stratum
    np.testing.assert_allclose(
        random_item_error(Y, ws, subs, 2), np.sqrt(2 / np.pi) * np.sqrt(2 * 0.25 * 0.25), rtol=1e-12
    )


def test_the_guard_keeps_a_rule_that_equals_random_items_and_notes_it(monkeypatch):
    """The guard switches a scenario only where its rule is worse than random items (log excess above 0); a rule
    equal to them (0.125, exact in binary) keeps its anchors, and its note says it is no better than random items."""
    from types import SimpleNamespace

    truth, folds = np.full(8, 0.5), np.arange(8) % 2
    served = {"a": {10: truth + np.where(np.arange(8) % 2, 0.125, -0.125)}}
    switch, excess = guard(served, {"a": {10: np.full(8, 0.125)}}, {"a": truth}, folds)
    assert excess["a"] == 0.0 and switch[None] == []
    p = SimpleNamespace(
        layout_=SimpleNamespace(w=None, cols={"s": None}, subscenarios=None, scenarios=["s"]),
        _ns=lambda: [10],
        counts_=None,
        truth_=SimpleNamespace(t1=truth[:, None]),
        choices_={("s", 10): SimpleNamespace(oof_served=truth + 0.125)},
        notes_=[],
    )
    monkeypatch.setattr(small_guard, "expected_errors", lambda *a: {"s": {10: np.full(8, 0.125)}})
    (note,) = small_guard.random_notes(p, None)
    assert note.startswith("scenario 's', n = 10:") and "no better than random items" in note
