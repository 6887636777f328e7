"""The pickle-free tiny benchmark on a real slice of openllm: the artifact's estimates (every estimator, the learned
ones from learned_models.npz) equal the pickled predictor's, and its trees equal sklearn's on real features with
missing answers."""

from __future__ import annotations

import functools
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from tinybench_assets import paths
from tinybench_assets.core import tiny_benchmark as tb
from tinybench_assets.core.estimation.base_estimates import features
from tinybench_assets.core.estimation.predictor import AnchorPredictor, split_models
from tinybench_assets.core.responses import ResponseMatrix
from tinybench_assets_tests.test_core.test_tiny_benchmark import COLS, anchor_block, answers_of

torch.set_num_threads(1)
SCENARIOS = ("arc", "gsm8k", "mmlu", "truthfulqa")


@functools.lru_cache(maxsize=None)
def openllm_fit():
    """(matrix, test rows, predictor): 360 seeded openllm models (some lack a scenario), 60 held out."""
    d = Path(paths.default_data_dir()) / "openllm"
    if not d.is_dir():
        pytest.fail(f"real data not found at {d} (set TINYBENCH_DEFAULT_DATA)")
    long = pd.concat([pd.read_parquet(d / f"{s}.responses.parquet") for s in SCENARIOS], ignore_index=True)
    full = pd.concat([pd.read_parquet(d / f"{s}.full_scores.parquet") for s in SCENARIOS], ignore_index=True)
    models = np.random.default_rng(13).choice(sorted(long.model.unique()), 360, replace=False)
    rm = ResponseMatrix.from_long(long[long.model.isin(models)])
    full = full[full.model.isin(models)]
    train, test = split_models(rm.shape[0], 1 / 6, seed=0)
    pred = AnchorPredictor(
        n_values=(10,), dim_candidates=(1, 2), joint_dim_candidates=(2,), n_init=2, gbm_params={"max_iter": 60}, seed=0
    ).fit(rm, full, train)
    return rm, test, pred


@pytest.mark.timeout(600)
@pytest.mark.parametrize("clustering", [None, "not selected"])
def test_openllm_artifact_equals_the_pickled_predictor(tmp_path, clustering):
    rm, test, pred = openllm_fit()
    if clustering == "not selected":  # the other prepared anchor set than the one the predictor serves
        chosen = pred.named_steps["selector"].selection_[(10, SCENARIOS[0], "tinybench")]["t1"][0]
        clustering = next(c for c in pred.clusterings if c != chosen)
    pickled = pickle.loads(pickle.dumps(pred))  # what the pipeline's predictor.pkl holds
    tb.save_artifact(tb.export_tiny_benchmark(pred, leaderboard="openllm", n=10, clustering=clustering), None, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["learned_models.npz", "tiny_benchmark.json"]
    art = tb.load_artifact(tmp_path)
    c = art["clustering"]
    assert len(art["learned"]["models"]) == 16
    Y = rm.scores[test].copy()
    assert np.isnan(Y).all(1).sum() == 0 and np.isnan(Y).any(1).sum() > 0  # some models lack a scenario
    ref = pickled.estimate(Y, np.asarray(rm.models, dtype=object)[test], n_values=[10]).set_index(
        ["model", "scenario", "clustering", "estimator"]
    )
    got = tb.evaluate_artifact(art, anchor_block(art, rm, test))
    assert {e for _, e in got} == set(tb.JSON_BASE) | {"gbm", "gbm_joint", "bank_joint", "fill", "stack", "stack_own"}
    checked = 0
    for (s, e), cols in got.items():
        for i, m in enumerate(np.asarray(rm.models, dtype=object)[test]):
            if (m, s, c, e) not in ref.index:
                assert np.isnan(cols["estimate"][i])
                continue
            np.testing.assert_array_equal(
                [cols[k][i] for k in COLS], ref.loc[(m, s, c, e)][COLS].to_numpy(float), err_msg=f"{s}/{e}/{m}"
            )
            checked += 1
    assert checked > 4 * 13 * 40
    # one model at a time, the recommended (learned) estimators, as `tinybench estimate` computes them
    for row in test[:6]:
        m = rm.models[row]
        df = tb.estimate_from_artifact(art, answers_of(art, rm, row))
        one = pickled.estimate(rm.scores[[row]], [m], n_values=[10]).set_index(["scenario", "clustering", "estimator"])
        for r in df.itertuples(index=False):
            key = (r.scenario, "selected", "tinybench") if clustering is None else (r.scenario, c, r.estimator)
            want = one.loc[key][COLS].to_numpy(float)
            if clustering is not None:  # a given clustering: T2 from its own recommended estimator
                want[3:] = one.loc[(r.scenario, c, r.estimator_t2)][COLS[3:]].to_numpy(float)
            np.testing.assert_array_equal([getattr(r, k) for k in COLS], want)


def test_openllm_trees_equal_sklearn_with_missing_answers(tmp_path):
    rm, test, pred = openllm_fit()
    tb.save_artifact(tb.export_tiny_benchmark(pred, leaderboard="openllm", n=10), None, tmp_path)
    model = tb.load_model(tb.load_artifact(tmp_path), learned=True)
    c = model.c
    Y = rm.scores.copy()
    rng = np.random.default_rng(1)
    Y[rng.random(Y.shape) < 0.3] = np.nan  # unanswered anchors
    lay, st = pred.layout, pred.named_steps
    Y[:40, lay.cols["mmlu"]] = np.nan  # a scenario never run
    _, feats, _ = features(st["anchors"].mask(Y, c, 10, lay.scenarios), lay, st["irt"], st["anchors"], c, 10)
    for key, ens in zip(model.model_keys, model.trees):
        X = feats[(key[3], key[2])]
        assert np.isnan(X).any(1).mean() > 0.5
        np.testing.assert_array_equal(ens.predict(X), st["learned"].models_[key].predict(X), err_msg=str(key))
