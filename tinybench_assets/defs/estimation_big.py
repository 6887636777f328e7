"""estimation_backtest of a leaderboard with models to hold out (:class:`.estimation_boards.BigBoard`): seeded
splits of its own (core/estimation/backtest.py), a fresh AnchorPredictor per split, the summary tables and the
charts."""

from __future__ import annotations

import os
import time
from pathlib import Path

import dagster as dg
import pandas as pd

from tinybench_assets import paths
from tinybench_assets.core.estimation.groups import group_summary
from tinybench_assets.core.estimation.names import reference_n
from tinybench_assets.io import plots

__all__ = [
    "big_backtest",
    "frontier_metadata",
    "twin_metadata",
    "predictor_params",
    "SUMMARY_COLUMNS",
    "CHART_ESTIMATORS",
    "TWIN_FREE",
]

SUMMARY_COLUMNS = [
    "split_kind",
    "scenario",
    "clustering",
    "estimator",
    "n",
    "mae_t1",
    "mae_t1_lo",
    "mae_t1_hi",
    "sd_t1",
    "bias_t1",
    "coverage_t1",
    "width_t1",
    "mae_t2",
    "mae_t2_lo",
    "mae_t2_hi",
    "sd_t2",
    "coverage_t2",
    "width_t2",
    "n_models",
]
CHART_ESTIMATORS = (
    "random",
    "anchor",
    "irt",
    "pirt",
    "gpirt",
    "gpirt_val_joint",
    "tinybench_own",
    "tinybench",
    "adaptive",
)
HEADLINE_CLUSTERINGS = ["correctness", "random", "selected", "adaptive"]
TWIN_FREE = "/twin_free"  # the split kind of a summary row read on twin-free test models only (twin_metadata)


def predictor_params(config, device: str) -> dict:
    """AnchorPredictor's keyword arguments from an EstimationConfig."""
    return {
        "n_values": tuple(config.n_values),
        "clusterings": tuple(config.clusterings),
        "learned": config.learned,
        "scenario_n": dict(config.scenario_n),
        "large_pool_items": config.large_pool_items,
        "max_fit_models": config.max_fit_models or None,
        "alpha": config.alpha,
        "device": device,
        "dim_candidates": tuple(config.dims),
        "joint_dim_candidates": tuple(config.joint_dims),
        "frontier_share": config.frontier_share,
    }


def big_backtest(
    log, config, device: str, db, board: str, matrix, full: pd.DataFrame, groups: pd.Series, t0: float
) -> dg.MaterializeResult:
    """Fit and score ``config.n_splits`` splits per split kind, write backtest_summary / backtest_timings, and return
    the asset's metadata (error against n per scenario, coverage of the served intervals, the table at the
    reference n)."""
    # lazy: loads torch and scikit-learn (~2.4 s) when the asset runs, not when the definitions load
    from tinybench_assets.core.estimation.backtest import run_backtest, split_plan
    from tinybench_assets.core.estimation.frontier import board_strength

    try:
        plan = split_plan(
            len(matrix.models),
            tuple(config.split_kinds),
            config.n_splits,
            config.test_fraction,
            config.seed,
            groups=groups.to_numpy(),
            max_train_models=config.max_train_models or None,
            max_test_models=config.max_test_models or None,
            strength=board_strength(matrix),
            frontier_fraction=config.frontier_fraction,
        )
    except ValueError as e:
        raise dg.Failure(f"estimation_backtest: split_kinds {config.split_kinds}: {e}") from None
    result = run_backtest(
        matrix,
        full,
        splits=plan,
        seed=config.seed,
        predictor_params=predictor_params(config, device),
        log=log,
        n_jobs=config.n_jobs or min(len(plan), os.cpu_count() or 1),
        adaptive_n=tuple(config.adaptive_n),
        groups=groups.to_numpy(),
    )
    t_splits = time.perf_counter() - t0  # the asset's reads, the plan and the splits: where the time goes
    estimates, headline = result.estimates, config.split_kinds[0]
    both = summaries(estimates)
    db.replace_partition(
        {"backtest_summary": both.assign(n_splits=config.n_splits), "backtest_timings": result.timings},
        board,
        column="leaderboard",
    )
    summary = both[both.split_kind == headline]
    n_ref = reference_n(config.n_values)
    at_n = summary[(summary.n == n_ref) & summary.clustering.isin(HEADLINE_CLUSTERINGS)]
    table = at_n.pivot_table(index="estimator", columns="scenario", values="mae_t1").round(2)
    table["mean"] = table.mean(axis=1).round(2)
    best = summary[(summary.n == n_ref) & (summary.estimator == "tinybench")]
    return dg.MaterializeResult(
        metadata={
            **_charts(config, board, summary, headline),
            f"mae_t1_points_at_n{n_ref}": dg.MetadataValue.md(table.sort_values("mean").to_markdown()),
            f"tinybench_t1_mae_mean_n{n_ref}": float(best["mae_t1"].mean()) if len(best) else float("nan"),
            f"tinybench_t2_mae_mean_n{n_ref}": float(best["mae_t2"].mean()) if len(best) else float("nan"),
            "coverage90_t1": float(
                estimates[estimates.split_kind == headline].eval("(lower <= truth_t1) & (truth_t1 <= upper)").mean()
            ),
            **(
                {
                    f"tinybench_t1_mae_mean_n{n_ref}_{k}": float(
                        both[(both.split_kind == k) & (both.n == n_ref) & (both.estimator == "tinybench")][
                            "mae_t1"
                        ].mean()
                    )
                    for k in config.split_kinds
                }
            ),
            **frontier_metadata(both, n_ref),
            **twin_metadata(estimates, both, n_ref, headline),
            **_frontier_chart(board, both),
            "headline_split_kind": headline,
            "model_groups": dg.MetadataValue.json(group_summary(groups)),
            "splits": config.n_splits,
            "seconds": round(time.perf_counter() - t0, 1),
            **backtest_times(result.timings, len(plan), t_splits, time.perf_counter() - t0),
        }
    )


