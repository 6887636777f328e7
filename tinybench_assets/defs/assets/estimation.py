"""Estimation assets per leaderboard: anchors + lambdas (one fitted AnchorPredictor), held-out estimates,
a multi-split backtest, and the exported tiny benchmark."""

import time

import dagster as dg
import numpy as np
import pandas as pd

from tinybench_assets import paths
from tinybench_assets.core.estimation.groups import group_summary, model_groups
from tinybench_assets.core.estimation.table import ESTIMATE_COLUMNS, estimate_errors
from tinybench_assets.core.responses import ResponseMatrix, concat_scenarios
from tinybench_assets.core.subsets.voters import read_aggregate
from tinybench_assets.defs import estimation_small as small
from tinybench_assets.defs.cards import card
from tinybench_assets.defs.estimation_boards import board_for
from tinybench_assets.defs.partitions import leaderboard_partitions
from tinybench_assets.defs.resources import DUCKDB_POOL, ModelStore, StoreResource, TorchDevice
from tinybench_assets.io.drops import split_partition_key
from tinybench_assets.io.store import Store, training_matrix
from tinybench_assets.orchestration.versions import code_version
from tinybench_assets.progress import Stopwatch

GROUP = "estimation"
CODE_VERSION = code_version("estimation")
# every scenario partition's 0/1 answers (the leaderboard-level assets read them all)
ALL_SCENARIOS = dg.AssetDep("binarized_responses", partition_mapping=dg.AllPartitionMapping())


class EstimationConfig(dg.Config):
    """Anchor budgets, clusterings and estimator options. Fitted on the training models of model_split."""

    n_values: list[int] = [10, 20, 30, 50]  # anchor budgets (the anchor count of every scenario, unless below)
    scenario_n: dict[
        str, list[int]
    ] = {}  # per-scenario anchor counts, one per budget, e.g. {"mmlu": [30, 60, 100, 150]}
    large_pool_items: int = 1000  # pools at least this large get round(budget * 100/30) anchors (30 -> 100)
    # anchor sets: the tutorial's KMeans on correctness, and forward selection (the anchors that best predict the
    # pool accuracy; the learned estimators' best on openllm). "irt" (KMeans on IRT parameters) is available too
    clusterings: list[str] = ["correctness", "forward"]
    learned: bool = True
    max_fit_models: int = 0  # 0 = all training models
    # leaderboards with fewer models have none to hold out: from min_small_models to min_models - 1 models one
    # SmallBoardPredictor (leave-family-out cross-validation, estimation_small.py) serves every estimation asset;
    # below min_small_models (RouterDC: 7) they are skipped with a note
    min_models: int = 50
    min_small_models: int = 10
    # a small board's budgets: nested anchors (every budget's anchors are the first n of one order), each
    # backtested; `tinybench anchors --n N / --target-width W` chooses among them
    small_n_values: list[int] = [10, 20, 30, 50, 100, 200]
    min_items: int = 20  # a scenario with fewer items has no pool to choose anchors from: the leaderboard is skipped
    alpha: float = 0.1  # 90 % intervals
    dims: list[int] = [1, 2, 5, 10]  # D candidates of the per-scenario IRT fits
    joint_dims: list[int] = [2, 5, 10, 15]  # D candidates of the joint fit
    # model families (grouped splits, and whole families as the validation models behind lambdas, estimator choice
    # and intervals): "" = <default data dir>/<leaderboard>/leaderboard_aggregate_scores.csv, names only when absent
    aggregate_csv: str = ""
    # worker processes (one thread each) for the predictor's independent IRT fits and learned regressors:
    # 0 = the CPU cores. Measured on 2 cores: a fit's threads scale poorly (116 s with 2 threads, 130 s with 1).
    n_jobs: int = 0
    # the strongest share of the training models, which a probe fit leaves out to choose and calibrate the rule for a
    # model beyond the board (core/estimation/frontier_probe.py); 0 = no such rule
    frontier_share: float = 0.05


class BacktestConfig(EstimationConfig):
    # seeded splits per split kind, run at once on 2 cores (the MAEs carry 95 % bootstrap intervals over test
    # models): grouped (whole model families to one side; the headline) and frontier (the strongest
    # frontier_fraction of the models held out: the next, stronger model); "random" too on request;
    # benchmarks/estimation.py runs 5 grouped + 3 random + 1 frontier
    n_splits: int = 1
    split_kinds: list[str] = ["grouped", "frontier"]
    frontier_fraction: float = 0.05
    adaptive_n: list[int] = [10, 20, 30]  # adaptive tests of these lengths beside the static anchors ([]: none)
    test_fraction: float = 0.2
    seed: int = 0
    max_train_models: int = 0
    max_test_models: int = 0
    n_jobs: int = 0  # splits fitted at once in one-thread worker processes; 0 = min(n_splits, CPU cores)


