"""IRT assets: a multidimensional 2PL per scenario, and one joint fit across a leaderboard's scenarios."""

import time
from pathlib import Path

import dagster as dg
import numpy as np
import pandas as pd

from tinybench_assets import paths
from tinybench_assets.core.estimation.splits import split_models
from tinybench_assets.core.irt_tables import fit_tables
from tinybench_assets.core.responses import ResponseMatrix, concat_scenarios
from tinybench_assets.defs.cards import card
from tinybench_assets.defs.partitions import leaderboard_partitions, scenario_partitions
from tinybench_assets.defs.resources import DUCKDB_POOL, StoreResource, TorchDevice
from tinybench_assets.io import plots
from tinybench_assets.io.store import Store, training_matrix
from tinybench_assets.orchestration.versions import code_version
from tinybench_assets.progress import Stopwatch

GROUP = "irt"
CODE_VERSION = code_version("irt")


class IRTConfig(dg.Config):
    """How IRT models are fitted. The same seed and test_fraction give the same model split everywhere."""

    dims: list[int] = [1, 2, 5, 10]
    seed: int = 0
    test_fraction: float = 0.2
    min_models_for_split: int = 20
    fitter: str = "torch"


#: what a 2PL fit needs (training models, and items answered by at least one of them)
MIN_FIT_MODELS, MIN_FIT_ITEMS = 3, 10
FIT_TABLES = ("model_splits", "irt_items", "irt_models", "irt_dims", "irt_fits")


def fit_needs(Y: np.ndarray) -> str | None:
    """Why a models x items 0/1 matrix (NaN = not answered) is too small for a 2PL fit, or None."""
    answered = ~np.isnan(Y) if Y.size else np.zeros(Y.shape, dtype=bool)
    models, items = int(answered.any(axis=1).sum()), int(answered.any(axis=0).sum())
    if models < MIN_FIT_MODELS or items < MIN_FIT_ITEMS:
        return (
            f"too small for an IRT fit: {models} training model(s) x {items} answered item(s); a 2PL fit needs at "
            f"least {MIN_FIT_MODELS} models and {MIN_FIT_ITEMS} items (items of a held-out test split do not count)"
        )
    return None


def fit_and_store(
    context, db: Store, matrix: ResponseMatrix, key: str, scope: str, config: IRTConfig, device: str
) -> dg.MaterializeResult:
    """Split models, choose D on training models, fit, evaluate on test models, store, describe."""
    # lazy: load torch (~1.3 s) when the asset runs, not when the definitions load
    from tinybench_assets.core.irt import fit_irt, select_dimension
    from tinybench_assets.core.irt.evaluate import heldout_scores

    t0 = time.perf_counter()
    watch = Stopwatch(say=lambda line: context.log.info(f"{key}: {line}"))  # where the time went (metadata)
    split = split_models(matrix.models, config.test_fraction, config.seed, config.min_models_for_split)
    train = split == "train"
    Y = matrix.scores
    if reason := fit_needs(Y[train]):  # too small to fit: say so, and keep no fit of older data for this partition
        db.replace_partition({t: pd.DataFrame() for t in FIT_TABLES}, key)
        context.log.warning(f"{key}: {reason}")
        return dg.MaterializeResult(
            metadata={"skipped": reason, "models": len(matrix.models), "items": len(matrix.items)}
        )
    context.log.info(
        f"{key}: choosing D among {list(config.dims)} on {int(train.sum())} training models x {Y.shape[1]} items"
    )
    with watch.part("choose D"):
        sel = select_dimension(Y[train], candidates=config.dims, seed=config.seed, device=device, fitter=config.fitter)
    context.log.info(f"{key}: D={sel.best_dim} chosen ({time.perf_counter() - t0:.1f}s); fitting the final model")
    with watch.part("final fit"):
        params = fit_irt(Y[train], dim=sel.best_dim, seed=config.seed, device=device, fitter=config.fitter)
    with watch.part("held-out scores"):
        held = (
            heldout_scores(Y[~train], params.a, params.b, seed=config.seed, device=device)
            if (~train).any()
            else {"logloss": float("nan"), "accuracy": float("nan"), "score_mae": float("nan"), "n_models": 0}
        )
    seconds = time.perf_counter() - t0
    tables = fit_tables(matrix, scope, split, sel, params, held, config.seed, config.fitter, device, seconds)
    with watch.part("store"):
        db.replace_partition(tables, key)
    with watch.part("plots"):
        meta = _fit_metadata(key, matrix, scope, train, sel, params, held, device, t0)
    return dg.MaterializeResult(metadata={**meta, "time_breakdown": watch.breakdown()})