def backtest_times(timings: pd.DataFrame, n_splits: int, t_splits: float, total: float) -> dict:
    """Where the backtest's time went: ``time_breakdown`` (the reads and the splits' fits, at once in worker
    processes, against the summaries, store and charts after them) and ``split_step_seconds`` (a split's predictor
    steps, :func:`split_step_seconds`)."""
    return {
        "time_breakdown": {
            f"read responses, fit and score {n_splits} splits": round(t_splits, 1),
            "summaries, store and charts": round(total - t_splits, 1),
        },
        "split_step_seconds": split_step_seconds(timings),
    }


def split_step_seconds(timings: pd.DataFrame) -> dict:
    """{split kind: {predictor step: seconds}}: where a backtest split's time went (the mean over the splits of a
    kind; ``adaptive`` is the adaptive column, ``estimate`` the estimates and truth after the fit)."""
    out = {}
    if timings is None or timings.empty:
        return out
    for kind, g in timings.groupby("split_kind") if "split_kind" in timings else [("all", timings)]:
        steps = {
            c[len("fit_") : -len("_seconds")]: round(float(g[c].mean()), 1)
            for c in g.columns
            if c.startswith("fit_") and c.endswith("_seconds") and c not in ("fit_seconds", "fit_total_seconds")
        }
        rest = float((g["total_seconds"] - g["fit_seconds"]).mean()) - steps.get("adaptive", 0.0)
        out[str(kind)] = dict(sorted({**steps, "estimate": round(rest, 1)}.items(), key=lambda kv: -kv[1]))
    return out


def summaries(estimates: pd.DataFrame) -> pd.DataFrame:
    """The backtest_summary rows (SUMMARY_COLUMNS) of every split kind, and of each on its twin-free test models
    (split kind ``<kind>/twin_free``)."""
    from tinybench_assets.core.estimation.backtest import summarize_by_kind

    free = estimates[~estimates.twin.astype(bool)].assign(split_kind=lambda d: d.split_kind + TWIN_FREE)
    return pd.concat(
        [sm.assign(split_kind=kind) for kind, sm in summarize_by_kind(pd.concat([estimates, free])).items()],
        ignore_index=True,
    )[SUMMARY_COLUMNS]


def twin_metadata(estimates: pd.DataFrame, both: pd.DataFrame, n_ref: int, headline: str) -> dict:
    """Figures on twin-free test models (core/estimation/twins.py: no training model agrees with them on 99 % of a
    scenario's items), beside all: the share of twins per scenario and split kind, the served estimate's T1 MAE at
    n_ref per scenario (all / twin-free) and the frontier split's served mean over random items' on twin-free models."""
    one = estimates.drop_duplicates(["split", "model", "scenario"])
    share = one.groupby(["split_kind", "scenario"]).twin.mean().round(4)
    served = both[(both.n == n_ref) & (both.estimator == "tinybench")]
    table = served.pivot_table(index="scenario", columns="split_kind", values="mae_t1").round(2)
    out = {
        "twin_share": dg.MetadataValue.json({k: g.droplevel(0).to_dict() for k, g in share.groupby(level=0)}),
        f"tinybench_t1_points_at_n{n_ref}_all_and_twin_free": dg.MetadataValue.md(table.to_markdown()),
    }
    g = served[served.split_kind == headline + TWIN_FREE]
    if len(g):
        out[f"tinybench_t1_mae_mean_n{n_ref}{TWIN_FREE.replace('/', '_')}"] = float(g.mae_t1.mean())
    fr = both[(both.split_kind == "frontier" + TWIN_FREE) & (both.n == n_ref)]
    fs, fr_ = fr[fr.estimator == "tinybench"], fr[fr.estimator == "random"]
    if len(fs) and len(fr_):
        out["frontier_ratio_vs_random_items_twin_free"] = float(fs.mae_t1.mean() / fr_.mae_t1.mean())
    return out


