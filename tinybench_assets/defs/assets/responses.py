"""Ingestion and response assets: landing folder -> DuckDB responses -> matrix -> binarized."""

import dagster as dg
import numpy as np

from tinybench_assets.core.response_tables import binarized_tables, matrix_tables
from tinybench_assets.defs.cards import card
from tinybench_assets.defs.partitions import register_partitions, scenario_partitions
from tinybench_assets.defs.resources import DUCKDB_POOL, LandingResource, StoreResource
from tinybench_assets.defs.settings import INGEST_GROUP
from tinybench_assets.io import plots
from tinybench_assets.io.drops import split_partition_key
from tinybench_assets.io.landing import ingest_landing
from tinybench_assets.io.store import load_matrix
from tinybench_assets.orchestration.versions import code_version, landing_version, partition_version

GROUP = INGEST_GROUP
CODE_VERSION = code_version("ingest")


def _ingest(context, store, landing, leaderboard=None):
    report = ingest_landing(
        store,
        landing.incoming_path,
        landing.quarantine_path,
        leaderboard=leaderboard,
        trust_pickles=landing.trust_pickle_drops,
    )
    register_partitions(context.instance, store.partition_keys())
    for rel, err in report.quarantined.items():
        context.log.warning(f"quarantined {rel}: {err}")
    for rel, notes in report.notes.items():
        for note in notes:
            context.log.info(f"{rel}: {note}")
    return report


@dg.asset(
    group_name=GROUP,
    code_version=CODE_VERSION,
    pool=DUCKDB_POOL,
    **card(
        "Landed drops",
        "Every new or changed drop in the landing folder, "
        "validated and stored in DuckDB (one transaction per drop); bad files move to the quarantine folder with an error "
        "report naming the file, row and problem. Metadata: what was ingested, unchanged and quarantined, and each drop's notes "
        "(rows merged or skipped, columns ignored, the metric chosen).",
    ),
)
def landing_ingest(
    context: dg.AssetExecutionContext, store: StoreResource, landing: LandingResource
) -> dg.MaterializeResult:
    db = store.get()
    report = _ingest(context, db, landing)
    drops = len(db.active_drops())
    return dg.MaterializeResult(
        data_version=dg.DataVersion(landing_version(db)),  # unchanged drops -> same version -> nothing downstream stale
        metadata={
            "ingested": dg.MetadataValue.json(report.ingested),
            "unchanged": len(report.skipped),
            "quarantined": dg.MetadataValue.json(report.quarantined),
            "rejected_rows": dg.MetadataValue.json(
                {rel: {"rows": n, "file": f} for rel, (n, f) in report.rejected.items()}
            ),
            "notes": dg.MetadataValue.json({rel: list(notes) for rel, notes in report.notes.items()}),
            "partitions_touched": dg.MetadataValue.json(sorted(report.partitions)),
            "active_drops": int(drops),
            "scenario_partitions": dg.MetadataValue.json(db.partition_keys()),
        },
    )


@dg.asset(
    group_name=GROUP,
    code_version=CODE_VERSION,
    pool=DUCKDB_POOL,
    partitions_def=scenario_partitions,
    deps=[landing_ingest],
    **card(
        "Raw responses",
        "The long table (model, item, score in [0, 1]) of one leaderboard scenario, consolidated "
        "from every active drop, the latest drop winning per cell. Metadata: models, items, drops, mean score.",
    ),
)
def raw_responses(
    context: dg.AssetExecutionContext, store: StoreResource, landing: LandingResource
) -> dg.MaterializeResult:
    key = context.partition_key
    db = store.get()
    _ingest(
        context, db, landing, leaderboard=split_partition_key(key)[0]
    )  # idempotent: a run never waits on landing_ingest
    n = db.consolidate_responses(key)
    if n == 0:
        raise dg.Failure(f"partition {key}: no responses landed (is the drop in the landing folder?)")
    stats = db.response_stats(key)
    return dg.MaterializeResult(
        data_version=dg.DataVersion(
            partition_version(db, key)
        ),  # the partition's active drops: a re-run on them is a no-op
        metadata={
            "rows": int(n),
            "models": int(stats["models"]),
            "items": int(stats["items"]),
            "subscenarios": int(stats["subscenarios"]),
            "mean_score": float(stats["mean_score"]),
            "drops": int(stats["drops"]),
        },
    )


@dg.asset(
    group_name=GROUP,
    code_version=CODE_VERSION,
    pool=DUCKDB_POOL,
    partitions_def=scenario_partitions,
    deps=[raw_responses],
    **card(
        "Response matrix",
        "Models x items matrix of one scenario with its subscenario index and the "
        "tinyBenchmarks balance weights (each subscenario weighs the same; weights average 1). Plot: model "
        "accuracies and item mean scores.",
    ),
)
def response_matrix(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
    key = context.partition_key
    db = store.get()
    matrix = load_matrix(db, key)
    tables = matrix_tables(matrix, db.landed_item_split(key))
    items, acc = tables["matrix_items"], tables["matrix_models"]["accuracy"].to_numpy()
    weights = items["balance_weight"].to_numpy()
    db.replace_partition(tables, key)
    return dg.MaterializeResult(
        metadata={
            "models": len(matrix.models),
            "items": len(matrix.items),
            "subscenarios": int(len(set(matrix.subscenarios))),
            "missing_cells_pct": float(100 * (1 - matrix.mask.mean())),
            "mean_accuracy": float(np.mean(acc)),
            "balance_weight_range": f"{weights.min():.3f} .. {weights.max():.3f}",
            "accuracy_histograms": dg.MetadataValue.md(
                plots.markdown_image(
                    plots.matrix_histograms(
                        acc,
                        items["mean_score"].to_numpy(),
                        title=f"{key}: {len(matrix.models)} models x {len(matrix.items)} items",
                    ),
                    "model accuracy and item mean score",
                )
            ),
        }
    )


@dg.asset(
    group_name=GROUP,
    code_version=CODE_VERSION,
    pool=DUCKDB_POOL,
    partitions_def=scenario_partitions,
    deps=[response_matrix],
    **card(
        "Binarized responses",
        "0/1 responses of one scenario. 0/1 data passes unchanged; RouterDC multiple "
        "choice is correct iff score > 0; other graded scores use the tutorial threshold c minimizing "
        "mean |mean(Y>c) - mean(Y)| over models.",
    ),
)
def binarized_responses(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
    key = context.partition_key
    db = store.get()
    matrix = load_matrix(db, key)
    rule = db.binarize_rule(key)
    tables, b = binarized_tables(matrix, "auto" if rule is None else rule)
    db.replace_partition(tables, key)
    return dg.MaterializeResult(
        metadata={
            "models": len(matrix.models),
            "items": len(matrix.items),
            "rule": b["rule"],
            "threshold": dg.MetadataValue.float(b["threshold"])
            if b["threshold"] is not None
            else dg.MetadataValue.text("none (already 0/1)"),
            "mean_accuracy_raw": b["mean_raw"],
            "mean_accuracy_binarized": b["mean_binary"],
            "mean_abs_accuracy_shift": b["mean_abs_shift"],
        }
    )


assets = [landing_ingest, raw_responses, response_matrix, binarized_responses]
