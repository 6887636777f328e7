"""MAGI subsets and parallel forms on small hand-built / generated matrices (known answers)."""

import numpy as np
import pandas as pd
import pytest

from tinybench_assets.core.responses import ResponseMatrix
from tinybench_assets.core.subsets import SubsetParams, build_subset, chance_per_item, parallel_forms, prepare, run_magi
from tinybench_assets.core.subsets.forms import forms_tables, item_difficulty, matrix_forms
from tinybench_assets.core.subsets.padding import pad_subset, padded_penalty
from tinybench_assets.core.subsets.penalty import loo_masks, penalty_vs_n_voters, score_trends, voter_penalty
from tinybench_assets.core.subsets.rankings import (
    information,
    rank_irt,
    rank_mean_score,
    rank_ref_vs_voters,
    subset_mask,
    voter_means,
)
from tinybench_assets.core.subsets.voters import family_from_name, guessers, model_families, select_voters


def test_rankings_known_answer():
    # 3 voters x 5 items: voter means 1, 2/3, 1/3, 0, 1/3
    Yv = np.array([[1, 1, 1, 0, 0], [1, 1, 0, 0, 1], [1, 0, 0, 0, 0]], float)
    ref = np.array([1, 0, 1, 1, 0], float)
    mean, loo = voter_means(Yv)
    assert np.allclose(mean, [1, 2 / 3, 1 / 3, 0, 1 / 3])
    assert np.allclose(loo[0], Yv[1:].mean(axis=0)) and np.allclose(loo[2], Yv[:2].mean(axis=0))
    ms = rank_mean_score(Yv)
    assert list(ms.order()[:2]) == [0, 1]  # easiest items go first
    assert set(np.flatnonzero(subset_mask(ms.keep, 1))) == {3}  # the hardest item is kept last
    rv = rank_ref_vs_voters(Yv, ref)
    # ref - mean: 0, -2/3, 2/3, 1, -1/3 -> the item the reference got wrong and voters right goes first
    assert rv.order()[0] == 1 and list(np.flatnonzero(subset_mask(rv.keep, 2))) == [2, 3]
    a, b = np.array([[1.0], [2.0], [0.5], [-1.0]]), np.array([0.0, 1.0, 3.0, 0.0])
    assert np.argmax(rank_irt(a, b, "irt").keep) == 2
    assert np.argmax(rank_irt(a, b, "irt_discrimination").keep) == 1
    info = information(np.array([[0.5]]), a, b)[0]
    assert np.isclose(info[1], 4 * 0.5 * 0.5)  # a^2 p(1-p), p = sigmoid(2 * 0.5 - 1) = 0.5
    ri = rank_irt(a, b, "irt_information", theta_top=np.array([[0.5]]))
    assert np.argmax(ri.keep) == 1 and np.argmin(ri.keep) == 3  # the inverted item (a < 0) goes first


def test_stratified_subset_keeps_group_shares():
    keep = np.arange(10, dtype=float)
    groups = np.array(["a"] * 8 + ["b"] * 2)
    assert list(np.flatnonzero(subset_mask(keep, 5))) == [5, 6, 7, 8, 9]
    m = subset_mask(keep, 5, groups)
    assert m[:8].sum() == 4 and m[8:].sum() == 1


def test_penalty_zero_when_voters_do_not_influence():
    rng = np.random.default_rng(0)
    Yv = (rng.random((8, 40)) < 0.6).astype(float)
    a, b = rng.normal(1, 0.2, (40, 1)), rng.normal(size=40)
    r = rank_irt(a, b, "irt")  # no voter influence
    k = 10
    pen = voter_penalty(Yv, subset_mask(r.keep, k), loo_masks(r, k, 8))
    assert np.allclose(pen, 0.0)
    # voter-based ranking: penalties are positive on average (voters' right answers look easy)
    rm = rank_mean_score(Yv)
    pen_m = voter_penalty(Yv, subset_mask(rm.keep, k), loo_masks(rm, k, 8))
    assert pen_m.mean() > 0


