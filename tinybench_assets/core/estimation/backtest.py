"""Backtest of the anchor estimators over seeded train/test splits of models.

For every split the models are divided into training and test models; an
:class:`~tinybench_assets.core.estimation.predictor.AnchorPredictor` is fitted on the training models only
(IRT fits, D, anchors, lambdas, calibration, intervals, choice of estimator) and then estimates every
test model from its anchor answers. Errors are measured against

* T1: the model's balance-weighted accuracy on the whole item pool of the scenario, and
* T2: its real full-benchmark score (``estimate_t2``, the calibrated estimate).

Pure numpy / pandas; the Dagster asset only calls :func:`run_backtest`.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..parallel import init_worker
from ..responses import ResponseMatrix
from .backtest_adaptive import adaptive_rows
from .frontier import FRONTIER_FRACTION, frontier_split
from .groups import grouped_test_mask
from .predictor import AnchorPredictor, full_scores_wide, split_models
from .twins import twin_mask


@dataclass
class BacktestResult:
    """Outputs of :func:`run_backtest`.

    estimates : one row per test model x scenario x (clustering, estimator) x n x split with
        estimate, lower, upper, estimate_t2, lower_t2, upper_t2, truth_t1, truth_t2, err_t1, err_t2, and twin
        (the test model has a twin among the split's training models on that scenario: core/estimation/twins.py;
        figures on twin-free models are those of a new, distinct model).
    summary : one row per scenario x clustering x estimator x n (over all splits): MAE and SD of the
        error in accuracy points for T1 and T2, interval coverage and mean width.
    per_split : the same metrics per split.
    lambdas, selection, validation, dims : what each split's predictor chose (training models only).
    timings : seconds per split.
    """

    estimates: pd.DataFrame
    lambdas: pd.DataFrame
    selection: pd.DataFrame
    validation: pd.DataFrame
    dims: pd.DataFrame
    timings: pd.DataFrame = field(default_factory=pd.DataFrame)

    # computed when first read (each is a bootstrap over ~10^5-10^6 rows: ~6 s on openllm's two cold-run splits)
    @functools.cached_property
    def summary(self) -> pd.DataFrame:
        return summarize(self.estimates)

    @functools.cached_property
    def per_split(self) -> pd.DataFrame:
        return summarize(self.estimates, by=("split", "scenario", "clustering", "estimator", "n"))


BOOTSTRAP_RESAMPLES = 400


def bootstrap_mae_ci(
    abs_err, models, level: float = 0.95, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0
) -> tuple[float, float]:
    """Percentile interval of the MAE over a bootstrap of the TEST MODELS (a model's rows from several splits
    are resampled together). abs_err, models : shape (rows,). Returns (low, high) in the units of abs_err."""
    abs_err = np.asarray(abs_err, dtype=float)
    ok = np.isfinite(abs_err)
    if ok.sum() < 2:
        return (np.nan, np.nan)
    codes, uniq = pd.factorize(np.asarray(models, dtype=object)[ok])
    tot = np.bincount(codes, weights=abs_err[ok])
    cnt = np.bincount(codes).astype(float)
    idx = np.random.default_rng(seed).integers(0, len(uniq), (resamples, len(uniq)))
    maes = tot[idx].sum(1) / cnt[idx].sum(1)
    q = (1 - level) / 2
    return float(np.quantile(maes, q)), float(np.quantile(maes, 1 - q))


def _metrics(g: pd.DataFrame) -> pd.Series:
    e1 = g.estimate - g.truth_t1
    e2 = g.estimate_t2 - g.truth_t2
    in1 = (g.truth_t1 >= g.lower) & (g.truth_t1 <= g.upper)
    in2 = (g.truth_t2 >= g.lower_t2) & (g.truth_t2 <= g.upper_t2)
    ok2 = np.isfinite(e2)
    lo1, hi1 = bootstrap_mae_ci(100 * e1.abs().to_numpy(), g.model.to_numpy())
    lo2, hi2 = bootstrap_mae_ci(100 * e2.abs().to_numpy(), g.model.to_numpy())
    return pd.Series(
        {
            "mae_t1": 100 * e1.abs().mean(),
            "mae_t1_lo": lo1,
            "mae_t1_hi": hi1,
            "sd_t1": 100 * e1.std(ddof=0),
            "bias_t1": 100 * e1.mean(),
            "bias_t2": 100 * e2[ok2].mean() if ok2.any() else np.nan,
            "coverage_t1": in1.mean(),
            "width_t1": 100 * (g.upper - g.lower).mean(),
            "mae_t2": 100 * e2[ok2].abs().mean() if ok2.any() else np.nan,
            "mae_t2_lo": lo2,
            "mae_t2_hi": hi2,
            "sd_t2": 100 * e2[ok2].std(ddof=0) if ok2.any() else np.nan,
            "coverage_t2": in2[ok2].mean() if ok2.any() else np.nan,
            "width_t2": 100 * (g.upper_t2 - g.lower_t2)[ok2].mean() if ok2.any() else np.nan,
            "n_models": int(len(g)),
        }
    )


def summarize(estimates: pd.DataFrame, by=("scenario", "clustering", "estimator", "n")) -> pd.DataFrame:
    """MAE / SD (accuracy points), coverage and width per group of a backtest's estimates table; ``mae_*_lo`` /
    ``mae_*_hi`` are the 95 % bootstrap interval of the MAE over test models."""
    return estimates.groupby(list(by), sort=True).apply(_metrics, include_groups=False).reset_index()


def summarize_by_kind(estimates: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """:func:`summarize` per split kind ("grouped", "random", ...) of a backtest's estimates, kinds in run order."""
    return {kind: summarize(g) for kind, g in estimates.groupby("split_kind", sort=False)}