def frontier_metadata(both: pd.DataFrame, n_ref: int) -> dict:
    """The frontier split's figures at n_ref, where it ran: per scenario the served estimate's T1 MAE, bias and
    coverage beside random items' and adaptive testing's (a table), and the served mean over random items' mean."""
    fr = both[(both.split_kind == "frontier") & (both.n == n_ref)]
    fr = fr[fr.clustering.isin(["selected", "random", "adaptive"])]
    if fr.empty:
        return {}
    keep = fr[fr.estimator.isin(["tinybench", "tinybench_own", "random", "adaptive"])]
    table = keep.pivot_table(index="scenario", columns="estimator", values=["mae_t1", "bias_t1", "coverage_t1"])
    table.columns = [f"{est} {what.replace('_t1', '')}" for what, est in table.columns]
    served, rnd = fr[fr.estimator == "tinybench"], fr[fr.estimator == "random"]
    ratio = float(served.mae_t1.mean() / rnd.mae_t1.mean()) if len(served) and len(rnd) else float("nan")
    return {
        f"frontier_t1_points_at_n{n_ref}": dg.MetadataValue.md(table.round(3).to_markdown()),
        f"frontier_tinybench_t1_mae_mean_n{n_ref}": float(served.mae_t1.mean()),
        f"frontier_tinybench_t1_bias_mean_n{n_ref}": float(served.bias_t1.mean()),
        f"frontier_coverage90_t1_min_n{n_ref}": float(served.coverage_t1.min()),
        "frontier_ratio_vs_random_items": ratio,
    }


def _frontier_chart(board: str, both: pd.DataFrame) -> dict:
    """T1 MAE against n on the frontier split (mean of scenarios): the served estimators, random items, adaptive."""
    fr = both[(both.split_kind == "frontier") & both.clustering.isin(HEADLINE_CLUSTERINGS)]
    wide = fr.groupby(["n", "estimator"]).mae_t1.mean().unstack("estimator")
    wide = wide[[c for c in ("random", "tinybench_own", "tinybench", "adaptive") if c in wide]]
    if wide.empty:
        return {}
    png = plots.error_vs_n(wide, title=f"{board}: the strongest models held out (frontier split), T1 MAE vs n")
    return {"frontier_error_vs_n": dg.MetadataValue.md(plots.markdown_image(png, "frontier error vs n"))}


def _charts(config, board: str, summary: pd.DataFrame, headline: str) -> dict:
    """The error-against-n chart per scenario (saved under artifacts/plots too) and the served intervals' coverage."""
    charts = {}
    for s, g in summary[summary.clustering.isin(HEADLINE_CLUSTERINGS)].groupby("scenario"):
        wide = g.pivot_table(index="n", columns="estimator", values="mae_t1")
        wide = wide[[c for c in CHART_ESTIMATORS if c in wide]]
        png = plots.error_vs_n(wide, title=f"{board}.{s}: T1 MAE vs n ({config.n_splits} {headline} splits)")
        plots.save(png, Path(paths.artifacts_dir()) / "plots" / f"backtest_{board}.{s}.png")
        charts[f"error_vs_n_{s}"] = dg.MetadataValue.md(plots.markdown_image(png, f"{s} error vs n"))
    served = summary[summary.estimator.isin(["tinybench", "tinybench_own"])]
    if len(served):
        cov = served.groupby(["n", "estimator"])[["coverage_t1", "coverage_t2"]].mean().unstack("estimator")
        cov.columns = [f"{est} {target[-2:].upper()}" for target, est in cov.columns]
        cov_png = plots.coverage_vs_n(
            cov,
            nominal=1 - config.alpha,
            title=f"{board}: coverage of the served {1 - config.alpha:.0%} intervals (mean of scenarios)",
        )
        charts["interval_coverage"] = dg.MetadataValue.md(plots.markdown_image(cov_png, "interval coverage vs n"))
    return charts
