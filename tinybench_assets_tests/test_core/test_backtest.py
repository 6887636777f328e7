"""AnchorPredictor pipeline and the backtest loop, on a simulated IRT world and a real slice."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from tinybench_assets.core.estimation.backtest import run_backtest, summarize
from tinybench_assets.core.estimation.predictor import AnchorPredictor, split_models
from tinybench_assets.core.irt import item_curve
from tinybench_assets.core.responses import ResponseMatrix
from tinybench_assets_tests.conftest import SHARED, _need_shared

torch.set_num_threads(1)

FAST = dict(
    dim_candidates=(1, 2),
    joint_dim_candidates=(1, 2),
    n_init=2,
    clusterings=("correctness",),
    gbm_params={"max_iter": 60},
)


def _world(n_models=360, items=(20, 20), seed=0, missing_frac=0.0):
    """Two scenarios from one 2-d 2PL; scenario "b" has unequal subscenarios; a known full score per scenario."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=(n_models, 2))
    n_items = sum(items)
    a = np.abs(rng.normal(1.0, 0.4, size=(n_items, 2)))
    b = rng.normal(size=n_items)
    P = item_curve(theta, a, b)
    Y = (rng.random(P.shape) < P).astype(float)
    scen = np.array(["a"] * items[0] + ["b"] * items[1], dtype=object)
    subs = np.array(["a"] * items[0] + ["b1"] * 4 + ["b2"] * (items[1] - 4), dtype=object)
    if missing_frac:
        drop = rng.random(n_models) < missing_frac  # these models never ran scenario "b"
        Y[np.ix_(drop, scen == "b")] = np.nan
    models = [f"m{i:04d}" for i in range(n_models)]
    rm = ResponseMatrix(Y, models, [f"{s}.{j}" for j, s in enumerate(scen)], scen, subs)
    acc = rm.accuracy()
    # "full benchmark" score: a monotone, noisy function of the pool accuracy
    full = pd.DataFrame(
        {
            "model": np.repeat(models, 2),
            "scenario": np.tile(["a", "b"], n_models),
            "full_benchmark_score": np.clip(
                0.1 + 0.8 * acc[["a", "b"]].to_numpy().ravel() ** 1.5 + rng.normal(0, 0.01, 2 * n_models), 0, 1
            ),
        }
    )
    return rm, full


def test_estimates_exact_when_anchors_are_all_items():
    rm, full = _world(seed=1)
    train, test = split_models(rm.shape[0], 0.25, seed=0)
    pred = AnchorPredictor(n_values=(20,), **FAST).fit(rm, full, train)
    out = pred.estimate(rm.scores[test], np.asarray(rm.models)[test])
    truth = rm.accuracy().iloc[test]
    for e in ("anchor", "pirt", "pirt_joint", "gpirt", "gpirt_val", "gpirt_joint", "gbm", "gbm_joint"):
        for s in ("a", "b"):
            got = out[(out.estimator == e) & (out.scenario == s)].set_index("model").estimate
            np.testing.assert_allclose(
                got.loc[truth.index].to_numpy(), truth[s].to_numpy(), atol=1e-9, err_msg=f"{e}/{s}"
            )


def test_estimates_read_only_the_anchors():
    rm, full = _world(seed=2, missing_frac=0.2)
    train, test = split_models(rm.shape[0], 0.25, seed=0)
    pred = AnchorPredictor(n_values=(6,), **FAST).fit(rm, full, train)
    Yt = rm.scores[test].copy()
    ref = pred.estimate(Yt)
    anchors = np.concatenate([[rm.items.index(i) for i in v] for v in pred.anchor_items("correctness", 6).values()])
    scrambled = np.where(np.isnan(Yt), np.nan, 1.0 - Yt)  # flip every answer ...
    scrambled[:, anchors] = Yt[:, anchors]  # ... except the anchors
    again = pred.estimate(scrambled)
    pd.testing.assert_frame_equal(ref, again)
    # and the anchors do matter
    flipped = Yt.copy()
    flipped[:, anchors] = np.where(np.isnan(Yt[:, anchors]), np.nan, 1.0 - Yt[:, anchors])
    assert not np.allclose(pred.estimate(flipped).estimate, ref.estimate)
    # models without scenario "b" get no "b" rows
    no_b = np.isnan(Yt[:, rm.scenarios == "b"]).all(1)
    assert no_b.any()
    assert not ref[(ref.scenario == "b") & ref.model.isin(np.flatnonzero(no_b))].shape[0]


def test_predictor_exposes_anchor_lambda_and_selection_tables():
    rm, full = _world(seed=3)
    pred = AnchorPredictor(n_values=(5, 10), **FAST).fit(rm, full)
    at = pred.anchor_table()
    assert set(at.columns) >= {"clustering", "n", "scenario", "item", "weight"}
    np.testing.assert_allclose(at.groupby(["n", "scenario"]).weight.sum().to_numpy(), 1.0)
    lam = pred.lambdas
    assert lam.lambda_tutorial.between(0, 1).all() and lam.lambda_validation.between(0, 1).all()
    sel = pred.selection
    assert set(sel.selector) == {"tinybench", "tinybench_own"}
    assert len(sel) == 2 * 2 * 2


