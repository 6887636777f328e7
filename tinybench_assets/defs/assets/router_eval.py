"""The router asset: routers chosen by cross-validation on training questions, scored on test questions
beside the best single model, the oracle, a random model and the tutorial's p-IRT argmax (the computation and
its report: defs/router_report.py)."""

import time

import dagster as dg

from tinybench_assets.core.routing import select_router
from tinybench_assets.defs import router_report as report
from tinybench_assets.defs.cards import card
from tinybench_assets.defs.partitions import scenario_partitions
from tinybench_assets.defs.resources import DUCKDB_POOL, ModelStore, StoreResource, TorchDevice
from tinybench_assets.defs.settings import ROUTER_GROUP as GROUP
from tinybench_assets.defs.settings import RouterConfig
from tinybench_assets.io.routing_reads import partition_rows
from tinybench_assets.orchestration.versions import code_version
from tinybench_assets.progress import Stopwatch

CODE_VERSION = code_version("router")


@dg.asset(
    group_name=GROUP,
    code_version=CODE_VERSION,
    pool=DUCKDB_POOL,
    partitions_def=scenario_partitions,
    deps=["pirt_predictions", "question_embeddings", "binarized_responses", "model_prices"],
    **card(
        "Router accuracy",
        "Routers (best single, KNN vote, shrunk KNN, KNN-IRT, logistic, ensemble) chosen by "
        "cross-validation on TRAINING questions; the served one routes every test question. Router accuracy vs "
        "best single model, oracle, random model and the tutorial's p-IRT argmax, pick shares, paired bootstrap "
        "95% interval, cost curve when costs exist. Plot: accuracy beside the baselines with pick shares. Check: "
        "the served router matches the best single model on training CV.",
        kinds=("python", "scikit-learn", "duckdb"),
    ),
)
def router_accuracy(
    context: dg.AssetExecutionContext,
    config: RouterConfig,
    store: StoreResource,
    torch_device: TorchDevice,
    model_store: ModelStore,
) -> dg.MaterializeResult:
    key, db, t0 = context.partition_key, store.get(), time.perf_counter()
    watch = Stopwatch(say=context.log.info, start=t0)  # where the time went: the metadata's time_breakdown
    if partition_rows(db, "question_embeddings", key, "item").empty:
        return dg.MaterializeResult(metadata={"skipped": "no questions embedded (see question_embeddings)"})
    with watch.part("read inputs"):
        d, device = report.RoutingInputs.read(db, key, config.surface_features), torch_device.resolve()
    Etr, Ytr, gtr = d.train
    with watch.part("cross-validation (router choice)"):
        sel = select_router(Etr, Ytr, groups=gtr, device=device, **config.selection(), log=context.log.info)
    with watch.part("fit and score on test questions"):
        scores = report.score_routers(d, sel, config, device)
    with watch.part("tutorial p-IRT and reports"):
        tut = report.tutorial_accuracy(db, key, list(d.scored[2]), d.models, d.scored[1], d.prior)
        tables = report.accuracy_tables(d, sel, scores, tut, config, t0)
        gap_tables, gap_meta = report.gap_report_part(d, sel, scores, config)
    with watch.part("cost report"):
        cost = report.cost_part(db, d, sel, scores, config)
    with watch.part("store and save router"):
        db.replace_partition({**tables, **gap_tables, **cost.tables}, key)
        path = model_store.save_router(key, report.served_router_file(d, sel, scores, cost, config))
    return dg.MaterializeResult(
        metadata={
            **report.accuracy_metadata(d, sel, scores, tut, tables["router_summary"]),
            "router_file": dg.MetadataValue.path(str(path)),
            **watch.metadata(),
            **({"families_sat_out": dg.MetadataValue.json(sel.sat_out)} if sel.sat_out else {}),
            **gap_meta,
            **cost.meta,
        }
    )
