"""Checks on the estimation assets: anchor weights, estimates and intervals, the backtest, the exported JSON."""

import dagster as dg
import numpy as np
import pandas as pd

from tinybench_assets.core.estimation.table import ESTIMATE_COLUMNS
from tinybench_assets.defs.checks._common import ERROR, nothing_stored, partition_of, result, rows
from tinybench_assets.defs.partitions import leaderboard_partitions
from tinybench_assets.defs.resources import ModelStore, StoreResource
from tinybench_assets.io.drops import partition_key, split_partition_key

TOL = 1e-6


@dg.asset_check(
    asset=dg.AssetKey("anchor_sets"),
    partitions_def=leaderboard_partitions,
    blocking=True,
    description="Blocking: per scenario x clustering x n the anchor weights are >= 0 and sum to 1, the anchors "
    "are distinct and as many as n_anchors says. Wrong weights make every anchor-based estimate garbage.",
)
def anchor_weights_sum_to_one(context: dg.AssetCheckExecutionContext, store: StoreResource) -> dg.AssetCheckResult:
    board = partition_of(context)
    df = rows(store.get(), "anchors", "leaderboard = ?", [board])
    if df.empty:
        return nothing_stored(context, "anchor_sets", board, ERROR, "no anchors stored")
    g = (
        df.groupby(["scenario", "clustering", "n"])
        .agg(
            anchors=("item", "size"),
            distinct=("item", "nunique"),
            weight_sum=("weight", "sum"),
            min_weight=("weight", "min"),
            n_anchors=("n_anchors", "max"),
        )
        .reset_index()
    )
    g["deviation"] = (g["weight_sum"] - 1).abs()
    expected = g["n_anchors"].fillna(g["anchors"])
    bad = g[(g.deviation > TOL) | (g.min_weight < 0) | (g.distinct != g.anchors) | (g.anchors != expected)]
    return result(
        bad.empty,
        ERROR,
        board,
        groups=len(g),
        scenarios=int(g["scenario"].nunique()),
        max_abs_deviation_from_1=float(g["deviation"].max()),
        min_weight=float(g["min_weight"].min()),
        bad_groups=len(bad),
        bad=bad.head(10).round(9),
    )


def _interval_problems(df: pd.DataFrame, sfx: str) -> tuple[pd.Series, pd.Series]:
    e, lo, up = df["estimate" + sfx], df["lower" + sfx], df["upper" + sfx]
    has = e.notna()
    out = has & ((e < -TOL) | (e > 1 + TOL) | (lo < -TOL) | (up > 1 + TOL))
    not_in = has & (lo.isna() | up.isna() | (lo > e + TOL) | (e > up + TOL))
    return out, not_in


@dg.asset_check(
    asset=dg.AssetKey("model_estimates"),
    partitions_def=leaderboard_partitions,
    description="Every estimate and interval bound is in [0, 1] and every interval contains its estimate, for "
    "the pool accuracy (T1) and the full-benchmark score (T2, where an estimator has one).",
)
def estimates_in_range(context: dg.AssetCheckExecutionContext, store: StoreResource) -> dg.AssetCheckResult:
    board = partition_of(context)
    df = rows(store.get(), "estimates", "leaderboard = ?", [board])
    if df.empty:
        return nothing_stored(context, "model_estimates", board, ERROR, "no estimates stored")
    out1, in1 = _interval_problems(df, "")
    out2, in2 = _interval_problems(df, "_t2")
    bad = df[out1 | in1 | out2 | in2]
    cols = list(ESTIMATE_COLUMNS[:-2])  # the truths aside
    return result(
        bad.empty,
        ERROR,
        board,
        rows=len(df),
        test_models=int(df["model"].nunique()),
        estimators=sorted(df["estimator"].unique().tolist()),
        out_of_range_t1=int(out1.sum()),
        interval_misses_estimate_t1=int(in1.sum()),
        out_of_range_t2=int(out2.sum()),
        interval_misses_estimate_t2=int(in2.sum()),
        rows_with_t2=int(df["estimate_t2"].notna().sum()),
        estimators_with_problems=sorted(bad["estimator"].unique().tolist()),
        examples=bad[cols].head(10).round(4),
    )


