"""Plain-text renderings of result tables for the console summary (DuckDB or PostgreSQL store: the SQL selects, pandas
rounds and formats, since PostgreSQL has no ``round(double, n)`` and its ``format`` is not DuckDB's)."""

from __future__ import annotations

import math

import pandas as pd

from ..core.estimation.names import reference_n  # not .backtest: it imports torch (the summary would wait ~2 s)
from .store import Store

QUERIES = {
    "irt_fits": "SELECT partition_key, scope, dim, n_models, n_items, heldout_logloss, seconds, device "
    "FROM irt_fits ORDER BY partition_key",
    # at the budget the backtest asset quotes (core.estimation.names.reference_n: 30, else the largest run)
    "backtest_summary": "SELECT leaderboard, coalesce(split_kind, 'random') AS split, scenario, estimator, n, "
    "mae_t1 AS mae_t1_pts, mae_t1_lo, mae_t1_hi, mae_t2 AS mae_t2_pts, "
    "coverage_t1 AS coverage90_t1, coverage_t2 AS coverage90_t2 "
    "FROM backtest_summary WHERE n = ? "
    "AND clustering IN ('correctness', 'random', 'selected', 'adaptive') "
    "AND estimator IN ('random', 'anchor', 'gpirt', 'gpirt_val_joint', 'tinybench_own', 'tinybench', 'adaptive') "
    "ORDER BY leaderboard, split_kind, scenario, mae_t1",
    # a small board's served estimates against the anchor budget (leave-family-out; half-width = width / 2)
    "budgets": "SELECT leaderboard, n, count(*) AS scenarios, avg(mae_t1) AS mae_t1_pts, "
    "avg(width_t1) / 2 AS half_width90_pts, max(width_t1) / 2 AS widest_half_width90_pts, "
    "avg(coverage_t1) AS coverage90_t1 FROM backtest_summary "
    "WHERE split_kind = 'leave_family_out' AND estimator = 'tinybench' "
    "GROUP BY leaderboard, n ORDER BY leaderboard, n",
    "router_metrics": "SELECT partition_key, served_router, 100 * router_acc AS router_pct, best_single_model, "
    "100 * best_single_acc AS best_single_pct, 100 * oracle_acc AS oracle_pct, "
    "100 * random_acc AS random_pct, 100 * tutorial_knn_irt_acc AS tutorial_pct, "
    "n_test FROM router_metrics ORDER BY partition_key",
}
ROUND = {
    "irt_fits": {"heldout_logloss": 4, "seconds": 1},
    "backtest_summary": {"mae_t1_pts": 2, "mae_t2_pts": 2, "coverage90_t1": 3, "coverage90_t2": 3},
    "budgets": {"mae_t1_pts": 2, "half_width90_pts": 2, "widest_half_width90_pts": 2, "coverage90_t1": 3},
    "router_metrics": {"router_pct": 2, "best_single_pct": 2, "oracle_pct": 2, "random_pct": 2, "tutorial_pct": 2},
}
EMPTY = {
    "budgets": "(no small leaderboard: budgets are backtested for boards of min_small_models to min_models - 1 models)",
    "router_metrics": "(no router: no scenario has question text and a train/test split of questions)",
    "irt_fits": "(no IRT fits yet)",
    "backtest_summary": "(no backtest: leaderboards with fewer than min_small_models models (default 10), or a scenario "
    "of fewer than min_items items (default 20), are skipped)",
}


def _interval(lo, hi) -> str | None:
    ok = all(v is not None and not (isinstance(v, float) and math.isnan(v)) for v in (lo, hi))
    return f"[{lo:.2f}, {hi:.2f}]" if ok else None


def render(store: Store, table: str) -> str:
    params = []
    if table == "backtest_summary":
        ns = store.query("SELECT DISTINCT n FROM backtest_summary WHERE clustering <> 'adaptive'")["n"]
        if ns.empty:
            return EMPTY[table]
        params = [reference_n(ns)]
    df = store.query(QUERIES[table], params)
    if df.empty:
        return EMPTY[table]
    df = df.round(ROUND[table])
    if table == "backtest_summary":
        ci = pd.Series([_interval(lo, hi) for lo, hi in zip(df.pop("mae_t1_lo"), df.pop("mae_t1_hi"))], index=df.index)
        df.insert(df.columns.get_loc("mae_t1_pts") + 1, "ci95_t1", ci)
    return df.to_string(index=False)


def evaluations_report(store: Store) -> str:
    """The latest evaluation of each model (estimate and 90 % interval in points per scenario, the tiny benchmark's
    version), and the evaluation files quarantined with their one-line reason."""
    lines = []
    df = store.evaluations()
    if df.empty:
        lines.append("(no evaluation: drop a model's answers into data/incoming/evaluations/<leaderboard>/)")
    else:
        df = df.assign(
            **{c: (100 * df[c].astype(float)).round(1) for c in ("estimate", "lower", "upper", "estimate_t2")},
            version=df["tiny_benchmark_version"].str[:8],
        )
        cols = ["leaderboard", "model", "scenario", "estimate", "lower", "upper", "estimate_t2", "estimator"]
        lines.append(df[[*cols, "n_answers", "anchors_missing", "version"]].to_string(index=False))
    bad = store.quarantined_evaluations()
    for r in bad.head(20).itertuples(index=False):
        lines.append(f"quarantined {r.path}: {str(r.error).splitlines()[0][:300]}")
    return "\n".join(lines)
