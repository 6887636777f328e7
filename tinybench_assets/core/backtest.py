"""Backtest of the anchor estimators over seeded train/test splits of models.

For every split the models are divided into training and test models; an
:class:`~tinybench_assets.core.predictor.AnchorPredictor` is fitted on the training models only
(IRT fits, D, anchors, lambdas, calibration, intervals, choice of estimator) and then estimates every
test model from its anchor answers. Errors are measured against

* T1: the model's balance-weighted accuracy on the whole item pool of the scenario, and
* T2: its real full-benchmark score (``estimate_t2``, the calibrated estimate).

Pure numpy / pandas; the Dagster asset only calls :func:`run_backtest`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .predictor import AnchorPredictor, full_scores_wide, split_models
from .responses import ResponseMatrix


@dataclass
class BacktestResult:
    """Outputs of :func:`run_backtest`.

    estimates : one row per test model x scenario x (clustering, estimator) x n x split with
        estimate, lower, upper, estimate_t2, lower_t2, upper_t2, truth_t1, truth_t2, err_t1, err_t2.
    summary : one row per scenario x clustering x estimator x n (over all splits): MAE and SD of the
        error in accuracy points for T1 and T2, interval coverage and mean width.
    per_split : the same metrics per split.
    lambdas, selection, validation, dims : what each split's predictor chose (training models only).
    timings : seconds per split.
    """

    estimates: pd.DataFrame
    summary: pd.DataFrame
    per_split: pd.DataFrame
    lambdas: pd.DataFrame
    selection: pd.DataFrame
    validation: pd.DataFrame
    dims: pd.DataFrame
    timings: pd.DataFrame = field(default_factory=pd.DataFrame)


def reference_n(n_values) -> int:
    """The anchor budget headline figures are quoted at: 30 when it was run (the issue's bar), else the largest."""
    ns = [int(n) for n in n_values]
    return 30 if 30 in ns else max(ns)


def _metrics(g: pd.DataFrame) -> pd.Series:
    e1 = g.estimate - g.truth_t1
    e2 = g.estimate_t2 - g.truth_t2
    in1 = (g.truth_t1 >= g.lower) & (g.truth_t1 <= g.upper)
    in2 = (g.truth_t2 >= g.lower_t2) & (g.truth_t2 <= g.upper_t2)
    ok2 = np.isfinite(e2)
    return pd.Series({
        "mae_t1": 100 * e1.abs().mean(),
        "sd_t1": 100 * e1.std(ddof=0),
        "bias_t1": 100 * e1.mean(),
        "coverage_t1": in1.mean(),
        "width_t1": 100 * (g.upper - g.lower).mean(),
        "mae_t2": 100 * e2[ok2].abs().mean() if ok2.any() else np.nan,
        "sd_t2": 100 * e2[ok2].std(ddof=0) if ok2.any() else np.nan,
        "coverage_t2": in2[ok2].mean() if ok2.any() else np.nan,
        "width_t2": 100 * (g.upper_t2 - g.lower_t2)[ok2].mean() if ok2.any() else np.nan,
        "n_models": int(len(g)),
    })


def summarize(estimates: pd.DataFrame, by=("scenario", "clustering", "estimator", "n")) -> pd.DataFrame:
    """MAE / SD (accuracy points), coverage and width per group of a backtest's estimates table."""
    return estimates.groupby(list(by), sort=True).apply(_metrics, include_groups=False).reset_index()


def run_backtest(
    matrix: ResponseMatrix,
    full_scores: pd.DataFrame | None = None,
    *,
    n_splits: int = 3,
    test_fraction: float = 0.2,
    seed: int = 0,
    max_train_models: int | None = None,
    max_test_models: int | None = None,
    predictor_params: dict | None = None,
    verbose: bool = False,
    log=None,
) -> BacktestResult:
    """Evaluate every estimator over seeded model splits.

    Parameters
    ----------
    matrix : ResponseMatrix over all scenarios (0/1 scores, NaN where a model lacks a scenario).
    full_scores : long (model, scenario, full_benchmark_score) or wide table of real full-benchmark scores.
    n_splits : number of seeded train/test splits (split k uses seed ``seed + k``).
    test_fraction : share of models in the test set of each split.
    max_train_models, max_test_models : subsample (seeded) the training / test models, for speed.
    predictor_params : keyword arguments of :class:`AnchorPredictor` (its ``seed`` is set per split).
    log : optional callable taking one line of progress (split k of n, its models, elapsed time); ``verbose``
        prints the same lines.

    Returns
    -------
    BacktestResult
    """
    params = dict(predictor_params or {})
    scen = list(pd.unique(matrix.scenarios))
    t2_wide = full_scores_wide(full_scores, matrix.models, scen)
    models = np.asarray(matrix.models, dtype=object)
    frames, lambdas, selections, validations, dims, timings = [], [], [], [], [], []
    say = log or ((lambda line: print(line, flush=True)) if verbose else None)
    start = time.perf_counter()
    for k in range(n_splits):
        t0 = time.perf_counter()
        split_seed = seed + k
        train, test = split_models(len(models), test_fraction, split_seed)
        rng = np.random.default_rng(10_000 + split_seed)
        if max_train_models is not None and len(train) > max_train_models:
            train = np.sort(rng.choice(train, max_train_models, replace=False))
        if max_test_models is not None and len(test) > max_test_models:
            test = np.sort(rng.choice(test, max_test_models, replace=False))
        if say:
            say(f"backtest split {k + 1} of {n_splits}: fitting on {len(train)} training models "
                f"({time.perf_counter() - start:.0f}s elapsed)")
        pred = AnchorPredictor(**{**params, "seed": split_seed})
        pred.fit(matrix, t2_wide.iloc[train].rename_axis("model"), train)
        t_fit = time.perf_counter() - t0
        Yt = matrix.scores[test]
        df = pred.estimate(Yt, models[test], include_random=True, random_seed=100_000 + split_seed)
        t1 = pred.pool_accuracy(Yt)
        t1.index = models[test]
        t1_long = t1.stack().rename("truth_t1")
        t2_long = t2_wide.iloc[test].stack().rename("truth_t2")
        truth = pd.concat([t1_long, t2_long], axis=1)
        truth.index.names = ["model", "scenario"]
        df = df.merge(truth.reset_index(), on=["model", "scenario"], how="left")
        df = df[np.isfinite(df.truth_t1.to_numpy())]
        df["split"] = k
        df["err_t1"] = df.estimate - df.truth_t1
        df["err_t2"] = df.estimate_t2 - df.truth_t2
        frames.append(df)
        lambdas.append(pred.lambdas.assign(split=k))
        selections.append(pred.selection.assign(split=k))
        validations.append(pred.validation_.assign(split=k))
        dims.append(pd.DataFrame([
            {"split": k, "fit": key, "best_dim": sel.best_dim, **{f"err_d{d}": v for d, v in sel.errors.items()}}
            for key, sel in pred.dim_selection_.items()]))
        timings.append({"split": k, "n_train": len(train), "n_fit": pred.n_fit_, "n_val": pred.n_val_,
                        "n_test": len(test), "fit_seconds": t_fit, "total_seconds": time.perf_counter() - t0,
                        **{f"fit_{kk}_seconds": v for kk, v in pred.timings_.items()}})
        if say:
            say(f"backtest split {k + 1} of {n_splits} done: {len(train)} train / {len(test)} test models, "
                f"{time.perf_counter() - t0:.1f}s for this split, {time.perf_counter() - start:.0f}s elapsed")
    estimates = pd.concat(frames, ignore_index=True)
    return BacktestResult(
        estimates=estimates,
        summary=summarize(estimates),
        per_split=summarize(estimates, by=("split", "scenario", "clustering", "estimator", "n")),
        lambdas=pd.concat(lambdas, ignore_index=True),
        selection=pd.concat(selections, ignore_index=True),
        validation=pd.concat(validations, ignore_index=True),
        dims=pd.concat(dims, ignore_index=True),
        timings=pd.DataFrame(timings),
    )


def best_estimators(summary: pd.DataFrame, n: int, target: str = "t1",
                    estimators=("tinybench", "tinybench_own")) -> pd.DataFrame:
    """Rows of a summary for the selected estimators at one n (clustering column collapsed)."""
    s = summary[(summary.n == n) & summary.estimator.isin(estimators)]
    return s.groupby(["estimator", "scenario"])[[f"mae_{target}", f"coverage_{target}"]].mean().reset_index()
