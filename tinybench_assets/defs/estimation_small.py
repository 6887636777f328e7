"""Small leaderboards (``min_small_models`` to ``min_models`` - 1 models, default 10-49) in the estimation assets.

Such a board has no models to spare for a held-out share, so one
:class:`~tinybench_assets.core.estimation.small_board.SmallBoardPredictor` (leave-family-out cross-validation,
core/estimation/small_*.py) serves all four estimation assets: ``anchor_sets`` fits and saves it, ``model_estimates``
scores every model of the board through the tiny benchmark it serves, ``estimation_backtest`` reports its out-of-fold
figures (the honest ones: each model estimated by a predictor that never saw its family), and ``tiny_benchmark``
exports its artifact (same format: ``tinybench estimate`` scores a new model from it). This module shapes its
outputs into the store's tables; the assets call it where the board is small.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tinybench_assets import paths
from tinybench_assets.core.estimation import estimators as est
from tinybench_assets.core.estimation.names import reference_n
from tinybench_assets.core.estimation.small_state import BoardLayout
from tinybench_assets.core.responses import ResponseMatrix
from tinybench_assets.io import plots

SELECTOR = "small_board_cv"  # estimator_selection.selector of a small board
SPLIT_KIND = "leave_family_out"  # backtest_summary.split_kind of a small board
CLUSTERING = "correctness"


def too_small(
    board: str, n_models: int, sizes: dict[str, tuple[int, int]], config, repeated_ids: bool = False
) -> str | None:
    """Why a leaderboard gets no estimation assets, or None: fewer than ``min_small_models`` models (in all, or
    answering one of its scenarios), item ids repeated across the scenarios of a small board, or a scenario with fewer
    than ``min_items`` items. ``sizes``: {scenario: (items, models that answered it)}."""
    answered = min((m for _, m in sizes.values()), default=n_models)
    if min(n_models, answered) < config.min_small_models:
        low = [s for s, (_, m) in sizes.items() if m < config.min_small_models]
        return (
            f"{board} has {n_models} models"
            + (
                f" (scenario(s) {', '.join(sorted(low))} answered by fewer)"
                if low and n_models >= config.min_small_models
                else ""
            )
            + f", fewer than min_small_models={config.min_small_models}: too few to cross-validate anchors, "
            "estimators and intervals"
        )
    if repeated_ids and n_models < config.min_models:
        return (
            f"{board}: item ids repeat across its scenarios; a small leaderboard's tiny benchmark names each anchor "
            "by its id alone, so ids must be unique across the leaderboard (prefix them with the scenario)"
        )
    few = {s: n for s, (n, _) in sizes.items() if n < config.min_items}
    if few:
        return (
            f"{board}: scenario(s) {', '.join(f'{s} ({n} items)' for s, n in sorted(few.items()))} have fewer than "
            f"min_items={config.min_items} items: no pool to choose anchors from"
        )
    return None


def is_small(n_models: int, config) -> bool:
    return config.min_small_models <= n_models < config.min_models


def board_arrays(matrix: ResponseMatrix, full: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, dict, np.ndarray]:
    """(Y (M, I) 0/1, w (I,), {scenario: columns} in the matrix's order, T2 (M, S) full scores, NaN where unknown)."""
    order = list(dict.fromkeys(matrix.scenarios.tolist()))
    cols = {str(s): np.flatnonzero(matrix.scenarios == s) for s in order}
    t2 = (
        full.pivot_table(index="model", columns="scenario", values="full_benchmark_score", aggfunc="last")
        if len(full)
        else pd.DataFrame()
    )
    T2 = (
        t2.reindex(index=matrix.models, columns=list(cols)).to_numpy(dtype=float)
        if len(t2)
        else np.full((len(matrix.models), len(cols)), np.nan)
    )
    return matrix.scores, matrix.balance_weights(), cols, T2


def fit_small(matrix: ResponseMatrix, full: pd.DataFrame, groups: np.ndarray, config, device: str, saved=None):
    """(the board's SmallBoardPredictor, whether it was reused). ``saved`` = (model_store, board): reuse the predictor
    anchor_sets saved when it was fitted on exactly these inputs and settings (equal ``digest``), as the backtest
    does; else fit."""
    # lazy: loads torch and scikit-learn (~2.2 s)
    from tinybench_assets.core.estimation.small_board import SmallBoardPredictor

    Y, w, cols, T2 = board_arrays(matrix, full)
    params = dict(
        n_values=tuple(int(n) for n in getattr(config, "small_n_values", config.n_values)),
        alpha=float(config.alpha),
        seed=int(getattr(config, "seed", 0)),
    )
    pred = SmallBoardPredictor(**params, device=device)
    inputs = dict(items=matrix.items, models=matrix.models, subscenarios=matrix.subscenarios)
    if saved is not None:
        try:
            old = saved[0].load_predictor(saved[1])
        except Exception:  # noqa: BLE001 - none saved, or unreadable: fit
            old = None
        digest = pred.digest(Y, w, cols, T2, groups, **inputs)
        current = isinstance(old, SmallBoardPredictor) and isinstance(getattr(old, "layout_", None), BoardLayout)
        if current and getattr(old, "input_digest_", None) == digest:  # fitted on these inputs, in today's layout
            return old, True
    return pred.fit(Y, w, cols, T2, groups, **inputs), False


def anchor_tables(pred) -> dict[str, pd.DataFrame]:
    """The ``anchors``, ``gpirt_lambdas``, ``estimator_selection`` and ``estimator_validation`` rows of a small board."""
    anchors = pred.anchor_table()
    counts = anchors.groupby(["scenario", "n"]).size().rename("n_anchors").reset_index()
    anchors = anchors.merge(counts, on=["scenario", "n"]).assign(clustering=CLUSTERING)
    lam, sel = [], []
    for (s, n), ch in pred.choices_.items():
        lam.append(
            {
                "scenario": s,
                "clustering": CLUSTERING,
                "n": n,
                "fit": "sep",
                "lambda_tutorial": ch.lambdas["tutorial"],
                "lambda_validation": ch.lambdas["validation"],
                "b": ch.lambdas["b"],
                "v": ch.lambdas["v"],
            }
        )
        sel.append(
            {
                "scenario": s,
                "n": n,
                "selector": SELECTOR,
                "clustering_t1": CLUSTERING,
                "estimator_t1": ch.t1,
                "clustering_t2": CLUSTERING,
                "estimator_t2": ch.t2,
            }
        )
    cv = pred.cv_table()
    served = cv.estimator == "served"
    cv = cv.assign(
        estimator=np.where(
            served, "tinybench", np.where(cv.estimator == "anchor", "anchor", cv.estimator + "_d" + cv.dim.astype(str))
        )
    )
    validation = cv.rename(columns={"cv_mae_t1": "val_mae_t1", "cv_mae_t2": "val_mae_t2", "n_models": "n_val"})
    validation = validation.assign(clustering=CLUSTERING)
    return {
        "anchors": anchors[["scenario", "clustering", "n", "n_anchors", "item", "item_index", "weight"]],
        "gpirt_lambdas": pd.DataFrame(lam),
        "estimator_selection": pd.DataFrame(sel),
        "estimator_validation": validation[
            ["scenario", "clustering", "n", "estimator", "val_mae_t1", "val_mae_t2", "n_val"]
        ].drop_duplicates(["scenario", "n", "estimator"]),
    }


def board_estimates(pred, matrix: ResponseMatrix, full: pd.DataFrame) -> pd.DataFrame:
    """Every model of the board estimated from its anchor answers through the served tiny benchmark (every JSON
    estimator, plus ``tinybench``: the served choice with its interval), against T1 and T2. In-sample: these models
    trained the predictor; the honest figures are the backtest's out-of-fold ones."""
    Y, w, cols, T2 = board_arrays(matrix, full)
    models = np.asarray(matrix.models, dtype=object)
    parts = []
    for n in pred.n_values:
        am = pred.artifact_model(int(n))
        Ya = {s: Y[:, am.anchor_sets[s].items] for s in pred.layout_.scenarios}
        for (s, e), r in am.evaluate(Ya).items():
            parts.append(
                pd.DataFrame(
                    {
                        "model": models,
                        "scenario": s,
                        "estimator": e,
                        "n": int(n),
                        **{
                            k: np.asarray(r[k], dtype=float)
                            for k in ("estimate", "lower", "upper", "estimate_t2", "lower_t2", "upper_t2")
                        },
                    }
                )
            )
        served = pred.predict(Y, n=int(n), models=models)
        parts.append(served.assign(estimator="tinybench").drop(columns=["estimator_t2", "answered"]))
    df = pd.concat(parts, ignore_index=True).assign(clustering=CLUSTERING)
    truth = []
    for j, (s, c) in enumerate(cols.items()):
        has = ~np.isnan(Y[:, c]).all(1)
        t1 = np.full(len(models), np.nan)
        t1[has] = est.weighted_accuracy(Y[has][:, c], w[c])
        truth.append(pd.DataFrame({"model": models, "scenario": s, "truth_t1": t1, "truth_t2": T2[:, j]}))
    return df.merge(pd.concat(truth), on=["model", "scenario"], how="inner")


def _mae_ci(err: np.ndarray, seed: int, reps: int = 1000) -> tuple[float, float]:
    """95 % bootstrap interval of the mean absolute error (accuracy points) over models."""
    if len(err) < 2:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    boots = np.abs(err)[rng.integers(0, len(err), size=(reps, len(err)))].mean(1)
    return float(np.percentile(boots, 2.5)), float(np.percentile(boots, 97.5))


def backtest_summary(pred, seed: int = 0, Y: np.ndarray | None = None) -> pd.DataFrame:
    """The backtest_summary rows of a small board from its out-of-fold estimates: per scenario x estimator x n, the
    MAE (with a bootstrap interval over models), SD, bias and, for the served choice (``tinybench``), the coverage and
    width of its interval applied to the out-of-fold estimates, each fold's interval calibrated on the other folds
    (``SmallBoardPredictor.oof_intervals``). With the board's answers ``Y`` (M, I), also the baseline the served
    estimate must beat (:func:`random_rows`). Accuracy points."""
    oof = pred.oof_table()
    oof = oof.assign(
        estimator=np.where(
            oof.estimator == "served",
            "tinybench",
            np.where(oof.estimator == "anchor", "anchor", oof.estimator + "_d" + oof.dim.astype(str)),
        )
    )
    rows, budgets = [], pred.budget_table().set_index(["scenario", "n"])
    for (s, e, n), g in oof.groupby(["scenario", "estimator", "n"], sort=True):
        g = g[np.isfinite(g.estimate) & np.isfinite(g.truth_t1)]
        if g.empty:
            continue
        err = 100 * (g.estimate - g.truth_t1).to_numpy()
        lo, hi = _mae_ci(err, seed)
        row = {
            "split_kind": SPLIT_KIND,
            "scenario": s,
            "clustering": CLUSTERING,
            "estimator": e,
            "n": int(n),
            "mae_t1": float(np.abs(err).mean()),
            "mae_t1_lo": lo,
            "mae_t1_hi": hi,
            "sd_t1": float(err.std()),
            "bias_t1": float(err.mean()),
            "coverage_t1": np.nan,
            "width_t1": np.nan,
            "mae_t2": np.nan,
            "mae_t2_lo": np.nan,
            "mae_t2_hi": np.nan,
            "sd_t2": np.nan,
            "coverage_t2": np.nan,
            "width_t2": np.nan,
            "n_models": int(len(g)),
        }
        g2 = g[np.isfinite(g.estimate_t2) & np.isfinite(g.truth_t2)]
        if len(g2):
            e2 = 100 * (g2.estimate_t2 - g2.truth_t2).to_numpy()
            lo2, hi2 = _mae_ci(e2, seed)
            row.update(mae_t2=float(np.abs(e2).mean()), mae_t2_lo=lo2, mae_t2_hi=hi2, sd_t2=float(e2.std()))
        if e == "tinybench":  # each fold's interval calibrated on the other folds: coverage measured, not fitted
            b = budgets.loc[(s, int(n))]
            row.update(coverage_t1=float(b["coverage"]), width_t1=float(2 * b["half_width"]))
        rows.append(row)
    return pd.DataFrame(rows + (random_rows(pred, Y, seed) if Y is not None else []))


def random_rows(pred, Y: np.ndarray, seed: int = 0) -> list[dict]:
    """Rows (clustering and estimator "random") of stratified random items, the baseline of every (scenario, n) the
    board prepared: each model's expected absolute error from n items drawn at random inside each subscenario
    (small_guard.expected_errors, the guard's own baseline), averaged over the models with a truth, as the big
    boards' backtest lists its random items beside the served estimate. The columns these rows lack (SD, bias,
    coverage, width, T2) are NaN in backtest_summary's frame."""
    from tinybench_assets.core.estimation.small_guard import expected_errors

    L, rows = pred.layout_, []
    expected = expected_errors(Y, L.w, L.cols, L.subscenarios, pred.counts_, pred._ns())
    for j, s in enumerate(L.scenarios):
        for n, e in expected[s].items():
            err = 100 * e[np.isfinite(e) & np.isfinite(pred.truth_.t1[:, j])]
            if not len(err):
                continue
            lo, hi = _mae_ci(err, seed)
            rows.append(
                {
                    "split_kind": SPLIT_KIND,
                    "scenario": s,
                    "clustering": "random",
                    "estimator": "random",
                    "n": int(n),
                    "mae_t1": float(err.mean()),
                    "mae_t1_lo": lo,
                    "mae_t1_hi": hi,
                    "n_models": int(len(err)),
                }
            )
    return rows


def budget_metadata(pred, board: str) -> dict:
    """estimation_backtest's metadata of a small board's budgets: the error and 90 % half-width against n (a plot,
    saved beside the other plots too, and a table; leave-family-out, intervals calibrated without the scored fold)."""
    from pathlib import Path

    import dagster as dg

    budgets = pred.budget_table()
    png = plots.budget_curve(budgets, title=f"{board}: error and 90 % half-width against n (leave-family-out)")
    plots.save(png, Path(paths.artifacts_dir()) / "plots" / f"budgets_{board}.png")
    by_n = (
        budgets.groupby("n")
        .agg(
            mae=("mae", "mean"),
            half_width=("half_width", "mean"),
            widest_half_width=("half_width", "max"),
            coverage=("coverage", "mean"),
        )
        .round(3)
    )
    return {
        "error_and_width_vs_n": dg.MetadataValue.md(plots.markdown_image(png, "error and half-width vs n")),
        "budgets": dg.MetadataValue.md(by_n.reset_index().to_markdown(index=False)),
    }


def export_budgets(pred, board: str, folder, **export):
    """Every prepared budget's tiny benchmark and ``budgets.json`` in ``folder`` (core/tiny_benchmark/budgets.py)."""
    # lazy: loads torch and scikit-learn (~2.4 s)
    from tinybench_assets.core.tiny_benchmark.budgets import save_budgets

    return save_budgets(pred, board, folder, pred.budget_table(), **export)


def small_backtest(config, db, board, matrix, full, groups, device: str, t0, model_store):
    """estimation_backtest of a small board: its own SmallBoardPredictor's out-of-fold figures (each model estimated
    by a fit that never saw its family)."""
    import time

    import dagster as dg

    pred, reused = fit_small(matrix, full, groups.to_numpy(), config, device, (model_store, board))
    summary = backtest_summary(pred, seed=config.seed, Y=matrix.scores)
    db.replace_partition(
        {
            "backtest_summary": summary.assign(n_splits=pred.folds_.n),
            "backtest_timings": pd.DataFrame(
                {
                    "split_kind": [SPLIT_KIND],
                    "split": [0],
                    "n_train": [len(matrix.models)],
                    "total_seconds": [time.perf_counter() - t0],
                }
            ),
        },
        board,
        column="leaderboard",
    )
    n_ref = reference_n(config.n_values)
    at_n = summary[summary.n == n_ref]
    table = at_n.pivot_table(index="estimator", columns="scenario", values="mae_t1").round(2)
    served = at_n[at_n.estimator == "tinybench"]
    return dg.MaterializeResult(
        metadata={
            "small_board": f"{len(matrix.models)} models: leave-family-out cross-validation, {pred.folds_.n} folds",
            **budget_metadata(pred, board),
            f"mae_t1_points_at_n{n_ref}": dg.MetadataValue.md(table.to_markdown()),
            f"tinybench_t1_mae_mean_n{n_ref}": float(served["mae_t1"].mean()) if len(served) else float("nan"),
            "coverage90_t1": float(served["coverage_t1"].mean()) if len(served) else float("nan"),
            "headline_split_kind": SPLIT_KIND,
            "reused_anchor_sets_fit": reused,
            "seconds": round(time.perf_counter() - t0, 1),
        }
    )
