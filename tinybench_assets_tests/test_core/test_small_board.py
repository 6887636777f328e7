"""Small leaderboards (core/estimation/small_board.py): fit / predict shapes, determinism, leave-family-out CV that
never reads a held-out family, the choice's own leave-one-fold-out, family-level conformal quantiles, input errors,
and the tiny-benchmark round trip (save, load, ``estimate_from_artifact`` / ``tinybench estimate`` == predict)."""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json

import numpy as np
import pandas as pd
import pytest
import torch

from tinybench_assets.core import tiny_benchmark as tb
from tinybench_assets.core.estimation.bank import BANK_EPS, bank_values, posterior_means, soft_answers
from tinybench_assets.core.estimation.calibration import conformal_quantile
from tinybench_assets.core.estimation.small_board import PRED_COLS, SmallBoardPredictor
from tinybench_assets.core.estimation.small_choice import BANK, Rule, choose, choose_scenario, fold_gain
from tinybench_assets.core.estimation.small_folds import base_estimates, family_folds
from tinybench_assets.core.estimation.small_intervals import family_quantile, symmetric_interval

torch.set_num_threads(1)

FAST = dict(
    n_values=(10, 30), dims=(1, 2), max_folds=4, n_init=3, seed=0, pick_design=False
)  # design: test_small_design


def world(n_models=24, n_families=8, items=(150, 150), seed=0):
    """Synthetic 2PL board: (Y (M, I), w (I,), cols, full scores (M, S), groups (M,), item ids)."""
    rng = np.random.default_rng(seed)
    groups = np.array([f"fam{g}" for g in np.arange(n_models) % n_families])
    fam = {g: rng.normal(size=2) for g in np.unique(groups)}
    theta = np.array([fam[g] for g in groups]) + 0.5 * rng.normal(size=(n_models, 2))
    blocks, cols, start = [], {}, 0
    for k, n_items in enumerate(items):
        a = np.abs(rng.normal(1.0, 0.4, size=(n_items, 2)))
        b = rng.normal(size=n_items)
        P = 1 / (1 + np.exp(-(theta @ a.T - b)))
        blocks.append((rng.random(P.shape) < P).astype(float))
        cols[f"s{k}"] = np.arange(start, start + n_items)
        start += n_items
    Y = np.hstack(blocks)
    w = rng.uniform(0.5, 1.5, size=Y.shape[1])
    full = np.column_stack([0.1 + 0.8 * Y[:, c].mean(1) + 0.02 * rng.normal(size=n_models) for c in cols.values()])
    return Y, w, cols, full, groups, [f"q{j}" for j in range(Y.shape[1])]


def saved_estimate(art: dict, Y: np.ndarray, items: list, row: int, folder) -> pd.DataFrame:
    """Row ``row`` of ``Y`` answering the anchors of artifact ``art``, saved to ``folder`` and loaded back:
    tb.estimate_from_artifact's frame (one row per scenario)."""
    from tinybench_assets.core import tiny_benchmark as tb

    tb.save_artifact(art, folder=folder)
    loaded = tb.load_artifact(folder)
    ans = {
        it: float(Y[row, items.index(it)])
        for s in loaded["scenario_order"]
        for it in loaded["scenarios"][s]["anchors"]["items"]
    }
    return tb.estimate_from_artifact(loaded, ans)


@functools.lru_cache(maxsize=None)
def fitted():
    Y, w, cols, full, groups, items = world()
    return Y, SmallBoardPredictor(**FAST).fit(Y, w, cols, full, groups, items=items)


