"""``model_prices``: a scenario partition's view of its leaderboard's prices file, the input through which a changed
price reaches the cost assets (and nothing else).

Its data version is ``orchestration.versions.prices_version`` (the leaderboard's active prices drops), a content hash like
``raw_responses``'s: a new prices file changes it in every scenario partition of its leaderboard, while
``raw_responses`` keeps its version (a prices file touches no partition's responses). An asset that reads costs
(``Store.costs``) lists ``model_prices`` in its ``deps`` and turns stale on a price change; the IRT fits and estimators,
which do not, stay fresh. ``refresh.assess`` treats it as it treats ``raw_responses`` after an ingest.
"""

import math

import dagster as dg

from tinybench_assets.defs.cards import card
from tinybench_assets.defs.partitions import scenario_partitions
from tinybench_assets.defs.resources import DUCKDB_POOL, StoreResource
from tinybench_assets.defs.settings import INGEST_GROUP as GROUP
from tinybench_assets.io.drops import split_partition_key
from tinybench_assets.orchestration.versions import code_version, prices_version


@dg.asset(
    group_name=GROUP,
    code_version=code_version("ingest"),
    pool=DUCKDB_POOL,
    partitions_def=scenario_partitions,
    deps=["landing_ingest"],
    **card(
        "Model prices",
        "The prices file of the scenario's leaderboard (`prices.csv`: per question or per "
        "million tokens), from which every question gets a cost per model where the drops carry none. Its data "
        "version changes only with the leaderboard's prices, so a changed price refreshes the cost assets "
        "only. Metadata: the prices, and how many of the scenario's models have costs.",
    ),
)
def model_prices(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
    key = context.partition_key
    db = store.get()
    board = split_partition_key(key)[0]
    prices = db.prices(board)
    costs = db.costs(key)
    rows = [
        {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
        for r in prices.to_dict("records")
    ]
    return dg.MaterializeResult(
        data_version=dg.DataVersion(prices_version(db, board)),  # the leaderboard's prices drops only
        metadata={
            "priced_models": len(prices),
            "prices": dg.MetadataValue.json(rows),
            "models_with_costs": int(costs["model"].nunique()),
            "cost_rows": len(costs),
        },
    )


assets = [model_prices]