def test_backtest_runs_and_beats_random_on_simulated_data():
    rm, full = _world(n_models=500, items=(30, 30), seed=4)
    res = run_backtest(rm, full, n_splits=2, test_fraction=0.25, seed=0, predictor_params=dict(n_values=(8,), **FAST))
    e = res.estimates
    need = {
        "model",
        "scenario",
        "clustering",
        "estimator",
        "n",
        "split",
        "estimate",
        "lower",
        "upper",
        "estimate_t2",
        "lower_t2",
        "upper_t2",
        "truth_t1",
        "truth_t2",
    }
    assert need <= set(e.columns)
    # one row per test model x scenario x (clustering, estimator) x n x split
    assert not e.duplicated(["model", "scenario", "clustering", "estimator", "n", "split"]).any()
    for k in range(2):
        train, test = split_models(rm.shape[0], 0.25, seed=k)
        assert set(e[e.split == k].model) == set(np.asarray(rm.models)[test])
    s = res.summary.set_index(["scenario", "estimator"])
    for sc in ("a", "b"):
        assert s.loc[(sc, "tinybench"), "mae_t1"] < s.loc[(sc, "random"), "mae_t1"]
        assert s.loc[(sc, "tinybench"), "mae_t2"] < s.loc[(sc, "random"), "mae_t2"]
    # 90% intervals, pooled: near nominal (few hundred test rows per estimator, so a loose band)
    cov = ((e.truth_t1 >= e.lower) & (e.truth_t1 <= e.upper)).mean()
    assert 0.8 <= cov <= 0.97
    again = summarize(e)
    pd.testing.assert_frame_equal(again, res.summary)


def test_backtest_on_a_real_slice():
    _need_shared()
    d = SHARED / "openllm"
    long = pd.concat([pd.read_parquet(d / f"{s}.responses.parquet") for s in ("arc", "truthfulqa")])
    keep = sorted(long.model.unique())[::8]  # ~535 real models
    long = long[long.model.isin(keep)]
    full = pd.concat([pd.read_parquet(d / f"{s}.full_scores.parquet") for s in ("arc", "truthfulqa")])
    rm = ResponseMatrix.from_long(long)
    res = run_backtest(rm, full, n_splits=1, seed=0, predictor_params=dict(n_values=(10,), **FAST))
    s = res.summary.set_index(["scenario", "estimator"])
    for sc in ("arc", "truthfulqa"):
        assert s.loc[(sc, "tinybench"), "mae_t1"] < s.loc[(sc, "random"), "mae_t1"]
        assert s.loc[(sc, "anchor"), "mae_t1"] < s.loc[(sc, "random"), "mae_t1"]
    assert np.isfinite(res.estimates.estimate_t2).all()
    # T2: the calibrated full-score estimate tracks the REAL full-benchmark score better than the raw pool-accuracy
    # estimate does (the item pools are metabench's informative subsets, not the full benchmarks)
    e = res.estimates[(res.estimates.estimator == "tinybench") & np.isfinite(res.estimates.truth_t2)]
    assert len(e) > 50
    for sc, g in e.groupby("scenario"):
        calibrated = (g.estimate_t2 - g.truth_t2).abs().mean()
        raw = (g.estimate - g.truth_t2).abs().mean()
        assert calibrated < raw, (sc, calibrated, raw)
        assert calibrated < s.loc[(sc, "random"), "mae_t2"] / 100


def test_reference_n_is_30_when_run_else_the_largest():
    from tinybench_assets.core.estimation.names import reference_n

    assert reference_n([10, 20, 30, 50]) == 30
    assert reference_n([50, 10]) == 50 and reference_n((5,)) == 5


def test_backtest_in_worker_processes_matches_the_serial_run():
    """n_jobs=2 fits the splits in two spawned one-thread processes: same splits, same estimates (up to float
    summation order), progress logged per split."""
    rm, full = _world(n_models=240, items=(20, 20), seed=5)
    kw = dict(n_splits=2, test_fraction=0.25, seed=0, predictor_params=dict(n_values=(8,), learned=False, **FAST))
    lines: list[str] = []
    serial = run_backtest(rm, full, **kw)
    parallel = run_backtest(rm, full, n_jobs=2, log=lines.append, **kw)
    cols = ["scenario", "clustering", "estimator", "n"]
    a = serial.summary.sort_values(cols).reset_index(drop=True)
    b = parallel.summary.sort_values(cols).reset_index(drop=True)
    pd.testing.assert_frame_equal(a[cols], b[cols])
    np.testing.assert_allclose(a["mae_t1"], b["mae_t1"], atol=0.05)  # points
    assert list(parallel.timings["split"]) == [0, 1]
    assert any("2 worker processes" in line for line in lines)
    assert sum("done" in line for line in lines) == 2