@dg.asset_check(
    asset=dg.AssetKey("estimation_backtest"),
    partitions_def=leaderboard_partitions,
    description="The backtest summary is complete and sane: rows for every scenario, coverage in [0, 1], MAE, SD "
    "and width >= 0, at least one test model per row.",
)
def backtest_sane(context: dg.AssetCheckExecutionContext, store: StoreResource) -> dg.AssetCheckResult:
    board = partition_of(context)
    db = store.get()
    df = rows(db, "backtest_summary", "leaderboard = ?", [board])
    if df.empty:
        return nothing_stored(context, "estimation_backtest", board, ERROR, "no backtest rows")
    cov = df[["coverage_t1", "coverage_t2"]]
    bad_cov = int(((cov < 0) | (cov > 1)).sum().sum())
    nonneg = df[["mae_t1", "sd_t1", "width_t1", "mae_t2", "sd_t2", "width_t2"]]
    bad_neg = int((nonneg < 0).sum().sum())
    no_t1 = int(df["mae_t1"].isna().sum())
    no_models = int((df["n_models"].fillna(0) <= 0).sum())
    scenarios = {split_partition_key(k)[1] for k in db.partition_keys(board)}
    missing = sorted(scenarios - set(df["scenario"]))
    return result(
        bad_cov == 0 and bad_neg == 0 and no_t1 == 0 and no_models == 0 and not missing,
        ERROR,
        board,
        rows=len(df),
        coverage_out_of_range=bad_cov,
        negative_errors=bad_neg,
        rows_without_t1_mae=no_t1,
        rows_without_models=no_models,
        scenarios_missing=missing,
        mean_coverage_t1=float(df["coverage_t1"].mean()),
        splits=int(df["n_splits"].max()),
    )


ROUND_TRIP_MODELS = 50  # test models re-estimated from the artifact (sorted by name); the artifact path is vectorized


@dg.asset_check(
    asset=dg.AssetKey("tiny_benchmark"),
    partitions_def=leaderboard_partitions,
    additional_deps=[dg.AssetKey("model_estimates")],
    description="The exported tiny benchmark round-trips: re-estimating the held-out test models from the "
    "artifact alone (tiny_benchmark.json and learned_models.npz, no pickle; their answers to its anchors) "
    "reproduces model_estimates' numbers (estimate and interval, T1 and T2) for every estimator of its "
    "clustering, the learned ones included, to 1e-6.",
)
def tiny_benchmark_round_trip(
    context: dg.AssetCheckExecutionContext, store: StoreResource, model_store: ModelStore
) -> dg.AssetCheckResult:
    # lazy: loads torch and scikit-learn (~2.4 s)
    from tinybench_assets.core.tiny_benchmark import JSON_FILE, ArtifactError, evaluate_artifact, load_artifact

    board = partition_of(context)
    db = store.get()
    path = model_store.path(board, JSON_FILE)
    if not path.exists():
        return nothing_stored(context, "tiny_benchmark", board, ERROR, f"{path} does not exist")
    try:
        art = load_artifact(path)
    except ArtifactError as e:
        return result(False, ERROR, board, error=str(e), artifact=str(path))
    n, clustering = int(art["n"]), str(art["clustering"])
    est = rows(db, "estimates", "leaderboard = ? AND n = ? AND clustering = ?", [board, n, clustering])
    if est.empty:
        return result(
            False,
            ERROR,
            board,
            artifact=str(path),
            n=n,
            clustering=clustering,
            error="model_estimates holds no rows for the artifact's n and clustering: materialize model_estimates",
        )
    models = sorted(est["model"].unique())[:ROUND_TRIP_MODELS]
    Ya = {}
    for s in art["scenario_order"]:
        anchors = art["scenarios"][s]["anchors"]["items"]
        y = db.binarized(partition_key(board, s))
        wide = y.pivot_table(index="model", columns="item", values="y", aggfunc="last")
        Ya[s] = wide.reindex(index=models, columns=anchors).to_numpy(dtype=float)
    try:
        out = evaluate_artifact(art, Ya)
    except ArtifactError as e:
        return result(False, ERROR, board, error=str(e), artifact=str(path))
    cols = ["estimate", "lower", "upper", "estimate_t2", "lower_t2", "upper_t2"]
    ref = est.set_index(["model", "scenario", "estimator"])
    compared, worst, n_bad, mismatches = 0, 0.0, 0, []
    for (s, e), vals in out.items():
        for i, m in enumerate(models):
            if (m, s, e) not in ref.index:
                continue
            r = ref.loc[(m, s, e)]
            r = r.iloc[0] if isinstance(r, pd.DataFrame) else r
            for c in cols:
                a, b = float(vals[c][i]), float(r[c]) if r[c] is not None else float("nan")
                if np.isnan(a) and np.isnan(b):
                    continue
                diff = abs(a - b) if np.isfinite(a) and np.isfinite(b) else float("inf")
                compared += 1
                worst = max(worst, diff)
                n_bad += diff > TOL
                if diff > TOL and len(mismatches) < 10:
                    mismatches.append(
                        {"model": m, "scenario": s, "estimator": e, "column": c, "json": a, "model_estimates": b}
                    )
    return result(
        compared > 0 and n_bad == 0,
        ERROR,
        board,
        artifact=str(path),
        n=n,
        clustering=clustering,
        test_models=len(models),
        scenarios=list(art["scenario_order"]),
        estimators=sorted({e for _, e in out}),
        values_compared=compared,
        values_differing=n_bad,
        max_abs_difference=worst,
        mismatches=mismatches,
    )


checks = [anchor_weights_sum_to_one, estimates_in_range, backtest_sane, tiny_benchmark_round_trip]
