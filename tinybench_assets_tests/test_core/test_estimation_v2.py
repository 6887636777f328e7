"""Estimation you can defend: family-grouped splits, the lockbox, bootstrap intervals of the MAE, leakage tests
(test answers never reach the fitted predictor) and coverage of every served estimator's intervals."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from tinybench_assets.core.estimation.backtest import bootstrap_mae_ci, run_backtest, split_plan
from tinybench_assets.core.estimation.groups import grouped_test_mask, lockbox_mask, model_groups
from tinybench_assets.core.estimation.predictor import AnchorPredictor, split_models
from tinybench_assets.core.responses import ResponseMatrix
from tinybench_assets_tests.test_core.test_backtest import FAST, _world

torch.set_num_threads(1)


def test_model_groups_keep_an_authors_variants_of_one_base_together():
    agg = pd.DataFrame(
        {
            "name": ["org/Alpha-7B", "org/Alpha-7B-dpo", "other/Alpha-7B", "org/Beta-13B"],
            "arch": ["MistralForCausalLM", "MistralForCausalLM", "MistralForCausalLM", "LlamaForCausalLM"],
            "size": [7.24, 7.24, 7.24, 13.0],
            "merged": [False, True, False, False],
            "moe": [False] * 4,
        }
    )
    g = model_groups(list(agg.name) + ["org/alpha-7b-unknown-to-the-table", "solo"], agg)
    assert g["org/Alpha-7B"] == g["org/Alpha-7B-dpo"]  # one author's fine-tune and merge of one base
    assert g["org/Alpha-7B"] != g["other/Alpha-7B"]  # another author: another group
    assert g["org/Alpha-7B"] != g["org/Beta-13B"]  # another base
    assert g["org/alpha-7b-unknown-to-the-table"].startswith("org|alpha-7b")  # name rule when the table lacks it
    assert g["solo"] == "|solo"


def test_grouped_splits_never_split_a_family_and_skip_the_lockbox():
    rng = np.random.default_rng(0)
    groups = np.array([f"g{i}" for i in rng.integers(0, 120, 900)], dtype=object)
    box = lockbox_mask(groups, 0.1)
    assert 0.03 < box.mean() < 0.2
    assert np.array_equal(box, lockbox_mask(groups[::-1], 0.1)[::-1])  # a model's side depends on its group only
    plan = split_plan(len(groups), ("grouped", "random"), 3, 0.2, seed=0, groups=groups, exclude=box)
    assert [k for k, _, _ in plan] == ["grouped"] * 3 + ["random"] * 3
    for kind, train, test in plan:
        assert not set(train) & set(test) and len(test) > 50
        assert not box[train].any() and not box[test].any()  # the lockbox is in no split at all
        if kind == "grouped":
            assert not set(groups[train]) & set(groups[test])
    random_test = plan[3][2]
    assert set(groups[plan[3][1]]) & set(groups[random_test])  # a random split does put families on both sides
    with pytest.raises(ValueError, match="groups"):
        split_plan(10, ("grouped",), 1)
    assert np.array_equal(grouped_test_mask(groups, 0.2, 5), grouped_test_mask(groups, 0.2, 5))


def test_bootstrap_interval_of_the_mae_resamples_models():
    rng = np.random.default_rng(1)
    err = np.abs(rng.normal(0, 2, 400))
    lo, hi = bootstrap_mae_ci(err, np.arange(400))
    assert lo < err.mean() < hi and 0.1 < hi - lo < 0.6
    lo4, hi4 = bootstrap_mae_ci(err[:100], np.arange(100))
    assert hi4 - lo4 > 1.5 * (hi - lo)  # fewer models, wider
    # a model's rows from several splits move together: 100 models x 4 splits is as wide as 100 models
    lo_r, hi_r = bootstrap_mae_ci(np.tile(err[:100], 4), np.tile(np.arange(100), 4))
    assert (hi_r - lo_r) == pytest.approx(hi4 - lo4, rel=0.3)
    assert np.isnan(bootstrap_mae_ci([1.0], ["m"])[0])


def _flip_rows(rm: ResponseMatrix, rows) -> ResponseMatrix:
    Y = rm.scores.copy()
    Y[rows] = 1.0 - Y[rows]
    return ResponseMatrix(Y, rm.models, rm.items, rm.scenarios, rm.subscenarios)


def _fitted_state(pred: AnchorPredictor, probe: np.ndarray) -> dict:
    """Everything a fitted predictor chose, as comparable plain values."""
    steps = pred.named_steps
    state = {
        "anchors": pred.anchor_table().round(12).to_dict("records"),
        "lambdas": pred.lambdas.round(12).to_dict("records"),
        "selection": pred.selection.to_dict("records"),
        "validation": pred.validation.round(12).to_dict("records"),
        "dims": {
            k: (v.best_dim, {d: round(e, 12) for d, e in v.errors.items()})
            for k, v in steps["irt"].dim_selection_.items()
        },
        "intervals_t1": {
            k: {
                a: np.round(np.asarray(b, dtype=float), 12).tolist()
                for a, b in vars(v).items()
                if isinstance(b, (int, float, np.ndarray))
            }
            for k, v in steps["calibrators"].t1_intervals_.items()
        },
        "intervals_t2": {
            k: {
                a: np.round(np.asarray(b, dtype=float), 12).tolist()
                for a, b in vars(v).items()
                if isinstance(b, (int, float, np.ndarray))
            }
            for k, v in steps["calibrators"].t2_intervals_.items()
        },
        "served_intervals_t1": {
            k: [round(float(v.q_lo_), 12), round(float(v.q_hi_), 12)] for k, v in steps["served"].intervals_.items()
        },
        "bank": {
            k: (v["eps"], v["fill"], v["answers"].tobytes(), np.round(v["values"], 12).tobytes())
            for k, v in steps["bank"].banks_.items()
        },
        # learned estimators and calibration maps: their outputs on the same probe answers
        "probe": pred.estimate(probe, [f"p{i}" for i in range(len(probe))])[
            ["estimate", "lower", "upper", "estimate_t2"]
        ]
        .round(12)
        .to_numpy()
        .tolist(),
    }
    return state


def test_flipping_every_test_answer_leaves_the_fitted_predictor_identical():
    rm, full = _world(n_models=240, seed=3)
    train, test = split_models(rm.shape[0], 0.25, seed=0)
    params = dict(n_values=(5, 10), **{**FAST, "clusterings": ("correctness", "forward")})  # forward reads answers
    probe = rm.scores[test[:15]]
    a = AnchorPredictor(**params).fit(rm, full, train)
    b = AnchorPredictor(**params).fit(_flip_rows(rm, test), full, train)
    sa, sb = _fitted_state(a, probe), _fitted_state(b, probe)
    assert sa["served_intervals_t1"] and {k[0] for k in a.named_steps["anchors"].sets_} == {"correctness", "forward"}
    for key in sa:
        assert sa[key] == sb[key], f"test answers leaked into the fitted predictor's {key}"
    # the check can fail: flipping TRAINING answers changes the fit
    c = AnchorPredictor(**params).fit(_flip_rows(rm, train[:40]), full, train)
    assert _fitted_state(c, probe)["validation"] != sa["validation"]


def test_backtest_choices_do_not_see_test_answers():
    rm, full = _world(n_models=240, seed=4)
    groups = np.array([f"g{i // 3}" for i in range(rm.shape[0])], dtype=object)
    plan = split_plan(rm.shape[0], ("grouped",), 1, 0.25, seed=0, groups=groups)
    _, train, test = plan[0]
    kw = dict(splits=[(train, test)], predictor_params=dict(n_values=(10,), **FAST), adaptive_n=(5, 10), groups=groups)
    a = run_backtest(rm, full, **kw)
    b = run_backtest(_flip_rows(rm, test), full, **kw)
    for name in ("lambdas", "selection", "validation", "dims"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name), obj=name)
    # the adaptive test's method (IRT or answer bank) and IRT dimension are chosen on validation models too
    for col in ("adaptive_method", "adaptive_dim"):

        def pick(r, col=col):
            return (
                r.estimates[r.estimates.clustering == "adaptive"].groupby(["scenario", "n", "estimator"])[col].first()
            )

        pd.testing.assert_series_equal(pick(a), pick(b))
    assert not np.allclose(a.estimates.estimate, b.estimates.estimate)  # the test answers are what is estimated


def test_every_served_estimator_covers_about_90_percent():
    """Coverage of the served intervals per served estimator and n (not pooled over estimators)."""
    rm, full = _world(n_models=700, items=(60, 60), seed=5)
    res = run_backtest(
        rm, full, n_splits=2, test_fraction=0.3, seed=0, predictor_params=dict(n_values=(10, 20), **FAST)
    )
    served = res.summary[res.summary.estimator.isin(["tinybench", "tinybench_own"])]
    assert len(served) == 2 * 2 * 2  # 2 estimators x 2 scenarios x 2 n
    for (est, n), g in served.groupby(["estimator", "n"]):
        cov = float(np.average(g.coverage_t1, weights=g.n_models))
        assert 0.82 <= cov <= 0.98, f"{est} n={n}: T1 coverage {cov:.3f}"
        ok = g.coverage_t2.notna()
        cov2 = float(np.average(g.coverage_t2[ok], weights=g.n_models[ok]))
        assert 0.82 <= cov2 <= 0.98, f"{est} n={n}: T2 coverage {cov2:.3f}"
    assert (served.mae_t1_lo <= served.mae_t1).all() and (served.mae_t1 <= served.mae_t1_hi).all()


def test_adaptive_column_in_the_backtest_beats_random_items_and_covers():
    rm, full = _world(n_models=600, items=(80, 80), seed=6)
    res = run_backtest(
        rm,
        full,
        n_splits=1,
        test_fraction=0.3,
        seed=0,
        adaptive_n=(10, 20),
        predictor_params=dict(n_values=(10, 20), **FAST),
    )
    s = res.summary.set_index(["scenario", "clustering", "estimator", "n"])
    for sc in ("a", "b"):
        for n in (10, 20):
            ad = s.loc[(sc, "adaptive", "adaptive", n)]
            assert ad.mae_t1 < s.loc[(sc, "random", "random", n)].mae_t1, (sc, n)
            assert 0.75 <= ad.coverage_t1 <= 1.0
        assert s.loc[(sc, "adaptive", "adaptive", 20)].mae_t1 < s.loc[(sc, "adaptive", "adaptive", 10)].mae_t1
    assert {"adaptive_irt", "adaptive_pirt", "adaptive_gpirt", "adaptive_bank"} <= set(res.estimates.estimator)
    # the served method at each n is the one with the lower VALIDATION error: both are reported beside it
    served = res.estimates[res.estimates.estimator == "adaptive"].groupby(["scenario", "n"]).adaptive_method.nunique()
    assert (served == 1).all()
    assert res.estimates[res.estimates.clustering == "adaptive"].estimate_t2.isna().all()


def test_grouped_validation_holds_out_whole_families():
    rm, full = _world(n_models=240, seed=7)
    groups = np.array([f"g{i // 4}" for i in range(rm.shape[0])], dtype=object)
    train, _ = split_models(rm.shape[0], 0.25, seed=0)
    pred = AnchorPredictor(n_values=(10,), **FAST).fit(rm, full, train, groups=groups)
    split = pred.named_steps["split"]
    assert split.validation_split_ == "grouped" and 0.1 < len(split.val_rows_) / len(train) < 0.45
    # whole families; the strongest training models are only marked (the frontier probe fits without them)
    assert len(split.strong_rows_) == int(0.05 * len(train)) and not set(groups[split.fit_rows_]) & set(
        groups[split.val_rows_]
    )
    assert set(split.fit_rows_) | set(split.val_rows_) <= set(train)
    plain = AnchorPredictor(n_values=(10,), **FAST).fit(rm, full, train).named_steps["split"]
    assert plain.validation_split_ == "random" and set(groups[plain.fit_rows_]) & set(groups[plain.val_rows_])
