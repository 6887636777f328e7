"""Checks on the per-scenario response assets and the IRT fits."""

import dagster as dg
import numpy as np

from tinybench_assets.core.responses import concat_scenarios
from tinybench_assets.defs.checks._common import ERROR, WARN, nothing_stored, partition_of, result
from tinybench_assets.defs.partitions import leaderboard_partitions, scenario_partitions
from tinybench_assets.defs.resources import StoreResource
from tinybench_assets.io.store import training_matrix


@dg.asset_check(
    asset=dg.AssetKey("raw_responses"),
    partitions_def=scenario_partitions,
    blocking=True,
    description="Blocking: every stored score is a number in [0, 1] and no (model, item) appears twice in the "
    "partition's responses table. A failure stops response_matrix and everything built on it.",
)
def responses_valid(context: dg.AssetCheckExecutionContext, store: StoreResource) -> dg.AssetCheckResult:
    key = partition_of(context)
    db = store.get()
    stats = db.response_stats(key)
    dups = db.response_duplicates(key)
    bad = db.responses_out_of_range(key, limit=10)
    n_rows, n_bad = int(stats["n_rows"]), int(stats["out_of_range"])
    return result(
        n_rows > 0 and n_bad == 0 and dups.empty,
        ERROR,
        key,
        rows=n_rows,
        models=int(stats["models"]),
        items=int(stats["items"]),
        scores_out_of_range=n_bad,
        duplicate_model_item_pairs=len(dups),
        min_score=float(stats["min_score"]) if n_rows else float("nan"),
        max_score=float(stats["max_score"]) if n_rows else float("nan"),
        examples_out_of_range=bad,
        examples_duplicates=dups.head(10),
    )


@dg.asset_check(
    asset=dg.AssetKey("response_matrix"),
    partitions_def=scenario_partitions,
    description="Every model of the partition answered the same items. When not, it fails as a warning (not "
    "blocking: estimators handle NaN cells) and reports the gaps: missing cells, models with gaps, the worst models.",
)
def matrix_complete(context: dg.AssetCheckExecutionContext, store: StoreResource) -> dg.AssetCheckResult:
    key = partition_of(context)
    db = store.get()
    n_items = len(db.matrix_items(key))
    models = db.matrix_models(key)[["model", "n_items"]]
    missing = (n_items - models["n_items"]).clip(lower=0)
    worst = models.assign(missing=missing).sort_values(["missing", "model"], ascending=[False, True])
    worst = worst[worst.missing > 0].head(10)
    cells = n_items * len(models)
    return result(
        n_items > 0 and len(models) > 0 and int(missing.sum()) == 0,
        WARN,
        key,
        models=len(models),
        items=n_items,
        missing_cells=int(missing.sum()),
        missing_cells_pct=float(100 * missing.sum() / cells) if cells else float("nan"),
        models_with_gaps=int((missing > 0).sum()),
        worst_models={str(m): int(v) for m, v in zip(worst["model"], worst["missing"])},
    )


@dg.asset_check(
    asset=dg.AssetKey("response_matrix"),
    partitions_def=scenario_partitions,
    description="Balance weights average 1 within the scenario and are positive.",
)
def balance_weights_normalized(context: dg.AssetCheckExecutionContext, store: StoreResource) -> dg.AssetCheckResult:
    key = partition_of(context)
    df = store.get().query(
        "SELECT avg(balance_weight) AS mean_w, min(balance_weight) AS min_w FROM matrix_items WHERE partition_key = ?",
        [key],
    )
    mean_w, min_w = float(df["mean_w"].iloc[0] or 0), float(df["min_w"].iloc[0] or 0)
    return result(abs(mean_w - 1) < 1e-9 and min_w > 0, ERROR, key, mean_weight=mean_w, min_weight=min_w)


@dg.asset_check(
    asset=dg.AssetKey("binarized_responses"),
    partitions_def=scenario_partitions,
    description="Binarization keeps mean accuracy within 5 points of the raw scores, where the raw score is an "
    "accuracy (identity and threshold rules). Under the 'positive' rule (RouterDC multiple choice: the raw "
    "score is the probability given to the correct answer, 0 when wrong) the shift measures nothing and is "
    "only reported.",
)
def binarization_keeps_accuracy(context: dg.AssetCheckExecutionContext, store: StoreResource) -> dg.AssetCheckResult:
    key = partition_of(context)
    df = store.get().binarization(key)
    if df.empty:
        return result(False, ERROR, key, error="no binarization row")
    shift, rule = float(df["mean_abs_shift"].iloc[0]), str(df["rule"].iloc[0])
    judged = rule != "positive"
    return result(shift <= 0.05 or not judged, ERROR, key, mean_abs_accuracy_shift=shift, rule=rule, judged=judged)