def test_fit_predict_shapes():
    Y, p = fitted()
    M = len(Y)
    at = p.anchor_table()
    assert list(at.columns) == ["scenario", "n", "item", "item_index", "weight"]
    assert len(at) == 2 * (10 + 30)
    np.testing.assert_allclose(at.groupby(["scenario", "n"]).weight.sum(), 1.0)
    for (s, _n), g in at.groupby(["scenario", "n"]):
        assert set(g.item_index) <= set(p.layout_.cols[s]) and g.item_index.is_unique
    cv = p.cv_table()
    assert {"scenario", "n", "estimator", "dim", "cv_mae_t1", "cv_mae_t2", "n_models"} <= set(cv.columns)
    assert len(cv) == 2 * 2 * (1 + 4 * 2 + 2 + 1 + 1 + 2 + 1)  # scenarios x n x (anchor + 4 per D + 2 shrunk + bank
    # + fill + a median per D + served)
    bank = cv[cv.estimator.str.startswith("bank_joint")]  # one rule, its eps chosen inside it (nested over folds)
    assert len(bank) == 2 * 2 and bank.dim.eq(0).all() and set(bank.eps) <= set(BANK_EPS)
    served_eps = cv[cv.estimator == "bank_joint"].set_index(["scenario", "n"]).eps  # the artifact's eps, named plainly
    assert len(served_eps) == 4 and all(p.choices_[k].eps == e for k, e in served_eps.items())
    assert (cv.groupby(["scenario", "n"]).served_t1.sum() == 1).all()
    assert (cv.groupby(["scenario", "n"]).served_t2.sum() == 1).all()  # full scores given: a T2 estimator each
    assert cv[cv.estimator != "served"].n_models.eq(M).all() and cv.cv_mae_t1.between(0, 0.3).all()
    oof = p.oof_table()
    assert len(oof) == M * 2 * 2 * (15 + 1) and oof.estimate.notna().all()
    out = p.predict(Y, n=30)
    assert list(out.columns) == PRED_COLS and len(out) == M * 2
    assert out.estimate.between(0, 1).all() and out.answered.eq(30).all()
    assert ((out.lower <= out.estimate) & (out.estimate <= out.upper)).all()
    assert ((out.lower_t2 <= out.estimate_t2) & (out.estimate_t2 <= out.upper_t2)).all()
    assert len(p.predict(Y)) == M * 2 * 2  # every n
    # answers per scenario in anchor order == the full-width matrix (whose other cells are never read)
    per = {s: Y[:, g.item_index.to_numpy()] for s, g in at[at.n == 30].groupby("scenario", sort=False)}
    pd.testing.assert_frame_equal(p.predict(per, n=30), out)
    blank = np.where(np.isin(np.arange(Y.shape[1]), at[at.n == 30].item_index), Y, np.nan)
    pd.testing.assert_frame_equal(p.predict(blank, n=30), out)
    # a model that never ran a scenario gets NaN there, and its other scenario is unaffected unless the served
    # estimator reads every scenario (shrunk_joint, bank_joint): then it conditions on the answered ones only
    Y1 = Y[:1].copy()
    Y1[0, p.layout_.cols["s1"]] = np.nan
    one = p.predict(Y1, n=30)
    assert np.isnan(one.estimate.iloc[1]) and np.isfinite(one.estimate.iloc[0])
    if "joint" not in one.estimator.iloc[0]:
        assert one.estimate.iloc[0] == pytest.approx(out.estimate.iloc[0], abs=1e-12)
    am = p.artifact_model(30)
    alone = am.evaluate({"s0": Y1[:, am.anchor_sets["s0"].items], "s1": np.full((1, 30), np.nan)})
    prior = p.served_.priors[30]
    x0 = alone[("s0", "anchor")]["estimate"][0]
    want = prior.mean[0] + prior.cov[0, 0] / (prior.cov[0, 0] + prior.noise[0]) * (x0 - prior.mean[0])
    assert alone[("s0", "shrunk_joint")]["estimate"][0] == pytest.approx(np.clip(want, 0, 1), abs=1e-12)
    assert alone[("s0", "shrunk")]["estimate"][0] == pytest.approx(np.clip(want, 0, 1), abs=1e-12)


def test_fitted_state_is_a_few_objects():
    """At most 12 fitted attributes, grouped by job (small_state): the layout, truths, folds and guard decision are
    one object each, and so is everything served (fits, answer bank, priors, the ArtifactModel per n); the digest of
    the inputs it was fitted on is its own, and a refit of the same inputs has the same one."""
    _Y, p = fitted()
    fitted_attrs = set(vars(p)) - set(vars(SmallBoardPredictor()))
    assert fitted_attrs == {
        "layout_",
        "truth_",
        "folds_",
        "counts_",
        "notes_",
        "oof_",
        "choices_",
        "board_rules_",
        "designs_",
        "guard_",
        "served_",
        "input_digest_",
    }
    assert p.layout_.scenarios == list(p.layout_.cols) == ["s0", "s1"] and len(p.layout_.models) == len(_Y)
    Y, w, cols, full, groups, items = world()
    assert p.digest(Y, w, cols, full, groups, items=items) == p.input_digest_
    assert SmallBoardPredictor(**{**FAST, "seed": 1}).digest(Y, w, cols, full, groups, items=items) != p.input_digest_
    Y2 = Y.copy()
    Y2[0, 0] = 1 - Y2[0, 0]
    assert p.digest(Y2, w, cols, full, groups, items=items) != p.input_digest_
    assert p.truth_.t1.shape == p.truth_.t2.shape == (len(_Y), 2) and p.folds_.n == int(p.folds_.ids.max()) + 1
    assert set(p.served_.fits) == set(p.guard_.designs) == {"s0", "s1"} and set(p.served_.priors) == {10, 30}
    assert p.artifact_model(30) is p.served_.models[30]