def board_groups(matrix: ResponseMatrix, board: str, config: EstimationConfig) -> pd.Series:
    """The family key per model of the leaderboard (core/estimation/groups.py), from the aggregate CSV when there is
    one."""
    return model_groups(matrix.models, read_aggregate(paths.aggregate_csv(board, config.aggregate_csv)))


def leaderboard_matrix(db: Store, board: str) -> tuple[ResponseMatrix, pd.DataFrame]:
    """All scenarios of a leaderboard side by side (0/1, NaN where a model lacks a scenario) and their full scores."""
    keys = db.partition_keys(board)
    if not keys:
        raise dg.Failure(f"leaderboard {board}: no scenario partitions stored")
    matrix = concat_scenarios([training_matrix(db, k) for k in keys])
    full = db.full_scores(board).rename(columns={"full_score": "full_benchmark_score"})
    return matrix, full


def _skip(
    board: str, n_models: int, config: EstimationConfig, sizes=None, repeated=False
) -> dg.MaterializeResult | None:
    """The ``skipped`` result of a leaderboard too small for the estimation assets (``small.too_small``), else None."""
    reason = small.too_small(board, n_models, sizes or {}, config, repeated)
    return None if reason is None else dg.MaterializeResult(metadata={"skipped": reason, "models": n_models})


def board_inputs(context, store: StoreResource, config: EstimationConfig):
    """``(db, board, matrix, full, skip)`` of the partition's leaderboard: the store, the leaderboard, its matrix and
    full scores (``leaderboard_matrix``), and the skip result when it is too small (else None)."""
    db, board = store.get(), context.partition_key
    matrix, full = leaderboard_matrix(db, board)
    cols = {str(s): matrix.scenarios == s for s in dict.fromkeys(matrix.scenarios.tolist())}
    sizes = {s: (int(c.sum()), int((~np.isnan(matrix.scores[:, c])).any(axis=1).sum())) for s, c in cols.items()}
    skip = _skip(board, len(matrix.models), config, sizes, len(set(matrix.items)) < len(matrix.items))
    return db, board, matrix, full, skip


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            "anchor_sets",
            group_name=GROUP,
            code_version=CODE_VERSION,
            partitions_def=leaderboard_partitions,
            deps=["model_split", ALL_SCENARIOS],
            **card(
                "Anchor items",
                "Anchor items per scenario x clustering (KMeans on correctness or IRT, forward selection) x n, with "
                "weights = the clusters' balance-weight mass (sum 1 per scenario; checked). Chosen on training "
                "models only: one AnchorPredictor (saved by the model_store resource as predictor.pkl) fitted "
                "on the binarized responses of model_split's training models; it fits its own per-scenario "
                "and joint IRT models (its own dims), so irt_joint's fit is not an input.",
                kinds=("python", "torch", "scikit-learn", "duckdb"),
            ),
        ),
        dg.AssetSpec(
            "gpirt_lambdas",
            group_name=GROUP,
            code_version=CODE_VERSION,
            partitions_def=leaderboard_partitions,
            deps=["anchor_sets"],
            **card(
                "gp-IRT lambdas and estimator choice",
                "gp-IRT lambdas per scenario x clustering x n: the "
                "tutorial's b^2/(v/(4n)+b^2) and the lambda chosen on validation models; plus the estimator "
                "chosen per scenario on validation models.",
                kinds=("python", "duckdb"),
            ),
        ),
    ],
    pool=DUCKDB_POOL,
    can_subset=False,
)
def anchor_sets(
    context: dg.AssetExecutionContext,
    config: EstimationConfig,
    store: StoreResource,
    torch_device: TorchDevice,
    model_store: ModelStore,
):
    watch = Stopwatch(say=context.log.info)  # where the time went: the metadata's time_breakdown
    with watch.part("read responses"):
        db, board, matrix, full, skip = board_inputs(context, store, config)
    if skip is not None:
        yield dg.MaterializeResult(asset_key="anchor_sets", metadata=skip.metadata)
        yield dg.MaterializeResult(asset_key="gpirt_lambdas", metadata=skip.metadata)
        return
    t0 = time.perf_counter()
    kind = board_for(len(matrix.models), config, torch_device.resolve())
    name = {"BigBoard": "AnchorPredictor", "SmallBoard": "SmallBoardPredictor"}.get(type(kind).__name__, "predictor")
    context.log.info(f"fitting the {name} on {len(matrix.models)} models x {len(matrix.items)} items")
    fitted = kind.fit(db, board, matrix, full, board_groups(matrix, board, config).to_numpy(), log=context.log.info)
    seconds = time.perf_counter() - t0
    _fit_steps(context.log.info, watch, fitted.predictor, seconds)
    with watch.part("save predictor"):
        path = model_store.save_predictor(board, fitted.predictor)
    with watch.part("store tables"):
        db.replace_partition(fitted.tables, board, column="leaderboard")
    yield dg.MaterializeResult(
        asset_key="anchor_sets",
        metadata={
            **fitted.anchor_meta,
            **watch.metadata(),
            "fit_seconds": round(seconds, 1),
            "predictor_path": dg.MetadataValue.path(str(path)),
        },
    )
    yield dg.MaterializeResult(asset_key="gpirt_lambdas", metadata=fitted.lambda_meta)


