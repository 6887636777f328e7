"""Small boards' nested stratified anchors (core/estimation/strata.py), shrinkage toward the board
(core/estimation/shrinkage.py), the board's rule (small_choice.py) and pooled intervals (small_intervals.py), and the prepared budgets
(core/tiny_benchmark/budgets.py) through ``tinybench anchors --n / --target-width`` and ``tinybench estimate``."""

from __future__ import annotations

import contextlib
import functools
import io
import json

import numpy as np
import pandas as pd
import pytest
import torch

from tinybench_assets.core.estimation.shrinkage import ShrinkagePrior
from tinybench_assets.core.estimation.small_board import SmallBoardPredictor
from tinybench_assets.core.estimation.small_choice import board_rule, rules_for
from tinybench_assets.core.estimation.small_intervals import pooled_half_widths
from tinybench_assets.core.estimation.strata import nested_order, prefix_anchors
from tinybench_assets.core.tiny_benchmark.budgets import budget_for_answers, load_budgets, save_budgets, target_budget

torch.set_num_threads(1)


def test_nested_order_is_stratified_at_every_prefix():
    rng = np.random.default_rng(0)
    groups = np.array(["a"] * 40 + ["b"] * 120 + ["c"] * 40)
    w = np.concatenate([np.full(40, 2.0), np.full(120, 0.5), np.full(40, 1.0)])  # shares 80 : 60 : 40
    p = rng.random(200)
    order = nested_order(p, groups, w, seed=3)
    assert sorted(order.tolist()) == list(range(200))
    share = np.array([80, 60, 40]) / 180
    for k in (5, 17, 30, 80):  # (a runs out of items at 90)
        counts = np.array([(groups[order[:k]] == u).sum() for u in "abc"])
        assert np.all(np.abs(counts - share * k) <= 1.0), (k, counts)  # the weight's share, within one item
    for u in "abc":  # inside a subscenario the first three items span its difficulty: one from each third
        mine = order[groups[order] == u][:3]
        ranks = np.argsort(np.argsort(p[groups == u]))[np.searchsorted(np.flatnonzero(groups == u), mine)]
        n_u = (groups == u).sum()
        assert sorted((ranks * 3 // n_u).tolist()) == [0, 1, 2]
    local, wt = prefix_anchors(order, 30, groups, w)
    assert np.array_equal(local, order[:30]) and wt.sum() == pytest.approx(1.0)
    for u, s_u in zip("abc", share):  # each subscenario carries its share of the score
        assert wt[groups[local] == u].sum() == pytest.approx(s_u)
    # the same seed gives the same order; another seed draws other anchors among equally hard items
    assert np.array_equal(nested_order(p, groups, w, seed=3), order)
    ties = np.round(p, 1)
    assert not np.array_equal(nested_order(ties, groups, w, seed=1), nested_order(ties, groups, w, seed=2))


def test_shrinkage_prior():
    rng = np.random.default_rng(1)
    M = 40
    z = rng.normal(size=M)
    T = np.column_stack([0.5 + 0.1 * z + 0.02 * rng.normal(size=M), 0.3 + 0.08 * z + 0.02 * rng.normal(size=M)])
    X = T + rng.normal(0, 0.05, size=T.shape)
    prior = ShrinkagePrior.fit(T, X, ["s0", "s1"])
    assert prior.mean == pytest.approx(T.mean(0))
    assert prior.noise == pytest.approx(np.mean((X - T) ** 2, axis=0))
    assert prior.cov[0, 1] > 0.5 * np.sqrt(prior.cov[0, 0] * prior.cov[1, 1])  # the scenarios move together
    x = np.array([[0.7, 0.4]])
    est = prior.estimate(x)
    var = np.diag(prior.cov)
    want = prior.mean + var / (var + prior.noise) * (x[0] - prior.mean)
    assert est["shrunk"][0] == pytest.approx(want)
    # a model that did not answer s1: its s1 is NaN; shrunk_joint of s0 conditions on s0 alone
    one = prior.estimate(np.array([[0.7, np.nan]]))
    assert np.isnan(one["shrunk_joint"][0, 1]) and one["shrunk_joint"][0, 0] == pytest.approx(want[0])
    # joint: a high s1 answer pulls s0 up when only... both answered, the joint estimate moves with the other one
    hi, lo = prior.estimate(np.array([[0.6, 0.5]])), prior.estimate(np.array([[0.6, 0.1]]))
    assert hi["shrunk_joint"][0, 0] > lo["shrunk_joint"][0, 0]
    assert hi["shrunk"][0, 0] == pytest.approx(lo["shrunk"][0, 0])
    # no noise: the estimate is the anchor mean; overwhelming noise: the board's mean
    exact = ShrinkagePrior(prior.scenarios, prior.mean, prior.cov, np.full(2, 1e-12)).estimate(x)
    assert exact["shrunk_joint"][0] == pytest.approx(x[0], abs=1e-6)
    vague = ShrinkagePrior(prior.scenarios, prior.mean, prior.cov, np.full(2, 1e6)).estimate(x)
    assert vague["shrunk_joint"][0] == pytest.approx(prior.mean, abs=1e-4)


def test_board_rule_and_pooled_widths_read_only_the_rows_given():
    rng = np.random.default_rng(2)
    M = 30
    folds = np.arange(M) % 5
    truths, bases = {}, {}
    for s in ("a", "b"):
        t = rng.uniform(0.2, 0.8, M)
        truths[s] = t
        bases[s] = {
            D: {
                "anchor": t + rng.normal(0, 0.06, M),
                "irt": t + rng.normal(0, 0.05, M),
                "pirt": t + rng.normal(0, 0.04, M),
                "shrunk": t + rng.normal(0, 0.01, M),
                "shrunk_joint": t + rng.normal(0, 0.03, M),
            }
            for D in (1, 2)
        }

    def rule(b, t, rows):  # the board's rule with every scenario's rules_for lambdas read on ``rows``
        rules = {s: rules_for(b[s], {D: np.zeros(M) for D in (1, 2)}, np.full(M, 0.2), t[s], rows, 30)[0] for s in b}
        return board_rule(b, rules, t, rows)

    assert rule(bases, truths, np.ones(M, dtype=bool)) == ("shrunk", 0)
    rows = folds != 0
    est = {s: bases[s][1]["shrunk_joint"] for s in bases}
    half = pooled_half_widths(est, truths, rows, 0.1)
    moved = {s: t.copy() for s, t in truths.items()}
    for s in moved:
        moved[s][folds == 0] = rng.uniform(0, 1, (folds == 0).sum())  # fold 0's truths only
    moved_bases = {
        s: {D: {k: np.where(folds == 0, rng.uniform(0, 1, M), v) for k, v in b.items()} for D, b in bases[s].items()}
        for s in bases
    }
    assert rule(moved_bases, moved, rows) == rule(bases, truths, rows)
    assert pooled_half_widths(est, moved, rows, 0.1) == half
    # the half-width is q * each scenario's MAE, q a conformal quantile of the pooled residuals, each scaled by the
    # mean of the others of its scenario
    r = {s: np.abs(est[s] - truths[s])[rows] for s in est}
    mae = {s: np.mean(v) for s, v in r.items()}
    z = np.sort(np.concatenate([r[s] / ((r[s].sum() - r[s]) / (len(r[s]) - 1)) for s in r]))
    q = z[int(np.ceil((len(z) + 1) * 0.9)) - 1]
    assert half == pytest.approx({s: q * mae[s] for s in mae})


def world(n_models=24, n_families=8, seed=0):
    """A two-scenario 2PL board with subscenarios and correlated abilities."""
    rng = np.random.default_rng(seed)
    groups = np.array([f"fam{g}" for g in np.arange(n_models) % n_families])
    theta = rng.normal(size=n_models)[:, None] + 0.3 * rng.normal(size=(n_models, 2))
    blocks, cols, subs, start = [], {}, [], 0
    for k, n_items in enumerate((160, 120)):
        b = rng.normal(size=n_items)
        P = 1 / (1 + np.exp(-(1.3 * theta[:, [k]] - b)))
        blocks.append((rng.random(P.shape) < P).astype(float))
        cols[f"s{k}"] = np.arange(start, start + n_items)
        subs += [f"s{k}/u{j % 3}" for j in range(n_items)]
        start += n_items
    return np.hstack(blocks), np.ones(start), cols, groups, [f"q{j}" for j in range(start)], np.array(subs)


@functools.lru_cache(maxsize=None)
def board():
    Y, w, cols, groups, items, subs = world()
    p = SmallBoardPredictor(n_values=(10, 30, 100), dims=(1,), max_folds=4, n_init=2).fit(
        Y, w, cols, None, groups, items=items, subscenarios=subs
    )
    return Y, items, p


def test_pooled_intervals_cover_and_are_measured_out_of_fold():
    Y, items, p = board()
    for n in (10, 30, 100):
        iv = p.oof_intervals(n)
        assert len(iv) == len(Y) * 2 and iv.estimate.notna().all()
        assert ((iv.lower <= iv.estimate) & (iv.estimate <= iv.upper)).all()
        cov = np.mean((iv.lower <= iv.truth_t1) & (iv.truth_t1 <= iv.upper))
        assert 0.7 <= cov <= 1.0
        half = 50 * (iv.upper - iv.lower)
        assert half.mean() < 25  # not half the scale
        for s in p.layout_.scenarios:  # the served interval: one half-width per scenario, q * its out-of-fold MAE
            ci = p.choices_[(s, n)].interval_t1[p.choices_[(s, n)].t1]
            assert ci.scale == "none" and 0 < ci.q_hi_ == -ci.q_lo_ < 0.25
    bt = p.budget_table()
    assert list(bt.n.unique()) == [10, 30, 100] and set(bt.scenario) == set(p.layout_.scenarios)
    assert (bt.groupby("scenario").mae.apply(lambda x: x.iloc[-1] < x.iloc[0])).all()  # more anchors, less error


def run(args) -> tuple[int, str, str]:
    from tinybench_assets.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def test_budgets_anchors_and_estimate(tmp_path):
    from tinybench_assets.core.tiny_benchmark import save_artifact

    Y, items, p = board()
    save_artifact(p.to_artifact("tiny", 30), p, tmp_path)
    path = save_budgets(p, "tiny", tmp_path, p.budget_table())
    budgets = load_budgets(tmp_path)
    assert path.name == "budgets.json" and [b["n"] for b in budgets["budgets"]] == [10, 30, 100]
    code, out30, _ = run(["anchors", "--artifact", str(tmp_path), "--n", "30"])
    assert code == 0
    a30 = pd.read_csv(io.StringIO(out30))
    code, out100, _ = run(["anchors", "--artifact", str(tmp_path), "--n", "100"])
    a100 = pd.read_csv(io.StringIO(out100))
    assert len(a30) == 60 and len(a100) == 200
    for s in p.layout_.scenarios:  # nested: the first 30 are among the 100, in the same order
        assert a100[a100.scenario == s].item.tolist()[:30] == a30[a30.scenario == s].item.tolist()
    code, out17, err17 = run(["anchors", "--artifact", str(tmp_path), "--n", "17"])  # not prepared: the prefix
    a17 = pd.read_csv(io.StringIO(out17))
    assert code == 0 and "not a prepared budget" in err17 and "n=10" in err17
    for s in p.layout_.scenarios:
        assert a17[a17.scenario == s].item.tolist() == a30[a30.scenario == s].item.tolist()[:17]
    widths = {b["n"]: b["worst_half_width"] for b in budgets["budgets"]}
    w = (widths[30] + widths[10]) / 2 if widths[30] < widths[10] else widths[30]
    want = min(n for n, v in widths.items() if v <= w)
    assert target_budget(budgets, w)["n"] == want
    code, outw, _ = run(["anchors", "--artifact", str(tmp_path), "--target-width", str(w)])
    assert code == 0 and len(pd.read_csv(io.StringIO(outw))) == 2 * want
    code, _, err = run(["anchors", "--artifact", str(tmp_path), "--target-width", "0.001"])
    assert code == 2 and "no prepared budget reaches" in err
    # estimate: the answers to the first 100 are scored with n = 100, the first 30's with n = 30
    row = 3
    for anchors, n in ((a100, 100), (a30, 30)):
        ans = tmp_path / f"answers{n}.json"
        ans.write_text(json.dumps({it: float(Y[row, items.index(it)]) for it in anchors.item}))
        assert budget_for_answers(budgets, set(anchors.item)).name == f"n{n}"
        code, out, _ = run(["estimate", "--artifact", str(tmp_path), "--answers", str(ans), "--json"])
        assert code == 0
        res = json.loads(out)
        assert res["n"] == n
        served = p.predict(Y[row : row + 1], n=n)
        got = {r["scenario"]: r["estimate"] for r in res["scenarios"]}
        for s in p.layout_.scenarios:
            assert got[s] == pytest.approx(float(served[served.scenario == s].estimate.iloc[0]), abs=1e-9)


def test_budgets_need_a_small_boards_export(tmp_path):
    from tinybench_assets.core.tiny_benchmark import save_artifact

    _, _, p = board()
    save_artifact(p.to_artifact("tiny", 30), p, tmp_path)  # no budgets.json beside it
    code, _, err = run(["anchors", "--artifact", str(tmp_path), "--n", "30"])
    assert code == 2 and "exported for n=30 only" in err


def test_the_v2_board_is_seeded_and_lands_whole(tmp_path):
    """run-all's seed copies the Open LLM Leaderboard v2 (a real small board) and its long table reads whole."""
    from tinybench_assets.io.drops import read_drop
    from tinybench_assets.io.landing import seed_default_data
    from tinybench_assets_tests.conftest import SHARED, _need_shared

    _need_shared()
    copied = seed_default_data(SHARED, tmp_path)
    path = tmp_path / "openllm_v2" / "responses.parquet"
    assert path in copied
    drop = read_drop(path, "openllm_v2")
    r = drop.responses
    assert r["model"].nunique() == 19 and r["item"].nunique() == 21606
    assert set(r["scenario"]) == {"bbh", "gpqa", "ifeval", "math_hard", "mmlu_pro", "musr"}
    assert r.groupby("scenario")["model"].nunique()["mmlu_pro"] == 18  # one model missing, as published
    assert seed_default_data(SHARED, tmp_path) == []  # the same bytes again: nothing copied


def test_a_malformed_shrinkage_prior_is_refused_by_name(tmp_path):
    """The artifact's shrinkage block is read like every other field: a wrong scenario list, a non-positive noise
    variance, or shrunk estimators listed without a prior fail with the JSON path and the problem."""
    from tinybench_assets.core import tiny_benchmark as tb

    _, _, p = board()
    art = {k: v for k, v in p.to_artifact("tiny", 30).items() if not k.startswith("_")}
    tb.load_model(art, learned=False)  # as exported: fine
    cases = [
        (
            lambda a: a["shrinkage"].update(scenarios=list(reversed(a["shrinkage"]["scenarios"]))),
            "$.shrinkage.scenarios",
            "scenario_order",
        ),
        (lambda a: a["shrinkage"].update(noise=[0.0] * len(a["shrinkage"]["noise"])), "$.shrinkage", "positive"),
        (lambda a: a["shrinkage"].update(cov=[[1.0]]), "$.shrinkage", ""),
        (lambda a: a.pop("shrinkage"), "$.shrinkage", "no prior"),
    ]
    for spoil, where, what in cases:
        bad = json.loads(json.dumps(art))
        spoil(bad)
        with pytest.raises(tb.ArtifactError) as e:
            tb.load_model(bad, learned=False)
        assert where in str(e.value) and what in str(e.value), str(e.value)


def test_pooled_widths_scale_each_residual_as_a_new_models_so_they_cover():
    """A new model's residual is scaled by the calibration models' mean, which it took no part in; so is each
    calibration residual (the mean of the others). Scaled by a mean that includes it, a large residual shrinks its
    own score and 90 % intervals cover 0.884 here (4 scenarios of 15 models, normal errors)."""
    rng = np.random.default_rng(1)
    K, m, hits = 4, 15, []
    rows = np.ones(m, dtype=bool)
    for _ in range(2000):
        sd = 0.03 * np.arange(1, K + 1)
        est = {k: rng.standard_normal(m) * sd[k] for k in range(K)}
        half = pooled_half_widths(est, {k: np.zeros(m) for k in range(K)}, rows, 0.1)
        hits += [abs(rng.standard_normal() * sd[k]) <= half[k] for k in range(K)]
    assert 0.90 <= np.mean(hits) <= 0.93