def test_deterministic_with_seed():
    Y, p = fitted()
    _, w, cols, full, groups, items = world()
    q = SmallBoardPredictor(**FAST).fit(Y, w, cols, full, groups, items=items)
    pd.testing.assert_frame_equal(p.anchor_table(), q.anchor_table())
    pd.testing.assert_frame_equal(p.cv_table(), q.cv_table())
    pd.testing.assert_frame_equal(p.predict(Y), q.predict(Y))
    # the seed matters (so the comparison above can fail): another seed deals other folds
    assert not np.array_equal(family_folds(groups, 4, 0), family_folds(groups, 4, 1))


def test_cv_never_reads_a_held_out_family():
    """Flip every answer of one family: the fold that holds it out fits the same 2PLs and anchors and gives its
    other held-out models the same estimates; every other fold (which trains on that family) changes."""
    Y, p = fitted()
    _, w, cols, full, groups, items = world()
    fam = "fam3"
    f = int(p.folds_.ids[groups == fam][0])
    assert (p.folds_.ids[groups == fam] == f).all()  # families are whole
    assert not np.isin(np.flatnonzero(groups == fam), p.oof_.train_rows[f]).any()
    Y2 = Y.copy()
    Y2[groups == fam] = 1 - Y2[groups == fam]
    q = SmallBoardPredictor(**FAST).fit(Y2, w, cols, full, groups, items=items)

    def same_fit(a, b):
        return all(
            np.array_equal(a[s].irt[D].a, b[s].irt[D].a) and np.array_equal(a[s].irt[D].b, b[s].irt[D].b)
            for s in a
            for D in a[s].irt
        ) and all(
            np.array_equal(a[s].anchors[n][k], b[s].anchors[n][k]) for s in a for n in a[s].anchors for k in (0, 1)
        )

    assert same_fit(p.oof_.fits[f], q.oof_.fits[f])
    others = [g for g in range(p.folds_.n) if g != f]
    assert not any(same_fit(p.oof_.fits[g], q.oof_.fits[g]) for g in others)
    rest = (p.folds_.ids == f) & (groups != fam)  # the fold's other held-out models
    assert rest.any()
    for key, d in p.oof_.base.items():
        for k, x in d.items():
            np.testing.assert_array_equal(x[rest], q.oof_.base[key][k][rest])
    # the answer bank: fold f's holds its training models only (same arrays with the family flipped, as many rows
    # as training models), its held-out models' bank estimates do not move; every other fold's bank does change
    for n, bank in p.oof_.banks[f].items():
        assert len(bank["answers"]) == len(p.oof_.train_rows[f])
        for k in ("answers", "values"):
            np.testing.assert_array_equal(bank[k], q.oof_.banks[f][n][k])
        assert not any(np.array_equal(bank["values"], q.oof_.banks[g][n]["values"]) for g in others)
    for key, d in p.oof_.bank.items():
        for e, x in d.items():
            np.testing.assert_array_equal(x[rest], q.oof_.bank[key][e][rest])
    # the shrinkage prior: fitted on the fold's training models, so its held-out models' shrunk estimates stay
    for key, d in p.oof_.shrink.items():
        for e, x in d.items():
            np.testing.assert_array_equal(x[rest], q.oof_.shrink[key][e][rest])