def _fit_metadata(
    key: str, matrix: ResponseMatrix, scope: str, train, sel, params, held: dict, device: str, t0: float
) -> dict:
    """The UI's view of a fit: D and the validation error per D, the held-out scores, timings, and the plots
    (difficulty vs discrimination, saved under the artifacts' plots/, and validation error vs D)."""
    png = plots.difficulty_vs_discrimination(
        params.b,
        params.a,
        matrix.scenarios if scope == "joint" else matrix.subscenarios if len(set(matrix.subscenarios)) <= 8 else None,
        title=f"{key}: D={sel.best_dim}, {int(train.sum())} models x {len(matrix.items)} items",
    )
    plot_path = plots.save(png, Path(paths.artifacts_dir()) / "plots" / f"irt_{key}.png")
    dims_png = plots.validation_error_vs_dim(
        sel.errors,
        {d: float(np.std(sel.per_model_errors[d])) for d in sel.errors},
        sel.best_dim,
        title=f"{key}: validation error vs D (bars: SD over validation models)",
    )
    return {
        "dim": sel.best_dim,
        "validation_error_by_dim": dg.MetadataValue.json({str(d): round(e, 5) for d, e in sel.errors.items()}),
        "heldout_logloss": held["logloss"],
        "heldout_accuracy": held["accuracy"],
        "heldout_models": held["n_models"],
        "train_models": int(train.sum()),
        "items": len(matrix.items),
        "fit_seconds": round(params.seconds, 2),
        "total_seconds": round(time.perf_counter() - t0, 2),
        "device": device,
        "difficulty_vs_discrimination": dg.MetadataValue.md(plots.markdown_image(png, "difficulty vs discrimination")),
        "validation_error_vs_dim": dg.MetadataValue.md(plots.markdown_image(dims_png, "validation error vs D")),
        "plot_path": dg.MetadataValue.path(str(plot_path)),
    }


@dg.asset(
    group_name=GROUP,
    code_version=CODE_VERSION,
    pool=DUCKDB_POOL,
    partitions_def=scenario_partitions,
    deps=["binarized_responses"],
    **card(
        "IRT model (per scenario)",
        "Multidimensional 2PL for one scenario, fitted by MAP on the training models "
        "(seeded split, recorded in model_splits); D chosen by validation on training models; item a/b, model "
        "theta, per-D errors in DuckDB. Plots: difficulty vs discrimination, validation error vs D. Check: the "
        "fit beats the item-mean predictor on held-out models.",
        kinds=("python", "torch", "duckdb"),
    ),
)
def irt_model(
    context: dg.AssetExecutionContext, config: IRTConfig, store: StoreResource, torch_device: TorchDevice
) -> dg.MaterializeResult:
    db = store.get()
    key = context.partition_key
    return fit_and_store(context, db, training_matrix(db, key), key, "scenario", config, torch_device.resolve())


ALL_SCENARIOS = dg.AssetDep("binarized_responses", partition_mapping=dg.AllPartitionMapping())


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            "irt_joint",
            group_name=GROUP,
            code_version=CODE_VERSION,
            partitions_def=leaderboard_partitions,
            deps=[ALL_SCENARIOS],
            **card(
                "IRT model (joint, per leaderboard)",
                "One joint 2PL across every scenario of a leaderboard "
                "(tinyBenchmarks' 'lb' model), fitted on the training models of model_split: abilities "
                "shared across scenarios, so a model's anchors in one scenario inform the others. Plots: "
                "difficulty vs discrimination by scenario, validation error vs D. The estimation assets do "
                "not read this fit (the predictor fits its own IRT models with its own dims); they read "
                "model_split.",
                kinds=("python", "torch", "duckdb"),
            ),
        ),
        dg.AssetSpec(
            "model_split",
            group_name=GROUP,
            code_version=CODE_VERSION,
            partitions_def=leaderboard_partitions,
            deps=[ALL_SCENARIOS],
            **card(
                "Model split (per leaderboard)",
                "The leaderboard's seeded train/test split of models "
                "(model_splits, partition key = the leaderboard; a model's side depends only on seed and "
                "name), recorded with the joint IRT fit that trains on it. anchor_sets fits the predictor "
                "on its training models; model_estimates scores its test models; tiny_benchmark counts "
                "them.",
            ),
        ),
    ],
    pool=DUCKDB_POOL,
    can_subset=False,
)
def irt_joint(context: dg.AssetExecutionContext, config: IRTConfig, store: StoreResource, torch_device: TorchDevice):
    db = store.get()
    board = context.partition_key
    keys = db.partition_keys(board)
    if not keys:
        raise dg.Failure(f"leaderboard {board}: no scenario partitions stored")
    matrix = concat_scenarios([training_matrix(db, k) for k in keys])
    fit = fit_and_store(context, db, matrix, board, "joint", config, torch_device.resolve())
    yield dg.MaterializeResult(asset_key="irt_joint", metadata=fit.metadata)
    split = db.model_split(board)
    yield dg.MaterializeResult(
        asset_key="model_split",
        metadata={
            "models": len(split),
            "train_models": int((split == "train").sum()),
            "test_models": int((split == "test").sum()),
            "seed": config.seed,
            "test_fraction": config.test_fraction,
            "min_models_for_split": config.min_models_for_split,
        },
    )


scenario_assets = [irt_model]
leaderboard_assets = [irt_joint]