def _fit_steps(say, watch: Stopwatch, predictor, seconds: float) -> None:
    """The predictor's fit in ``watch``, step by step where it timed its steps (``timings_``: AnchorPredictor), and
    one line with each step's seconds."""
    steps = {k: float(v) for k, v in (getattr(predictor, "timings_", None) or {}).items() if k != "total"}
    for name, sec in steps.items():
        watch.add(f"fit: {name}", sec)
    watch.add("fit: other" if steps else "fit", max(0.0, seconds - sum(steps.values())))
    big = sorted(((k, v) for k, v in steps.items() if v >= 0.5), key=lambda kv: -kv[1])
    rest = len(steps) - len(big)
    top = ", ".join([f"{k} {v:.1f} s" for k, v in big] + ([f"{rest} more under 0.5 s"] if rest else []))
    say(f"predictor fitted in {seconds:.1f} s" + (f"; its steps: {top}" if top else ""))


@dg.asset(
    group_name=GROUP,
    code_version=CODE_VERSION,
    pool=DUCKDB_POOL,
    partitions_def=leaderboard_partitions,
    deps=["gpirt_lambdas", "model_split", ALL_SCENARIOS],
    **card(
        "Held-out model estimates",
        "Estimates for every held-out (test) model of model_split, from its "
        "anchor answers only (the predictor anchor_sets saved): per scenario x estimator x clustering x n, with "
        "90 % intervals, against the pool accuracy (T1) and the real full-benchmark score (T2). Checks: "
        "estimates in [0, 1] inside their intervals.",
    ),
)
def model_estimates(
    context: dg.AssetExecutionContext, config: EstimationConfig, store: StoreResource, model_store: ModelStore
) -> dg.MaterializeResult:
    db, board, matrix, full, skip = board_inputs(context, store, config)
    if skip is not None:
        return skip
    pred = model_store.load_predictor(board)
    df, n_models = board_for(len(matrix.models), config, "cpu").estimates(pred, db, board, matrix, full)
    db.replace_partition({"estimates": df[list(ESTIMATE_COLUMNS)]}, board, column="leaderboard")
    table = estimate_errors(df)
    return dg.MaterializeResult(
        metadata={
            "test_models": n_models,
            "rows": len(df),
            "mae_by_scenario_estimator_n": dg.MetadataValue.md(table.to_markdown(index=False)),
        }
    )


# Lowest step priority in a leaderboard run: the backtest fits its splits in worker processes (one per core), so
# it goes last, after the one-process steps, and keeps both cores busy to the end of the run (run-all's cold
# pipeline: the product predictor fitted last on one core left the other idle ~65 s).
BACKTEST_PRIORITY = {"dagster/priority": "-1"}