def test_choice_is_left_out_of_its_fold():
    """The served out-of-fold estimate of a fold comes from a choice (estimator, D, lambda) made on the other folds:
    changing the fold's truths cannot move it (and does move the other folds', whose choice reads them)."""
    rng = np.random.default_rng(1)
    M = 30
    folds, groups = np.arange(M) % 5, np.array([f"g{i}" for i in range(M)])
    truth = rng.uniform(0.2, 0.8, M)
    base = {
        D: {
            "anchor": truth + rng.normal(0, 0.03, M),
            "irt": truth + rng.normal(0, 0.06, M),
            "pirt": truth + rng.normal(0, 0.03, M),
        }
        for D in (1, 2)
    }  # gp-IRT's lambda matters
    bias = {D: np.abs(rng.normal(0, 0.03, M)) for D in (1, 2)}
    var = np.full(M, 0.2)
    ch = choose_scenario("s", 30, 30, base, bias, var, truth, np.full(M, np.nan), folds, groups)
    t2 = truth.copy()
    t2[folds == 0] = rng.uniform(0, 1, (folds == 0).sum())  # the fold's truths only
    ch2 = choose_scenario("s", 30, 30, base, bias, var, t2, np.full(M, np.nan), folds, groups)
    np.testing.assert_array_equal(ch.oof_served[folds == 0], ch2.oof_served[folds == 0])
    assert not np.array_equal(ch.oof_served[folds != 0], ch2.oof_served[folds != 0])
    # every rule's out-of-fold estimates (the CV table's rows) read their lambdas without the fold too
    for r, x, x2 in zip(ch.rules, ch.oof, ch2.oof):
        np.testing.assert_array_equal(x[folds == 0], x2[folds == 0], err_msg=f"{r.estimator} D={r.dim}")
    val = next(i for i, r in enumerate(ch.rules) if r.estimator == "gpirt_val")
    assert not np.array_equal(ch.oof[val][folds != 0], ch2.oof[val][folds != 0])  # the other folds' lambdas read it
    # the served interval allows for the choice: never narrower than the winner's own residuals give
    win = next(i for i, r in enumerate(ch.cv) if r["served_t1"])
    own = symmetric_interval(ch.oof[win], truth, 0.1, "binomial", groups=groups)
    assert ch.interval_t1[ch.t1].q_hi_ >= own.q_hi_ > 0


def test_a_folds_choice_reads_only_the_other_folds():
    """The choice's leave-one-fold-out chooses fold f's rule on the other folds' rows: here irt wins without fold 0
    and the anchors win once fold 0's rows are read, so fold 0 gets irt's estimates and the other folds the anchors'."""
    from tinybench_assets.core.estimation.small_choice import _choice_out_of_fold

    rng = np.random.default_rng(2)
    truth = rng.uniform(0.2, 0.8, 40)
    folds, sign = np.arange(40) % 5, rng.choice([-1, 1], 40)
    on0 = folds == 0
    base = {
        1: {
            "anchor": truth + sign * np.where(on0, 0.0, 0.03),  # MAE 0.024 on every row, 0.03 without fold 0
            "irt": truth + sign * np.where(on0, 0.30, 0.02),  # 0.076 on every row, 0.02 without fold 0
            "pirt": truth,
        }
    }
    rules = [Rule("anchor", 1), Rule("irt", 1)]
    served = _choice_out_of_fold(base, truth, np.ones(40, bool), folds, {f: rules for f in range(5)}, {})
    np.testing.assert_array_equal(served[on0], base[1]["irt"][on0])
    assert (
        choose(rules, base, truth, ~on0, folds) == rules[1]
        and choose(rules, base, truth, folds != 1, folds) == rules[0]
    )
    np.testing.assert_array_equal(served[~on0], base[1]["anchor"][~on0])


def test_served_t1_interval_is_the_pooled_half_width():
    """Every (scenario, n)'s served T1 interval is e -+ the half-width pooled over every scenario and budget from the
    served choices' own out-of-fold residuals (small_intervals.pooled_half_widths on every row)."""
    from tinybench_assets.core.estimation.small_intervals import pooled_half_widths
    from tinybench_assets.core.estimation.small_tables import served_oof_all

    Y, p = fitted()
    est_, truth = served_oof_all(p, p.choices_)
    half = pooled_half_widths(est_, truth, np.ones(len(Y), bool), p.alpha)
    for k, ch in p.choices_.items():
        iv = ch.interval_t1[ch.t1]
        assert iv.scale == "none" and iv.q_hi_ == pytest.approx(half[k]) and iv.q_lo_ == pytest.approx(-half[k]), k
        mae_k = np.nanmean(np.abs(est_[k] - truth[k]))
        assert 1.0 < half[k] / mae_k < 4.0, (k, half[k], mae_k)