def test_penalty_curve_falls_with_more_voters():
    rng = np.random.default_rng(1)
    Yv = (rng.random((40, 200)) < rng.uniform(0.3, 0.8, (40, 1))).astype(float)
    curve = penalty_vs_n_voters(Yv, "mean_score", 40, n_values=(1, 5, 40), repeats=3)
    pen = curve.set_index("n_voters")["mean_penalty"]
    assert pen[1] > pen[5] > pen[40] >= 0


def test_padding_lowers_penalties():
    rng = np.random.default_rng(2)
    Yv = (rng.random((10, 300)) < rng.uniform(0.3, 0.8, (10, 1))).astype(float)
    r = rank_mean_score(Yv)
    k = 40
    base = subset_mask(r.keep, k)
    without = loo_masks(r, k, 10)
    pen0 = voter_penalty(Yv, base, without)
    pad = pad_subset(Yv, base, pen0, Yv.mean(axis=0), base=0, per_point=2.0, acc_low=0.0, acc_high=1.0, seed=0)
    pen1 = padded_penalty(Yv, base, without, pad)
    assert pad.added.any() and not (pad.added & base).any()
    assert pen1.mean() < pen0.mean()
    assert (pad.counts[pen0 <= 0] == 0).all()


def _toy_setup(seed=0, n_models=240, n_items=120):
    rng = np.random.default_rng(seed)
    theta = np.sort(rng.normal(size=n_models))
    b = rng.normal(size=n_items)
    p = 1 / (1 + np.exp(-(1.5 * theta[:, None] - b[None, :])))
    Y = (rng.random(p.shape) < p).astype(float)
    Y[:15] = 0.0  # guessers: at chance on the 4-choice half, nothing on the generative half
    Y[:15, : n_items // 2] = (rng.random((15, n_items // 2)) < 0.2).astype(float)
    models = [f"org{i % 12}/fam{i % 12}-7b-v{i}" for i in range(n_models)]
    scen = np.array(["mmlu"] * (n_items // 2) + ["gsm8k"] * (n_items - n_items // 2), dtype=object)
    full = theta + rng.normal(0, 0.05, n_models)
    full[:15] = -5
    return prepare(
        Y,
        models,
        [f"i{j}" for j in range(n_items)],
        scen,
        scen,
        chance_per_item(scen),
        full,
        n_voters=24,
        per_family=2,
        seed=seed,
    )


def test_guessers_never_vote_and_roles():
    s = _toy_setup()
    assert s.guesser[:15].all()
    assert not s.guesser[s.voters].any() and len(s.voters) == 24
    assert set(s.role) == {"voter", "tune", "eval"}
    assert s.role[s.reference] == "tune" and s.not_fair[s.reference]
    fam = s.families["family"].to_numpy()
    assert (s.not_fair == (fam == fam[s.reference])).all()
    assert s.families.loc[np.asarray(s.models)[s.voters], "family"].value_counts().max() <= 2


def test_voter_rule_merges_flags_and_families():
    assert family_from_name("meta-llama/Llama-2-7b-chat-hf") == "llama-2-7b"
    agg = pd.DataFrame(
        {
            "name": ["a/x", "b/y", "c/z-slerp"],
            "arch": ["LlamaForCausalLM", "error", "LlamaForCausalLM"],
            "size": [7.0, -1, 7.0],
            "merged": [False, False, False],
            "moe": [False, False, False],
            "flagged": [False, True, False],
        }
    )
    fam = model_families(["a/x", "b/y", "c/z-slerp", "d/mistral-7b-it"], agg)
    assert fam.loc["a/x", "family"] == "LlamaForCausalLM-7b" and fam.loc["c/z-slerp", "merged"]
    assert fam.loc["b/y", "flagged"] and fam.loc["d/mistral-7b-it", "family"] == "mistral-7b"
    v = select_voters(fam.index, np.array([0.5, 0.6, 0.7, 0.4]), fam, np.zeros(4, bool), n_voters=10)
    assert list(v) == [0, 3]  # merge and flagged models never vote
    Y = np.array([[0, 0, 0, 0], [1, 1, 1, 1]], float)
    assert list(guessers(Y, np.full(4, 0.25), z=0)) == [True, False]


def test_build_subset_and_determinism():
    s = _toy_setup()
    r1 = run_magi(s, methods=("mean_score", "irt_information"), n_trials=8, seed=3)
    r2 = run_magi(s, methods=("mean_score", "irt_information"), n_trials=8, seed=3)
    for m in r1.methods:
        assert (r1.methods[m].chosen.mask == r2.methods[m].chosen.mask).all()
        assert r1.methods[m].params == r2.methods[m].params
        t = r1.methods[m].trials
        assert t.pareto.any() and t.chosen.sum() == 1 and t[t.chosen].pareto.all()
    assert np.allclose(r1.methods["irt_information"].chosen.penalty_before, 0.0)
    ev = build_subset(s, r1.methods["mean_score"].ranking, SubsetParams(keep_fraction=0.25))
    assert ev.metrics["size"] == 30 and ev.metrics["top10_std"] >= 0
    sizes, sc = score_trends(s.Y, r1.methods["mean_score"].ranking, s.voters[:3], step_fraction=0.1, min_items=12)
    assert sizes[0] == 120 and sizes[-1] == 12 and sc.shape == (len(sizes), 3)
    assert np.allclose(sc[0], s.Y[s.voters[:3]].mean(axis=1))


def test_parallel_forms_toy_pool():
    rng = np.random.default_rng(0)
    subs = np.repeat(["alg", "bio", "chem", "law"], [60, 40, 40, 20])
    diff = rng.random(160)
    scores = (rng.random((50, 160)) < np.linspace(0.2, 0.9, 50)[:, None]).astype(float)
    f = parallel_forms([f"q{i}" for i in range(160)], subs, diff, size=50, exclude=["law"], scores=scores, seed=1)
    a, b = set(f.form_a), set(f.form_b)
    assert len(a) == len(b) == 50 and not a & b
    assert not (subs[list(a | b)] == "law").any()
    counts = pd.Series(subs[list(a)]).value_counts()
    assert counts["alg"] == 21 or counts["alg"] == 22  # 60 / 140 of 50 = 21.4
    assert f.distances["l1_subscenario_a_b"] < 0.05 and f.distances["l1_bucket_a_pool"] < 0.1
    assert f.correlation["pearson"] > 0.8
    assert abs(diff[f.form_a].mean() - diff[f.form_b].mean()) < 0.02  # neighbours in difficulty split between forms
    # pool shorter than two forms: at most half each, still disjoint
    g = parallel_forms([f"q{i}" for i in range(160)], subs, diff, size=300, seed=0)
    assert len(g.form_a) == len(g.form_b) <= 80 and not set(g.form_a) & set(g.form_b)
    f2 = parallel_forms([f"q{i}" for i in range(160)], subs, diff, size=50, exclude=["law"], seed=1)
    assert (f2.form_a == f.form_a).all()


def test_irt_subsets_rank_top_models_in_ability_order():
    # known abilities: the chosen IRT subsets must order the strongest held-out models as their abilities do
    # (an orientation / sign error in a, theta or the top-k abilities gives a negative tau here)
    from scipy.stats import kendalltau

    from tinybench_assets_tests.conftest import synthetic_2pl

    Y, theta, _, _ = synthetic_2pl(900, 200, dim=1, seed=4)
    scen = np.array(["mmlu"] * 100 + ["gsm8k"] * 100, dtype=object)
    models = [f"org{i % 30}/fam{i % 30}-7b-v{i}" for i in range(900)]
    s = prepare(
        Y,
        models,
        [f"i{j}" for j in range(200)],
        scen,
        scen,
        chance_per_item(scen),
        theta[:, 0],
        n_voters=30,
        per_family=1,
        seed=0,
    )
    res = run_magi(s, methods=("irt", "irt_information", "irt_discrimination"), n_trials=6, seed=0)
    assert res.demoted == ()  # one latent dimension: no scenario trades off against the full score
    top = s.top(s.role == "eval", 100, fair_only=False)
    for m, r in res.methods.items():
        sc = s.Y[top][:, r.chosen.mask].mean(axis=1)
        assert kendalltau(sc, theta[top, 0]).statistic > 0.2, m
        assert r.eval_metrics["kendall_tau_nonvoters"] > 0, m


def test_scenario_trading_off_at_the_top_is_deleted_first():
    # two scenarios; among the strongest models scenario "b" falls as the full score (their mean) rises
    from tinybench_assets.core.subsets.rankings import demote
    from tinybench_assets.core.subsets.setup import scenario_validity

    rng = np.random.default_rng(5)
    n, k = 600, 60
    g = rng.normal(size=n)  # general ability
    t = rng.normal(size=n)  # trade-off: helps a, hurts b
    pa = 1 / (1 + np.exp(-(g[:, None] + 1.5 * t[:, None] - rng.normal(size=k))))
    pb = 1 / (1 + np.exp(-(g[:, None] - 1.5 * t[:, None] - rng.normal(size=k))))
    Y = (rng.random((n, 2 * k)) < np.hstack([pa, pb])).astype(float)
    # the full score weighs the trade-off towards scenario a, as openllm's mean weighs GSM8K/MMLU at the top
    full = g + 0.8 * t
    scen = np.array(["a"] * k + ["b"] * k, dtype=object)
    s = prepare(
        Y,
        [f"o{i}/m{i}-7b" for i in range(n)],
        [f"i{j}" for j in range(2 * k)],
        scen,
        scen,
        chance_per_item(scen),
        full,
        n_voters=20,
        per_family=1,
        seed=0,
    )
    v = scenario_validity(s, 100)
    assert v["a"] > 0 >= v["b"]
    res = run_magi(s, methods=("irt",), n_trials=4, seed=0)
    assert res.demoted == ("b",)
    r = res.methods["irt"].ranking
    assert (r.order()[:k] >= k).all()  # every b item is deleted before any a item
    assert not res.methods["irt"].chosen.base[k:].any()
    rm = demote(rank_mean_score(s.Yv), scen == "b")  # leave-one-out rows demoted alike: no added penalty
    assert (rm.loo[:, k:].max(axis=1) < rm.loo[:, :k].min(axis=1)).all()


def test_balanced_scores_are_the_mean_of_per_scenario_accuracies():
    from tinybench_assets.core.subsets.penalty import subset_scores
    from tinybench_assets.core.subsets.rankings import balanced_weights

    g = np.random.default_rng(0)
    Y = (g.random((5, 12)) < 0.5).astype(float)
    groups = np.array(["a"] * 8 + ["b"] * 4)
    mask = np.zeros(12, bool)
    mask[[0, 1, 2, 8]] = True  # three items of a, one of b
    want = (Y[:, [0, 1, 2]].mean(axis=1) + Y[:, 8]) / 2
    assert np.allclose(subset_scores(Y, mask, groups), want)
    assert not np.allclose(subset_scores(Y, mask), want)  # the plain mean weighs a three times as much
    masks = np.stack([mask, ~mask])
    w = balanced_weights(masks, groups)
    assert np.allclose(w.sum(axis=1), 1.0) and (w[~masks] == 0).all()
    # penalties with groups use the same balanced scores
    wo = np.stack([~mask] * 5)
    assert np.allclose(voter_penalty(Y, mask, wo, groups), 100 * (subset_scores(Y, ~mask, groups) - want))


def test_irt_ranking_by_scenario_uses_each_scenarios_parameters():
    from tinybench_assets.core.subsets.rankings import rank_irt_by_group

    a = np.array([[1.0], [1.0], [2.0], [0.5]])
    b = np.array([0.0, 3.0, 1.0, -1.0])
    groups = np.array(["x", "x", "y", "y"])
    # difficulty: the same keep order as the pooled ranking (b per item)
    r = rank_irt_by_group(a, b, groups, "irt", seed=0)
    assert np.argsort(-r.keep).tolist() == [1, 2, 0, 3]
    # information at the top: each scenario's own top abilities decide
    top = {"x": np.array([[3.0]]), "y": np.array([[-5.0]])}
    ri = rank_irt_by_group(a, b, groups, "irt_information", top, seed=0)
    info_x = information(top["x"], a[:2], b[:2])[0]
    info_y = information(top["y"], a[2:], b[2:])[0]
    assert np.allclose(ri.keep, np.concatenate([info_x, info_y]), atol=1e-5)


def test_stratified_deletion_shares_among_guarded_scenarios():
    keep = np.arange(20, dtype=float)[::-1]  # the first items are kept longest
    groups = np.array(["a"] * 10 + ["b"] * 6 + [""] * 4)  # "" = a scenario demoted by the guard
    m = subset_mask(keep, 8, groups)
    assert m[:10].sum() == 5 and m[10:16].sum() == 3 and not m[16:].any()  # 8 * 10/16, 8 * 6/16
    assert list(np.flatnonzero(m[:10])) == [0, 1, 2, 3, 4]
    assert subset_mask(keep, 18, groups)[16:].sum() == 2  # demoted items only fill what the others cannot hold
    # through run_magi: the guard's demoted scenario gets no share, the others keep the pool's proportions
    from tinybench_assets.core.subsets.rankings import demote

    r = demote(rank_mean_score(np.ones((3, 20))), groups == "", np.where(groups == "", "z", groups))
    assert list(r.strata[14:18]) == ["b", "b", "", ""]


def test_per_scenario_irt_information_uses_each_scenarios_abilities():
    from tinybench_assets.core.subsets.rankings import rank_irt_by_group

    a = np.ones((4, 1))
    b = np.array([0.0, 2.0, 0.0, 2.0])
    groups = np.array(["x", "x", "y", "y"])
    # top models sit at theta 0 in scenario x's fit and at 2 in y's: the informative item differs by scenario
    r = rank_irt_by_group(a, b, groups, "irt_information", {"x": np.array([[0.0]]), "y": np.array([[2.0]])})
    assert r.keep[0] > r.keep[1] and r.keep[3] > r.keep[2]
    assert np.isclose(r.keep[0], 0.25, atol=1e-6) and np.isclose(r.keep[3], 0.25, atol=1e-6)
    r2 = rank_irt_by_group(np.array([[1.0], [-1.0], [1.0], [1.0]]), np.array([5.0, 9.0, -3.0, 0.0]), groups, "irt")
    assert r2.order()[0] == 1  # an inverted item goes first across scenarios, even with the largest b


def test_run_magi_construct_valid_options():
    s = _toy_setup()
    res = run_magi(
        s,
        methods=("irt", "mean_score"),
        n_trials=6,
        seed=0,
        balanced=True,
        stratify=True,
        irt_scope="scenario",
        min_validity=None,
    )
    assert res.options == {
        "balanced": True,
        "stratify": True,
        "irt_scope": "scenario",
        "validity_top": 100,
        "min_validity": None,
        "information": "full_direction",
    }
    assert res.setup.balanced and not s.balanced  # the caller's setup is left as it was
    for m, r in res.methods.items():
        base = r.chosen.base
        assert abs(base[:60].sum() - base[60:].sum()) <= 1, m  # two equal scenarios: equal shares
        sc = res.setup.scores(r.chosen.mask)
        want = (s.Y[:, :60][:, r.chosen.mask[:60]].mean(axis=1) + s.Y[:, 60:][:, r.chosen.mask[60:]].mean(axis=1)) / 2
        assert np.allclose(sc, want)
    assert set(res.irt_params.theta) == {"mmlu", "gsm8k"}  # one fit per scenario


def test_variant_rule_uses_tune_figures_only():
    from tinybench_assets.core.subsets import choose_variant
    from tinybench_assets.core.subsets.search import NO_REFERENCE_METHODS

    rows = pd.DataFrame(
        [
            # widest tune spread but the tune tau is negative: never chosen, however good its eval figures
            dict(
                method="irt_information",
                validity_top=0,
                tune_kendall_tau=-0.3,
                tune_fraction=0.15,
                tune_abs_penalty=0,
                tune_guesser_advantage=-0.01,
                tune_ratio=5.0,
                eval_ratio=4.0,
                eval_kendall_tau=0.9,
            ),
            dict(
                method="ref_vs_voters",
                validity_top=100,
                tune_kendall_tau=0.5,
                tune_fraction=0.18,
                tune_abs_penalty=0.3,
                tune_guesser_advantage=-0.01,
                tune_ratio=4.8,
                eval_ratio=1.0,
                eval_kendall_tau=0.1,
            ),
            dict(
                method="irt",
                validity_top=200,
                tune_kendall_tau=0.45,
                tune_fraction=0.19,
                tune_abs_penalty=0.2,
                tune_guesser_advantage=-0.01,
                tune_ratio=4.5,
                eval_ratio=2.0,
                eval_kendall_tau=0.5,
            ),
            dict(
                method="irt",
                validity_top=100,
                tune_kendall_tau=0.45,
                tune_fraction=0.19,
                tune_abs_penalty=0.2,
                tune_guesser_advantage=-0.01,
                tune_ratio=4.5,
                eval_ratio=2.0,
                eval_kendall_tau=0.5,
            ),
            dict(
                method="mean_score",
                validity_top=100,
                tune_kendall_tau=0.6,
                tune_fraction=0.25,
                tune_abs_penalty=0.2,
                tune_guesser_advantage=-0.01,
                tune_ratio=6.0,
                eval_ratio=3.0,
                eval_kendall_tau=0.6,
            ),  # too large
        ]
    )
    assert choose_variant(rows)["method"] == "ref_vs_voters"
    pick = choose_variant(rows, methods=NO_REFERENCE_METHODS)
    assert pick["method"] == "irt" and pick["validity_top"] == 100  # tie: the guard population nearest 100
    assert choose_variant(rows, min_tau=0.7) is None


def test_auto_export_reads_tune_figures_only():
    """export_method auto: the widest tune spread among subsets that rank the tune top like the full score, fit the
    size / penalty / guesser bounds and burn no reference; eval figures are never read (absent here)."""
    from types import SimpleNamespace

    from tinybench_assets.core.subsets import Scalarization, choose_export

    def method(tau, frac, pen, ga, std):
        metrics = dict(
            kendall_tau_nonvoters=tau,
            fraction_of_pool=frac,
            mean_abs_voter_penalty=pen,
            guesser_advantage=ga,
            top10_std=std,
        )
        return SimpleNamespace(chosen=SimpleNamespace(metrics=metrics))  # no eval_metrics: reading them would raise

    def result(**methods):
        return SimpleNamespace(methods=methods, full_metrics={"top10_std": 0.02})

    r = result(
        ref_vs_voters=method(0.6, 0.15, 0.1, -0.01, 0.20),  # widest, but burns its reference
        irt_information=method(0.1, 0.10, 0.0, 0.0, 0.15),  # tune tau under the floor
        mean_score=method(0.5, 0.25, 0.2, -0.01, 0.14),  # too large
        irt=method(0.45, 0.18, 0.3, -0.02, 0.08),
        top_discrimination=method(0.6, 0.19, 0.0, -0.01, 0.06),
    )
    assert choose_export(r) == "irt"
    assert choose_export(r, min_tau=0.05) == "irt_information"
    assert choose_export(r, scalar=Scalarization(max_fraction=0.3)) == "mean_score"
    assert choose_export(r, scalar=Scalarization(max_mean_penalty=0.25)) == "top_discrimination"
    # nothing reaches the tau floor: the feasible subset with the highest tune tau
    assert choose_export(r, min_tau=0.9) == "top_discrimination"
    # nothing feasible at all: the first method run
    assert choose_export(r, scalar=Scalarization(max_fraction=0.01)) == "ref_vs_voters"
    # a NaN tune tau (too few tune models) never passes the floor
    assert (
        choose_export(
            result(irt=method(float("nan"), 0.1, 0.0, -0.01, 0.2), mean_score=method(0.4, 0.1, 0.1, -0.01, 0.05))
        )
        == "mean_score"
    )
    with pytest.raises(ValueError, match="no MAGI method"):
        choose_export(result())


def test_top_discrimination_known_answer():
    from tinybench_assets.core.subsets.rankings import rank_top_discrimination

    # 4 top models with full scores 4 > 3 > 2 > 1; item 0 follows the full score, item 1 is got right by the two
    # weaker ones only (trades off against it), item 2 everyone gets right, item 3 only the best
    Y = np.array([[1, 0, 1, 1], [1, 0, 1, 0], [0, 1, 1, 0], [0, 1, 1, 0]], float)
    full = np.array([4.0, 3.0, 2.0, 1.0])
    r = rank_top_discrimination(Y, full)
    # cov(item, full) with the population normalization: 0.5, -0.5, 0, 0.375
    assert np.allclose(r.keep, [0.5, -0.5, 0.0, 0.375], atol=1e-6)
    assert r.order().tolist() == [1, 2, 3, 0] and r.loo is None  # no voters: zero voter penalty
    assert list(np.flatnonzero(subset_mask(r.keep, 2))) == [0, 3]


def test_information_along_the_full_score_direction_known_answer():
    from tinybench_assets.core.subsets.rankings import directional_information, full_score_direction

    # the full score rises with ability 1 only: the direction is (1, 0) whatever the scale
    theta = np.random.default_rng(0).normal(size=(50, 2))
    u = full_score_direction(theta, 3.0 * theta[:, 0] + 1.0)
    assert np.allclose(u, [1.0, 0.0], atol=1e-9)
    a = np.array([[2.0, 0.0], [0.0, 3.0], [1.0, 1.0], [-1.0, 2.0]])
    b = np.zeros(4)
    info = directional_information(np.zeros((1, 2)), a, b, u)[0]  # p = 0.5 at theta 0
    assert np.allclose(info, [1.0, 0.0, 0.25, 0.25])  # (a . u)^2 / 4
    r = rank_irt(a, b, "irt_information", np.zeros((1, 2)), direction=u)
    # item 0 kept last; item 1 (no loading on the full-score direction) and item 3 (a . u < 0) go first
    assert r.order()[-1] == 0 and set(r.order()[:2]) == {1, 3}
    # the raw (direction-free) information would keep item 1, which says nothing about the full score
    assert np.argmax(rank_irt(a, b, "irt_information", np.zeros((1, 2))).keep) == 1


def test_new_rankings_deterministic_and_valid_on_a_toy_pool():
    from scipy.stats import kendalltau

    s = _toy_setup()
    kw = dict(methods=("irt_information", "top_discrimination"), n_trials=8, seed=3, information="full_direction")
    r1, r2 = run_magi(s, **kw), run_magi(s, **kw)
    assert r1.options["information"] == "full_direction"
    for m in kw["methods"]:
        assert (r1.methods[m].chosen.mask == r2.methods[m].chosen.mask).all(), m
        assert r1.methods[m].params.as_dict() == r2.methods[m].params.as_dict(), m
        assert np.allclose(r1.methods[m].chosen.penalty_before, 0.0), m  # voters never enter
        top = s.top(s.role == "eval", 100, fair_only=False)
        sc = s.Y[top][:, r1.methods[m].chosen.mask].mean(axis=1)
        assert kendalltau(sc, s.full_score[top]).statistic > 0.2, m
    assert len(r1.methods["irt_information"].ranking_options["direction"]) == 2
    assert 30 <= r1.methods["top_discrimination"].params.top_k <= 200
    with pytest.raises(ValueError):
        run_magi(s, methods=("irt_information",), n_trials=2, information="sideways")


def test_fine_tunes_of_the_reference_base_are_not_fair():
    from tinybench_assets.core.subsets.voters import base_family

    assert base_family("cognitivecomputations/dolphin-2.9-llama3-8b") == base_family("meta-llama/Meta-Llama-3-8B")
    assert base_family("cognitivecomputations/dolphin-2.6-mistral-7b") == base_family("mistralai/Mistral-7B-v0.1")
    assert base_family("meta-llama/Meta-Llama-3-8B") != base_family("mistralai/Mistral-7B-v0.1")
    assert base_family("HuggingFaceH4/zephyr-7b-beta") is None
    models = [
        "mistralai/Mistral-7B-v0.1",
        "meta-math/MetaMath-Mistral-7B",
        "itpossible/Chinese-Mistral-7B-v0.1",
        "HuggingFaceH4/zephyr-7b-beta",
        "cognitivecomputations/dolphin-2.6-mistral-7b",
        "meta-llama/Meta-Llama-3-8B",
        "cognitivecomputations/dolphin-2.9-llama3-8b",
    ]
    rng = np.random.default_rng(0)
    Y = (rng.random((7, 80)) < np.linspace(0.4, 0.7, 7)[:, None]).astype(float)
    scen = np.array(["mmlu"] * 80, dtype=object)
    s = prepare(
        Y,
        models,
        [f"i{j}" for j in range(80)],
        scen,
        scen,
        chance_per_item(scen),
        np.full(7, np.nan),
        reference="meta-llama/Meta-Llama-3-8B",
        seed=0,
    )
    assert s.not_fair.tolist() == [False] * 5 + [True, True]  # the Llama-3 fine-tune is flagged with its base


def test_forms_of_a_matrix_and_their_tables():
    """matrix_forms stratifies by scenario/subscenario x difficulty; forms_tables are what parallel_forms stores; an
    unknown difficulty is refused by name."""
    rng = np.random.default_rng(0)
    rows = [
        {
            "model": f"m{i}",
            "item": f"q{j}",
            "scenario": "s",
            "subscenario": f"u{j % 2}",
            "score": float(rng.random() < 0.5),
        }
        for i in range(12)
        for j in range(40)
    ]
    rm = ResponseMatrix.from_long(pd.DataFrame(rows))
    forms = matrix_forms(rm, "accuracy", size=10, n_buckets=2, exclude=[], seed=0)
    assert len(forms.form_a) == len(forms.form_b) == 10 and not set(forms.form_a) & set(forms.form_b)
    tables = forms_tables(forms, 10)
    assert set(tables["parallel_forms"].form) == {"A", "B"} and len(tables["parallel_forms"]) == 20
    assert set(tables["parallel_forms"].subscenario) == {"s/u0", "s/u1"}
    assert tables["parallel_forms_stats"].loc[0, "requested_size"] == 10
    with pytest.raises(ValueError, match="unknown difficulty 'rank'"):
        item_difficulty(rm, "rank")


def test_no_selection_step_reads_the_eval_models():
    """The eval models' answers flipped: the validity guard, every method's ranking, its trials' figures and the chosen
    parameters and subset stay as they were (the search reads tune models and voters only); the eval figures move."""
    import copy

    s = _toy_setup()
    flipped = copy.copy(s)
    flipped.Y = s.Y.copy()
    ev = s.role == "eval"
    flipped.Y[ev] = 1 - flipped.Y[ev]
    kw = dict(methods=("mean_score", "irt", "top_discrimination"), n_trials=6, seed=0)
    a, b = run_magi(s, **kw), run_magi(flipped, **kw)
    assert a.validity == b.validity and a.demoted == b.demoted
    for m in kw["methods"]:
        ra, rb = a.methods[m], b.methods[m]
        np.testing.assert_array_equal(ra.ranking.keep, rb.ranking.keep, err_msg=m)
        assert ra.params == rb.params and (ra.chosen.mask == rb.chosen.mask).all(), m
        pd.testing.assert_frame_equal(
            ra.trials.drop(columns="seconds", errors="ignore"), rb.trials.drop(columns="seconds", errors="ignore")
        )
    assert a.methods["mean_score"].eval_metrics != b.methods["mean_score"].eval_metrics


def test_pareto_front_and_the_chosen_trial_known_answer():
    """A higher top-10 spread (maximized) dominates at equal penalties; the chosen trial is the feasible Pareto point
    of the largest utility, else the Pareto point of the smallest violation."""
    from tinybench_assets.core.subsets.optimizer import _choose, pareto_mask

    v = np.array([[0.5, 0.1, 0.0, 0.1], [0.4, 0.1, 0.0, 0.1], [0.3, 0.05, 0.0, 0.1]])
    assert pareto_mask(v).tolist() == [True, False, True]
    t = pd.DataFrame(
        {"trial": [0, 1, 2], "pareto": [True, True, False], "utility": [1.0, 2.0, 9.0], "violation": [0.0, 0.0, 0.0]}
    )
    assert _choose(t).trial == 1
    t["violation"] = [0.3, 0.2, 0.0]
    assert _choose(t).trial == 1 and _choose(t.assign(violation=[0.1, 0.2, 0.0])).trial == 0