@dg.asset(
    group_name=GROUP,
    code_version=CODE_VERSION,
    pool=DUCKDB_POOL,
    partitions_def=leaderboard_partitions,
    deps=[ALL_SCENARIOS],
    op_tags=BACKTEST_PRIORITY,
    **card(
        "Estimation backtest",
        "Honest backtest over several seeded model splits of its own (grouped by family "
        "and random; not model_split): for each split a fresh predictor is fitted on the binarized responses of "
        "the training models only and scored on the test models. MAE and SD of the error "
        "(accuracy points) per scenario x estimator x n against T1 (pool accuracy) and T2 (real full score). "
        "Plots: error vs n per scenario beside the random-items baseline; interval coverage vs n.",
        kinds=("python", "torch", "scikit-learn", "duckdb"),
    ),
)
def estimation_backtest(
    context: dg.AssetExecutionContext,
    config: BacktestConfig,
    store: StoreResource,
    torch_device: TorchDevice,
    model_store: ModelStore,
) -> dg.MaterializeResult:
    t0 = time.perf_counter()  # the step's seconds and time_breakdown count the reads too
    db, board, matrix, full, skip = board_inputs(context, store, config)
    if skip is not None:
        return skip
    groups = board_groups(matrix, board, config)
    context.log.info(f"model families for grouped splits: {group_summary(groups)}")
    kind = board_for(len(matrix.models), config, torch_device.resolve())
    return kind.backtest(context.log.info, db, board, matrix, full, groups, model_store, t0)


class ExportConfig(EstimationConfig):
    export_n: int = 30  # anchors per scenario in the exported tiny benchmark


@dg.asset(
    group_name=GROUP,
    code_version=CODE_VERSION,
    pool=DUCKDB_POOL,
    partitions_def=leaderboard_partitions,
    deps=["gpirt_lambdas", "model_split", ALL_SCENARIOS],
    **card(
        "Tiny benchmark export",
        "The portable tiny benchmark of the predictor anchor_sets saved (with the item "
        "texts and the scenarios' binarization): data/artifacts/<leaderboard>/tiny_benchmark.json "
        "(anchor ids and texts, weights, IRT parameters, lambdas, calibration, intervals) and learned_models.npz (the learned "
        "estimators' trees as plain arrays; nothing is pickled), "
        "plus the tiny_benchmark* tables. `tinybench estimate --leaderboard <name> --answers answers.csv` scores "
        "a new model from it. Check: the JSON round-trips to the asset's own estimates.",
        kinds=("python", "json"),
    ),
)
def tiny_benchmark(
    context: dg.AssetExecutionContext, config: ExportConfig, store: StoreResource, model_store: ModelStore
) -> dg.MaterializeResult:
    db, board, matrix, _, skip = board_inputs(context, store, config)  # skipped as anchor_sets was
    if skip is not None:
        return skip
    # lazy: loads torch and scikit-learn (~2.4 s)
    from tinybench_assets.core.tiny_benchmark import artifact_tables, save_artifact

    pred = model_store.load_predictor(board)
    texts = db.item_texts(board).dropna(subset=["text"])
    binar = db.board_binarization(board)
    kw = dict(
        item_texts=dict(zip(texts["item"], texts["text"])),
        binarization={
            split_partition_key(k)[1]: {"rule": r, "threshold": None if pd.isna(t) else float(t)}
            for k, r, t in binar.itertuples(index=False)
        },
    )
    kind = board_for(len(matrix.models), config, "cpu")
    artifact, budgets = kind.export(pred, board, config.export_n, model_store.folder(board), **kw)
    path = save_artifact(artifact, pred, model_store.folder(board))
    trees = path.parent / "learned_models.npz"
    tables = {name: df.drop(columns=["leaderboard"]) for name, df in artifact_tables(artifact).items()}
    db.replace_partition(tables, board, column="leaderboard")
    meta = tables["tiny_benchmark"]
    return dg.MaterializeResult(
        metadata={
            "artifact": dg.MetadataValue.path(str(path)),
            "anchor_budget": config.export_n,
            "anchors_per_scenario": dg.MetadataValue.json(
                {k: int(v) for k, v in tables["tiny_benchmark_anchors"].groupby("scenario").size().items()}
            ),
            "items_to_answer": int(len(tables["tiny_benchmark_anchors"])),
            "json_kb": round(path.stat().st_size / 1024, 1),
            **(
                {"budgets": dg.MetadataValue.path(str(budgets)), "prepared_budgets": [int(n) for n in pred.n_values]}
                if budgets is not None
                else {}
            ),
            "learned_models_kb": round(trees.stat().st_size / 1024, 1) if trees.exists() else 0.0,
            "recommended": dg.MetadataValue.md(
                meta[
                    [
                        "scenario",
                        "clustering",
                        "recommended_t1",
                        "recommended_t2",
                        "recommended_learned_t1",
                        "recommended_learned_t2",
                    ]
                ].to_markdown(index=False)
            ),
        }
    )


leaderboard_assets = [anchor_sets, model_estimates, estimation_backtest, tiny_benchmark]