def test_bank_served_only_on_a_steady_gain():
    """choose(): the bank replaces the best IRT rule only when its fold-by-fold gain exceeds one standard error.
    A bank better on average through one lucky fold (the case seen on boards of a few dozen models) is not served;
    one better by the same average on every fold is."""
    M = 40
    folds = np.arange(M) % 8
    truth = np.full(M, 0.5)
    irt = truth + 0.04  # MAE 4 points on every fold
    lucky = truth + np.where(folds == 0, 0.0, 0.042)  # exact on fold 0, worse elsewhere: gain 0.33 (se 0.53) points
    steady = truth + 0.035  # 0.5 points better on every fold
    rows = np.ones(M, bool)
    for bank, served in ((lucky, "pirt"), (steady, BANK)):
        base = {1: {"anchor": truth + 0.08, "irt": truth + 0.08, "pirt": irt, "bank": {0.1: bank}}}
        rules = [Rule("anchor", 1), Rule("pirt", 1), Rule("irt", 1), Rule(BANK, 1, eps=0.1)]
        gain, se = fold_gain(irt, bank, truth, rows, folds)
        assert gain > 0  # better on average in both cases
        assert choose(rules, base, truth, rows, folds).estimator == served
    assert fold_gain(irt, irt, truth, rows, np.zeros(M, int))[1] == np.inf  # one fold: no standard error


def test_family_quantile():
    z = np.arange(1.0, 21.0)
    singles = np.arange(20).astype(str)
    for level in (0.5, 0.8, 0.9):
        assert family_quantile(z, singles, level) == conformal_quantile(z, level)
    # one big family of tiny residuals counts once: it cannot pull the quantile down
    zz = np.concatenate([np.full(200, 0.01), np.arange(1.0, 11.0)])
    gg = np.array(["big"] * 200 + [f"s{i}" for i in range(10)])
    assert conformal_quantile(zz, 0.9) == 0.01
    assert family_quantile(zz, gg, 0.9) == 10.0
    assert family_quantile(z[:5], singles[:5], 0.9) == 5.0  # too few families: the largest residual


def test_input_errors_and_capped_n():
    Y, w, cols, full, groups, items = world(n_models=12, n_families=6, items=(20, 40))
    with pytest.raises(ValueError, match="at least 10 models"):
        SmallBoardPredictor(**FAST).fit(Y[:9], w, cols, full[:9], groups[:9])
    with pytest.raises(ValueError, match="at least 2 model families"):
        SmallBoardPredictor(**FAST).fit(Y, w, cols, full, np.full(12, "one"))
    with pytest.raises(ValueError, match="family label per model"):
        SmallBoardPredictor(**FAST).fit(Y, w, cols, full, groups[:5])
    with pytest.raises(ValueError, match="0/1"):
        SmallBoardPredictor(**FAST).fit(Y * 0.5, w, cols, full, groups)
    with pytest.raises(ValueError, match="full_scores"):
        SmallBoardPredictor(**FAST).fit(Y, w, cols, full[:, :1], groups)
    with pytest.raises(ValueError, match="n_values must be distinct"):
        SmallBoardPredictor(n_values=(10, 10)).fit(Y, w, cols, full, groups)
    Y3 = Y.copy()
    Y3[np.ix_([0, 1, 2], cols["s1"])] = np.nan  # three models never ran s1
    with pytest.raises(ValueError, match="scenario 's1': 9 models answered"):
        SmallBoardPredictor(**FAST).fit(Y3, w, cols, full, groups)
    bad = np.array(["a"] * 8 + ["b", "c", "d", "e"])
    with pytest.raises(ValueError, match="one family holds too many"):
        SmallBoardPredictor(**FAST).fit(Y, w, cols, full, bad)
    Y4 = Y.copy()
    Y4[0, cols["s1"]] = np.nan  # one model never ran s1: left out of s1's fits, truths and intervals
    p = SmallBoardPredictor(n_values=(30,), dims=(1,), max_folds=3, n_init=2).fit(Y4, w, cols, None, groups)
    assert np.isnan(p.truth_.t1[0, 1]) and np.isfinite(p.truth_.t1[1:]).all()
    oof = p.oof_table()
    assert oof[(oof.model == "model0") & (oof.scenario == "s1")].estimate.isna().all()
    assert oof[(oof.model != "model0") | (oof.scenario == "s0")].estimate.notna().all()
    assert any("'s0': n=30 capped at its pool of 20" in m for m in p.notes_)
    assert any("no T2" in m for m in p.notes_) and any("6 families" in m for m in p.notes_)
    at = p.anchor_table()
    assert (at[at.scenario == "s0"].item_index.sort_values().to_numpy() == cols["s0"]).all()
    out = p.predict(Y, n=30)
    s0 = out[out.scenario == "s0"]
    np.testing.assert_allclose(s0.estimate, (Y[:, cols["s0"]] * (w[cols["s0"]] / w[cols["s0"]].mean())).mean(1))
    assert out.estimate_t2.isna().all()
    with pytest.raises(ValueError, match="was not prepared"):
        p.to_artifact("x", 10)