def _split_indices(n_models, k, test_fraction, seed, max_train_models, max_test_models, groups=None, exclude=None):
    """Training and test rows of split k: a seeded random split of models, or with ``groups`` (str per model)
    a grouped one (whole groups to one side, :func:`~tinybench_assets.core.estimation.groups.grouped_test_mask`). Rows
    where ``exclude`` is True (the lockbox) are on neither side."""
    split_seed = seed + k
    if groups is None:
        train, test = split_models(n_models, test_fraction, split_seed)
    else:
        is_test = grouped_test_mask(groups, test_fraction, split_seed)
        train, test = np.flatnonzero(~is_test), np.flatnonzero(is_test)
    if exclude is not None:
        exclude = np.asarray(exclude, dtype=bool)
        train, test = train[~exclude[train]], test[~exclude[test]]
    rng = np.random.default_rng(10_000 + split_seed)
    if max_train_models is not None and len(train) > max_train_models:
        train = np.sort(rng.choice(train, max_train_models, replace=False))
    if max_test_models is not None and len(test) > max_test_models:
        test = np.sort(rng.choice(test, max_test_models, replace=False))
    return train, test


def split_plan(
    n_models: int,
    kinds=("random",),
    n_splits: int = 3,
    test_fraction: float = 0.2,
    seed: int = 0,
    groups=None,
    exclude=None,
    max_train_models=None,
    max_test_models=None,
    strength=None,
    frontier_fraction: float = FRONTIER_FRACTION,
) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(kind, training rows, test rows) of ``n_splits`` seeded splits per kind, kinds in order.

    kinds : "random" (models at random), "grouped" (whole families to one side; needs ``groups``, a str per
    model) and/or "frontier" (the strongest ``frontier_fraction`` of the models by ``strength``, their mean pool
    accuracy over the scenarios (:func:`board_strength`), held out; one split: :func:`frontier_split`). Split k of a
    kind uses seed ``seed + k``. ``exclude`` (bool per model, the lockbox) keeps models out of every split.
    """
    if not kinds:
        raise ValueError("no split kind given: use 'random', 'grouped' and/or 'frontier'")
    plan = []
    for kind in kinds:
        if kind not in ("random", "grouped", "frontier"):
            raise ValueError(f"unknown split kind {kind!r}: use 'random', 'grouped' or 'frontier'")
        if kind == "grouped" and groups is None:
            raise ValueError("grouped splits need a family key per model (groups)")
        if kind == "frontier":
            if strength is None:
                raise ValueError("a frontier split needs each model's strength (board_strength)")
            plan.append(("frontier", *frontier_split(strength, frontier_fraction, seed, exclude, max_train_models)))
            continue
        for k in range(n_splits):
            train, test = _split_indices(
                n_models,
                k,
                test_fraction,
                seed,
                max_train_models,
                max_test_models,
                groups if kind == "grouped" else None,
                exclude,
            )
            plan.append((kind, train, test))
    return plan


def twin_table(matrix: ResponseMatrix, train, test) -> pd.DataFrame:
    """(test models x scenarios) bool: whether the test model has a twin among the training models on that scenario
    (twins.twin_mask: agreement on at least 99 % of the items both answered)."""
    models = np.asarray(matrix.models, dtype=object)
    out = {}
    for s in pd.unique(matrix.scenarios):
        c = np.flatnonzero(matrix.scenarios == s)
        out[s] = twin_mask(matrix.scores[np.ix_(test, c)], matrix.scores[np.ix_(train, c)])
    return pd.DataFrame(out, index=models[test])


def _run_split(k, matrix, t2_wide, train, test, params, seed, adaptive_n=(), groups=None) -> dict:
    """Fit a fresh predictor on split k's training models and estimate its test models (one split's outputs)."""
    t0 = time.perf_counter()
    split_seed = seed + k
    models = np.asarray(matrix.models, dtype=object)
    pred = AnchorPredictor(**{**params, "seed": split_seed})
    pred.fit(matrix, t2_wide.iloc[train].rename_axis("model"), train, groups=groups)
    t_fit = time.perf_counter() - t0
    Yt = matrix.scores[test]
    df = pred.estimate(Yt, models[test], include_random=True, random_seed=100_000 + split_seed)
    if adaptive_n:
        ta = time.perf_counter()
        extra = adaptive_rows(pred, matrix, np.asarray(test), adaptive_n)
        df = pd.concat([df, extra], ignore_index=True) if len(extra) else df
        pred.timings_["adaptive"] = time.perf_counter() - ta
    t1 = pred.pool_accuracy(Yt)
    t1.index = models[test]
    t1_long = t1.stack().rename("truth_t1")
    t2_long = t2_wide.iloc[test].stack().rename("truth_t2")
    truth = pd.concat([t1_long, t2_long, twin_table(matrix, train, test).stack().rename("twin")], axis=1)
    truth.index.names = ["model", "scenario"]
    df = df.merge(truth.reset_index(), on=["model", "scenario"], how="left")
    df = df[np.isfinite(df.truth_t1.to_numpy())]
    df["split"] = k
    df["err_t1"] = df.estimate - df.truth_t1
    df["err_t2"] = df.estimate_t2 - df.truth_t2
    return {
        "estimates": df,
        "lambdas": pred.lambdas.assign(split=k),
        "selection": pred.selection.assign(split=k),
        "validation": pred.validation.assign(split=k),
        "dims": pd.DataFrame(
            [
                {"split": k, "fit": key, "best_dim": sel.best_dim, **{f"err_d{d}": v for d, v in sel.errors.items()}}
                for key, sel in pred.named_steps["irt"].dim_selection_.items()
            ]
        ),
        "timing": {
            "split": k,
            "n_train": len(train),
            "n_fit": pred.named_steps["split"].n_fit_,
            "n_val": pred.named_steps["split"].n_val_,
            "n_test": len(test),
            "fit_seconds": t_fit,
            "total_seconds": time.perf_counter() - t0,
            **{f"fit_{kk}_seconds": v for kk, v in pred.timings_.items()},
        },
    }


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
    n_jobs: int = 1,
    groups=None,
    exclude=None,
    splits=None,
    adaptive_n=(),
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
    groups : a family key per model (str, shape (n_models,), :func:`~.groups.model_groups`):
        seeded splits are grouped (whole families to one side; None: random model splits), and every split's
        predictor holds out whole families as its validation models (see :meth:`AnchorPredictor.fit`).
    exclude : bool per model; those models (the lockbox) are in no split, neither training nor test.
    splits : explicit splits instead of seeded ones: [(kind, train rows, test rows), ...] as :func:`split_plan`
        gives (the benchmark adds its lockbox line), or [(train rows, test rows), ...] (kind "random").
        ``estimates`` and ``timings`` carry each split's ``split_kind``.
    adaptive_n : also run adaptive tests of these lengths on every test model
        (:func:`.backtest_adaptive.adaptive_rows`).
    n_jobs : splits fitted at once, each in its own process with one thread (1: in this process, with the
        caller's torch threads). Measured on 2 cores: two one-thread fits at once finish in 190 s where two
        two-thread fits in a row take 335 s. Every split is seeded, so the result does not depend on n_jobs
        beyond floating-point summation order.

    Returns
    -------
    BacktestResult
    """
    params = dict(predictor_params or {})
    scen = list(pd.unique(matrix.scenarios))
    t2_wide = full_scores_wide(full_scores, matrix.models, scen)
    say = log or ((lambda line: print(line, flush=True)) if verbose else None)
    start = time.perf_counter()
    kinds, splits = _kinds_and_splits(
        splits, len(matrix.models), groups, exclude, n_splits, test_fraction, seed, max_train_models, max_test_models
    )
    n_splits = len(splits)
    outputs: dict[int, dict] = {}

    def done(k: int, out: dict) -> None:
        outputs[k] = out
        t = out["timing"]
        if say:
            say(
                f"backtest split {k + 1} of {n_splits} done ({len(outputs)} of {n_splits} finished): {t['n_train']} "
                f"train / {t['n_test']} test models, {t['total_seconds']:.1f}s for this split, "
                f"{time.perf_counter() - start:.0f}s elapsed"
            )

    args = (matrix, t2_wide, params, seed, tuple(adaptive_n), groups)
    _fit_splits(splits, max(1, min(int(n_jobs), n_splits)), args, done, say, start)
    return _collect([outputs[k] for k in range(n_splits)], kinds)