# ---------------------------------------------------------------------------------------------------- IRT
def _irt_fit_check(context: dg.AssetCheckExecutionContext, store: StoreResource, asset: str) -> dg.AssetCheckResult:
    """Converged (finite loss and parameters, fitted on the items now stored) and held-out log-loss below the
    constant item-mean predictor's on the same held-out cells (the fit's own seeded half of the items)."""
    key = partition_of(context)
    db = store.get()
    fit = db.irt_fit_summary(key)
    if fit.empty:  # a pass when the asset skipped the partition (too small for a fit), with its note
        return nothing_stored(context, asset, key, ERROR, "no irt_fits row for this partition")
    f = fit.iloc[0]
    items, thetas = db.irt_items(key), db.irt_models(key)
    a = [np.asarray(x, dtype=float) for x in items["a"]]
    nonfinite = int(
        (~np.isfinite(items["b"].to_numpy(dtype=float))).sum()
        + sum((~np.isfinite(x)).any() for x in a)
        + sum((~np.isfinite(np.asarray(t, dtype=float))).any() for t in thetas["theta"])
    )
    loss = float(f["loss"]) if f["loss"] is not None else float("nan")
    converged = bool(np.isfinite(loss) and nonfinite == 0 and len(items) == int(f["n_items"]) and len(thetas) > 0)
    figures = dict(
        scope=str(f["scope"]),
        dim=int(f["dim"]),
        loss=loss,
        items=len(items),
        train_models=int(f["n_models"]),
        nonfinite_parameters=nonfinite,
        converged=converged,
    )
    n_held = int(f["n_heldout_models"] or 0)
    if n_held == 0:
        return result(
            converged,
            ERROR,
            key,
            **figures,
            heldout_models=0,
            note="no held-out models (too few models to split): only convergence is checked",
        )
    keys = db.partition_keys(key) if f["scope"] == "joint" else [key]
    matrix = (
        concat_scenarios([training_matrix(db, k) for k in keys]) if f["scope"] == "joint" else training_matrix(db, key)
    )
    if set(matrix.items) != set(items["item"]):
        return result(
            False,
            ERROR,
            key,
            **figures,
            error="the stored fit's items differ from the partition's items now: the fit is stale (re-materialize it)",
        )
    split = db.model_split(key)
    train = np.array([split.get(m) == "train" for m in matrix.models])
    test = np.array([split.get(m) == "test" for m in matrix.models])
    Y = matrix.scores
    perm = np.random.default_rng(int(f["seed"])).permutation(Y.shape[1])  # the half heldout_scores scored on
    unseen = np.sort(perm[len(perm) // 2 :])
    obs_tr = ~np.isnan(Y[train][:, unseen])
    k = np.nansum(Y[train][:, unseen], axis=0)
    p = np.clip((k + 0.5) / (obs_tr.sum(axis=0) + 1.0), 1e-7, 1 - 1e-7)  # item mean of the training models (Jeffreys)
    y = Y[test][:, unseen]
    obs = ~np.isnan(y)
    yz = np.nan_to_num(y)
    base = float(-(np.where(obs, yz * np.log(p) + (1 - yz) * np.log(1 - p), 0)).sum() / max(obs.sum(), 1))
    held = float(f["heldout_logloss"]) if f["heldout_logloss"] is not None else float("nan")
    beats = bool(np.isfinite(held) and held < base)
    return result(
        converged and beats,
        ERROR,
        key,
        **figures,
        heldout_models=n_held,
        heldout_logloss=held,
        item_mean_logloss=base,
        logloss_gain=base - held,
        heldout_cells=int(obs.sum()),
        heldout_accuracy=float(f["heldout_accuracy"]) if f["heldout_accuracy"] is not None else float("nan"),
    )


_IRT_DESC = (
    "Blocking: the IRT fit converged (finite loss, finite item and ability parameters, fitted on the items now "
    "stored) and its held-out log-loss (test models: abilities from half the items, scored on the other half) "
    "is below the constant predictor's that gives every item its training-model mean, on the same cells."
)


@dg.asset_check(
    asset=dg.AssetKey("irt_model"), partitions_def=scenario_partitions, blocking=True, description=_IRT_DESC
)
def irt_model_fit_sound(context: dg.AssetCheckExecutionContext, store: StoreResource) -> dg.AssetCheckResult:
    return _irt_fit_check(context, store, "irt_model")


@dg.asset_check(
    asset=dg.AssetKey("irt_joint"), partitions_def=leaderboard_partitions, blocking=True, description=_IRT_DESC
)
def irt_joint_fit_sound(context: dg.AssetCheckExecutionContext, store: StoreResource) -> dg.AssetCheckResult:
    return _irt_fit_check(context, store, "irt_joint")


checks = [
    responses_valid,
    matrix_complete,
    balance_weights_normalized,
    binarization_keeps_accuracy,
    irt_model_fit_sound,
    irt_joint_fit_sound,
]