def test_served_estimates_are_the_artifacts(tmp_path):
    """to_artifact -> save_artifact -> load_artifact -> estimate_from_artifact / tinybench estimate == predict;
    and the candidates' cross-validated estimates use the very computation the artifact runs."""
    from tinybench_assets.cli.estimate import estimate_cmd

    Y, p = fitted()
    art = p.to_artifact("small-sim", 30, item_texts={"q0": "What?"}, binarization={"rule": "given"})
    eps = {s: p.choices_[(s, 30)].eps for s in p.layout_.scenarios}
    fill = {s: p.choices_[(s, 30)].fill_lam for s in p.layout_.scenarios}
    assert art["learned"] == {
        "file": tb.TREES_FILE,
        "sha256": None,
        "fit_learned": False,
        "models": [],
        "bank": {"models": len(Y), "eps": eps, "fill": fill},
    }
    json_names = {*tb.JSON_BASE, "shrunk", "shrunk_joint"}  # a small board's prior makes shrunk* JSON-evaluable
    assert set(art["json_estimators"]) <= json_names and art["learned_estimators"] == ["bank_joint", "fill"]
    assert art["shrinkage"]["scenarios"] == p.layout_.scenarios and len(art["shrinkage"]["cov"]) == len(
        p.layout_.scenarios
    )
    for s in p.layout_.scenarios:
        assert art["scenarios"][s]["recommended"]["t1"] in json_names
    tb.save_artifact(art, folder=tmp_path)
    loaded = tb.load_artifact(tmp_path)
    served = p.predict(Y, n=30)
    for row in (0, 7, 23):
        ans = {
            it: float(Y[row, p.layout_.items.index(it)])
            for s in loaded["scenario_order"]
            for it in loaded["scenarios"][s]["anchors"]["items"]
        }
        df = tb.estimate_from_artifact(loaded, ans)
        mine = served[served.model == row].reset_index(drop=True)
        for col in ("estimate", "lower", "upper", "estimate_t2", "lower_t2", "upper_t2"):
            np.testing.assert_allclose(df[col].to_numpy(), mine[col].to_numpy(), rtol=0, atol=1e-12)
        assert list(df.estimator) == list(mine.estimator)
        forced = tb.estimate_from_artifact(loaded, ans, estimator="bank_joint")  # the bank read from the file
        am = p.artifact_model(30)
        res = am.evaluate({s: Y[row : row + 1, am.anchor_sets[s].items] for s in am.scenarios}, {"bank_joint"})
        for j, s in enumerate(p.layout_.scenarios):
            for col in ("estimate", "lower", "upper", "estimate_t2", "lower_t2", "upper_t2"):
                assert forced[col].iloc[j] == pytest.approx(float(res[(s, "bank_joint")][col][0]), abs=1e-12)
    (tmp_path / "answers.json").write_text(json.dumps(ans))
    args = argparse.Namespace(
        artifact=str(tmp_path),
        leaderboard=None,
        answers=str(tmp_path / "answers.json"),
        json=True,
        no_learned=False,
        estimator=None,
        allow_missing=False,
        allow_extra=False,
        save=False,
    )
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert estimate_cmd(args) == 0
    cli = json.loads(buf.getvalue())["scenarios"]
    np.testing.assert_allclose([r["estimate"] for r in cli], mine.estimate, atol=1e-12)
    # the CV path (small_folds.base_estimates) computes what the artifact computes, estimator by estimator
    am = p.artifact_model(30)
    res = am.evaluate({s: Y[:, am.anchor_sets[s].items] for s in am.scenarios})
    for s in p.layout_.scenarios:
        ch, fit, c = p.choices_[(s, 30)], p.served_.fits[s], p.layout_.cols[s]
        local, weights = fit.anchors[30]
        mine = base_estimates(Y[:, c[local]], local, weights, fit.irt[ch.dim], p.layout_.w[c])
        for e in ("anchor", "irt", "pirt"):
            np.testing.assert_allclose(res[(s, e)]["estimate"], mine[e], rtol=0, atol=1e-12)
        lam = ch.lambdas["validation"]
        np.testing.assert_allclose(
            res[(s, "gpirt_val")]["estimate"], lam * mine["anchor"] + (1 - lam) * mine["pirt"], atol=1e-12
        )


