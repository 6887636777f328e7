"""Plain-text renderings of result tables for the console summary."""
from __future__ import annotations

from .store import Store

QUERIES = {
    "irt_fits": "SELECT partition_key, scope, dim, n_models, n_items, round(heldout_logloss, 4) AS heldout_logloss, round(seconds, 1) AS seconds, device "
                "FROM irt_fits ORDER BY partition_key",
    "backtest_summary": "SELECT scenario, estimator, n, round(mae_t1, 2) AS mae_t1_pts, round(mae_t2, 2) AS mae_t2_pts, round(coverage_t1, 3) AS coverage90_t1 "
                        "FROM backtest_summary WHERE n = 30 AND clustering IN ('correctness', 'random', 'selected') AND estimator IN ('random', 'anchor', 'gpirt', 'gpirt_val_joint', 'tinybench_own', 'tinybench') ORDER BY scenario, mae_t1",
}


def render(store: Store, table: str) -> str:
    return store.query(QUERIES[table]).to_string(index=False)
