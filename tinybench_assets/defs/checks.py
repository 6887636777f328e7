"""Asset checks beside the assets they guard."""

import dagster as dg

from tinybench_assets.defs.assets.responses import binarized_responses, response_matrix
from tinybench_assets.defs.resources import StoreResource


@dg.asset_check(asset=response_matrix, description="Balance weights average 1 within the scenario and are positive.")
def balance_weights_normalized(context: dg.AssetCheckExecutionContext, store: StoreResource) -> dg.AssetCheckResult:
    key = context.run.tags.get("dagster/partition")
    df = store.get().query(
        "SELECT avg(balance_weight) AS mean_w, min(balance_weight) AS min_w FROM matrix_items WHERE partition_key = ?", [key]
    )
    mean_w, min_w = float(df["mean_w"].iloc[0] or 0), float(df["min_w"].iloc[0] or 0)
    return dg.AssetCheckResult(passed=abs(mean_w - 1) < 1e-9 and min_w > 0, metadata={"mean_weight": mean_w, "min_weight": min_w, "partition": str(key)})


@dg.asset_check(asset=binarized_responses, description="Binarization keeps mean accuracy within 5 points of the raw scores.")
def binarization_keeps_accuracy(context: dg.AssetCheckExecutionContext, store: StoreResource) -> dg.AssetCheckResult:
    key = context.run.tags.get("dagster/partition")
    df = store.get().query("SELECT mean_abs_shift, rule FROM binarization WHERE partition_key = ?", [key])
    if df.empty:
        return dg.AssetCheckResult(passed=False, metadata={"partition": str(key), "error": "no binarization row"})
    shift = float(df["mean_abs_shift"].iloc[0])
    return dg.AssetCheckResult(passed=shift <= 0.05, metadata={"mean_abs_accuracy_shift": shift, "rule": str(df["rule"].iloc[0]), "partition": str(key)})


checks = [balance_weights_normalized, binarization_keeps_accuracy]