def test_a_model_stronger_than_the_board_gets_a_full_score_above_the_boards(tmp_path):
    """T2's isotonic maps go on past the board's strongest model (IsotonicCalibrator(tails=True)): a model answering
    every item right gets a full score above every board model's (a clipped map gives it the strongest one's), the
    same through the saved artifact, inside its interval."""
    Y, p = fitted()
    _, _, cols, full, _, items = world()
    strong = np.ones((1, Y.shape[1]))
    out = p.predict(strong, n=30)
    for j, s in enumerate(cols):
        row = out[out.scenario == s].iloc[0]
        cal = p.choices_[(s, 30)].calibration_t2[row.estimator_t2]
        assert cal.slope_ > 0.3  # the world's full score is 0.1 + 0.8 x pool accuracy
        clipped = cal.iso_.y_thresholds_[-1]  # what the map without tails gives past its end
        assert row.estimate_t2 > max(clipped + 0.01, full[:, j].max()), (s, row.estimate_t2, clipped, full[:, j].max())
        assert row.lower_t2 <= row.estimate_t2 <= row.upper_t2 <= 1.0
    got = saved_estimate(p.to_artifact("small-sim", 30), strong, items, 0, tmp_path)
    np.testing.assert_allclose(got.estimate_t2.to_numpy(), out.estimate_t2.to_numpy(), atol=1e-12)


def test_served_t2_interval_comes_from_the_t2_choice_made_without_each_fold():
    """Each row's out-of-selection T2 is the cross-fitted T2 of the rule chosen without its fold (so a fold's full
    scores never choose its own rule), and the served T2 interval is e -+ the pooled half-width on those rows (as
    T1's), not the widest candidate's."""
    from tinybench_assets.core.estimation.small_choice import _t2_choice
    from tinybench_assets.core.estimation.small_intervals import pooled_half_widths

    Y, p = fitted()
    t2 = {k: ch.oof_t2_served for k, ch in p.choices_.items()}
    cols = list(p.layout_.cols)
    truth = {(s, n): p.truth_.t2[:, cols.index(s)] for s, n in t2}
    half = pooled_half_widths(t2, truth, np.ones(len(Y), bool), p.alpha)
    for (s, n), ch in p.choices_.items():
        tt, folds = truth[(s, n)], p.folds_.ids
        at_dim = [
            i for i, r in enumerate(ch.rules) if r.estimator in ch.calibration_t2 and ch.cv[i]["dim"] in (0, ch.dim)
        ]
        for f in np.unique(folds):
            mine = folds == f
            moved = tt.copy()
            moved[mine] = 1 - moved[mine]  # the fold's own full scores do not take part in its choice
            i = _t2_choice(ch, at_dim, moved, np.isfinite(tt) & ~mine, folds)
            np.testing.assert_array_equal(ch.oof_t2_served[mine], ch.oof_t2[i][mine])
        iv = ch.interval_t2[ch.t2]
        assert (
            iv.scale == "none" and iv.q_hi_ == pytest.approx(half[(s, n)]) and iv.q_lo_ == pytest.approx(-half[(s, n)])
        )
        others = [v.q_hi_ for e, v in ch.interval_t2.items() if e != ch.t2]
        assert half[(s, n)] < 0.5 and others