def _kinds_and_splits(
    splits, n_models, groups, exclude, n_splits, test_fraction, seed, max_train_models, max_test_models
) -> tuple[list, list]:
    """(split kinds, [(training rows, test rows)]) of a backtest: ``splits`` as :func:`run_backtest` takes them
    ((kind, train, test) or (train, test), kind "random"), or when None the seeded :func:`split_plan` (grouped when
    ``groups`` is given, else random)."""
    if splits is None:
        splits = split_plan(
            n_models,
            ("grouped",) if groups is not None else ("random",),
            n_splits,
            test_fraction,
            seed,
            groups,
            exclude,
            max_train_models,
            max_test_models,
        )
    return [sp[0] if len(sp) == 3 else "random" for sp in splits], [tuple(sp[-2:]) for sp in splits]


def _fit_splits(splits: list, n_jobs: int, args: tuple, done, say, start: float) -> None:
    """Every split's ``_run_split`` (args: matrix, T2, predictor params, seed, adaptive lengths, groups), in this
    process (n_jobs 1) or in ``n_jobs`` spawned one-thread workers; ``done(k, output)`` as each finishes."""
    matrix, t2_wide, params, seed, adaptive_n, groups = args
    n_splits = len(splits)
    if n_jobs == 1:
        for k, (train, test) in enumerate(splits):
            if say:
                say(
                    f"backtest split {k + 1} of {n_splits}: fitting on {len(train)} training models "
                    f"({time.perf_counter() - start:.0f}s elapsed)"
                )
            done(k, _run_split(k, matrix, t2_wide, train, test, params, seed, adaptive_n, groups))
        return
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed

    if say:
        say(f"backtest: {n_splits} splits in {n_jobs} worker processes (one thread each)")
    with ProcessPoolExecutor(
        n_jobs, mp_context=mp.get_context("spawn"), initializer=init_worker, initargs=(1,)
    ) as pool:
        futures = {
            pool.submit(_run_split, k, matrix, t2_wide, train, test, params, seed, adaptive_n, groups): k
            for k, (train, test) in enumerate(splits)
        }
        for fut in as_completed(futures):
            done(futures[fut], fut.result())


def _collect(outs: list, kinds: list) -> BacktestResult:
    """The splits' outputs in split order, each row tagged with its split kind."""
    for k, o in enumerate(outs):
        o["estimates"]["split_kind"] = kinds[k]
        o["timing"]["split_kind"] = kinds[k]
    return BacktestResult(
        estimates=pd.concat([o["estimates"] for o in outs], ignore_index=True),
        lambdas=pd.concat([o["lambdas"] for o in outs], ignore_index=True),
        selection=pd.concat([o["selection"] for o in outs], ignore_index=True),
        validation=pd.concat([o["validation"] for o in outs], ignore_index=True),
        dims=pd.concat([o["dims"] for o in outs], ignore_index=True),
        timings=pd.DataFrame([o["timing"] for o in outs]),
    )
