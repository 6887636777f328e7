"""Plain-text renderings of result tables for the console summary."""
from __future__ import annotations

from ..core.backtest import reference_n
from .store import Store

QUERIES = {
    "irt_fits": "SELECT partition_key, scope, dim, n_models, n_items, round(heldout_logloss, 4) AS heldout_logloss, round(seconds, 1) AS seconds, device "
                "FROM irt_fits ORDER BY partition_key",
    # at the budget the backtest asset quotes (core.backtest.reference_n: 30, else the largest run)
    "backtest_summary": "SELECT leaderboard, coalesce(split_kind, 'random') AS split, scenario, estimator, n, "
                        "round(mae_t1, 2) AS mae_t1_pts, "
                        "format('[{:.2f}, {:.2f}]', mae_t1_lo, mae_t1_hi) AS ci95_t1, round(mae_t2, 2) AS mae_t2_pts, "
                        "round(coverage_t1, 3) AS coverage90_t1, round(coverage_t2, 3) AS coverage90_t2 "
                        "FROM backtest_summary WHERE n = ? "
                        "AND clustering IN ('correctness', 'random', 'selected', 'adaptive') "
                        "AND estimator IN ('random', 'anchor', 'gpirt', 'gpirt_val_joint', 'tinybench_own', 'tinybench', 'adaptive') "
                        "ORDER BY leaderboard, split_kind, scenario, mae_t1",
    "router_metrics": "SELECT partition_key, served_router, round(100 * router_acc, 2) AS router_pct, best_single_model, "
                      "round(100 * best_single_acc, 2) AS best_single_pct, round(100 * oracle_acc, 2) AS oracle_pct, "
                      "round(100 * random_acc, 2) AS random_pct, round(100 * tutorial_knn_irt_acc, 2) AS tutorial_pct, "
                      "n_test FROM router_metrics ORDER BY partition_key",
}
EMPTY = {
    "router_metrics": "(no router: no scenario has question text and a train/test split of questions)",
    "irt_fits": "(no IRT fits yet)",
    "backtest_summary": "(no backtest: leaderboards with fewer than min_models models (default 50) have too few models "
                        "to hold any out, and are skipped)",
}


def render(store: Store, table: str) -> str:
    params = []
    if table == "backtest_summary":
        ns = store.query("SELECT DISTINCT n FROM backtest_summary WHERE clustering <> 'adaptive'")["n"]
        if ns.empty:
            return EMPTY[table]
        params = [reference_n(ns)]
    df = store.query(QUERIES[table], params)
    return EMPTY[table] if df.empty else df.to_string(index=False)