def _bank_by_hand(Yb, Yq, p, anchors, eps):
    """bank_joint of rows Yq from bank rows Yb, written out from bank.py's pure functions (the big predictor's
    formula): own anchor answers + the posterior mean of the bank's accuracy on the other items."""
    cols, w = p.layout_.cols, p.layout_.w
    values = np.column_stack([bank_values(Yb, c, anchors[s][0], w[c]) for s, c in cols.items()])
    keep = np.isfinite(values).any(1)
    at = np.concatenate([cols[s][anchors[s][0]] for s in cols])
    post = posterior_means(Yq[:, at], soft_answers(Yb)[keep][:, at].astype(np.float32), values[keep], eps)
    out = {}
    for k, (s, c) in enumerate(cols.items()):
        local = anchors[s][0]
        seen = np.nan_to_num(Yq[:, c[local]]) @ (w[c][local] / w[c].sum())
        out[s] = seen + post[:, k]
    return out


def test_bank_is_the_training_models_and_the_artifacts():
    """The CV bank of a fold = its training models' answers (by hand); the served bank = every model's; the
    artifact computes the same bank_joint."""
    Y, p = fitted()
    f, n = 1, 30
    test = p.oof_.folds == f
    anchors = {s: p.oof_.fits[f][s].anchors[n] for s in p.layout_.scenarios}
    for e in (BANK_EPS[0], BANK_EPS[-1]):
        mine = _bank_by_hand(Y[p.oof_.train_rows[f]], Y[test], p, anchors, e)
        for s in p.layout_.scenarios:
            np.testing.assert_allclose(p.oof_.bank[(s, n)][e][test], mine[s], rtol=0, atol=1e-12)
    am = p.artifact_model(n)
    res = am.evaluate({s: Y[:, am.anchor_sets[s].items] for s in am.scenarios}, {"bank_joint"})
    for s in p.layout_.scenarios:
        e = p.choices_[(s, n)].eps
        mine = _bank_by_hand(Y, Y, p, {x: p.served_.fits[x].anchors[n] for x in p.layout_.scenarios}, e)
        np.testing.assert_allclose(res[(s, "bank_joint")]["estimate"], mine[s], rtol=0, atol=1e-12)


def test_bank_served_round_trip(tmp_path):
    """bank_joint as the served estimator (forced into the choice): predict == the saved artifact's estimates
    (learned file read back, sha256-checked); without the file the JSON recommendation takes over."""
    import copy

    Y, p0 = fitted()
    p = copy.deepcopy(p0)
    for s in p.layout_.scenarios:
        ch = p.choices_[(s, 30)]
        ch.t1 = ch.t2 = "bank_joint"
    p.served_.models.clear()
    served = p.predict(Y, n=30)
    assert served.estimator.eq("bank_joint").all() and served.estimator_t2.eq("bank_joint").all()
    art = p.to_artifact("small-sim", 30)
    assert all(art["scenarios"][s]["recommended_learned"]["t1"] == "bank_joint" for s in p.layout_.scenarios)
    tb.save_artifact(art, folder=tmp_path)
    loaded = tb.load_artifact(tmp_path)
    row = 5
    ans = {
        it: float(Y[row, p.layout_.items.index(it)])
        for s in loaded["scenario_order"]
        for it in loaded["scenarios"][s]["anchors"]["items"]
    }
    df = tb.estimate_from_artifact(loaded, ans)
    mine = served[served.model == row].reset_index(drop=True)
    assert list(df.estimator) == ["bank_joint"] * 2 and set(df.source) == {tb.TREES_FILE}
    for col in ("estimate", "lower", "upper", "estimate_t2", "lower_t2", "upper_t2"):
        np.testing.assert_allclose(df[col].to_numpy(), mine[col].to_numpy(), rtol=0, atol=1e-12)
    js = tb.estimate_from_artifact(loaded, ans, use_learned=False)
    assert list(js.estimator) == [p.choices_[(s, 30)].t1_json for s in p.layout_.scenarios]
    (tmp_path / tb.TREES_FILE).unlink()
    fallback = tb.estimate_from_artifact(tb.load_artifact(tmp_path), ans)
    assert list(fallback.estimator) == list(js.estimator) and fallback.attrs["notes"]
