"""The stored estimates table (model_estimates): its columns, and its errors against the truths."""

from __future__ import annotations

import pandas as pd

# an estimate of the pool accuracy (T1) and of the full score (T2), each with its interval: the columns every
# estimate table carries (the stored one, a small board's predictions, an artifact's estimates)
ESTIMATE_VALUES = ("estimate", "lower", "upper", "estimate_t2", "lower_t2", "upper_t2")
# the columns of the stored estimates table, in order
ESTIMATE_COLUMNS = ("model", "scenario", "clustering", "estimator", "n", *ESTIMATE_VALUES, "truth_t1", "truth_t2")
SUMMARISED = ("tinybench", "tinybench_own", "gpirt", "random")


def estimate_errors(df: pd.DataFrame, estimators=SUMMARISED) -> pd.DataFrame:
    """Mean absolute error (accuracy points, against T1 and T2) and T1 interval coverage per scenario x estimator x n
    of an estimates table with its truths, for the named estimators."""
    sel = df[df.estimator.isin(list(estimators))]
    err = sel.assign(
        mae_t1_pts=(sel.estimate - sel.truth_t1).abs() * 100,
        mae_t2_pts=(sel.estimate_t2 - sel.truth_t2).abs() * 100,
        coverage_t1=(sel.lower <= sel.truth_t1) & (sel.truth_t1 <= sel.upper),
    )
    cols = ["mae_t1_pts", "mae_t2_pts", "coverage_t1"]
    return err.groupby(["scenario", "estimator", "n"])[cols].mean().round(3).reset_index()
