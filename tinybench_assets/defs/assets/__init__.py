"""All assets, grouped by how they are partitioned."""

import dagster as dg

from tinybench_assets.defs.assets import (
    encoders,
    estimation,
    evaluations,
    irt,
    prices,
    responses,
    router_board,
    router_eval,
    routing,
    subsets,
)

#: what the UI's stale badge on a leaderboard partition means, on every leaderboard asset's page
STALE_BADGE_NOTE = (
    "\n\n**Stale badge.** This asset reads its leaderboard's scenario partitions (`openllm` reads `openllm.arc`, "
    "`openllm.mmlu`, ...) through an AllPartitionMapping: Dagster has no partition mapping from a dynamic scenario key "
    "to its leaderboard's key, so the UI calls every leaderboard partition stale when *any* leaderboard's scenario "
    "changes. `tinybench run-all`, the refresh sensor and the nightly schedules refresh a leaderboard partition only "
    "when one of its own scenario partitions, an unpartitioned input or the code changed (tinybench_assets/orchestration/refresh.py); "
    "the stale causes the UI lists name the partition they come from. Every run they launch says why in its "
    "`tinybench/reason` tag."
)

unpartitioned_assets = [responses.landing_ingest, *encoders.encoder_assets]
scenario_assets = [
    responses.raw_responses,
    responses.response_matrix,
    responses.binarized_responses,
    prices.model_prices,
    *irt.scenario_assets,
    *routing.scenario_assets,
    router_eval.router_accuracy,
]
leaderboard_assets = dg.map_asset_specs(
    lambda spec: spec.replace_attributes(description=(spec.description or "") + STALE_BADGE_NOTE),
    [
        *irt.leaderboard_assets,
        *estimation.leaderboard_assets,
        *router_board.leaderboard_assets,
        *subsets.leaderboard_assets,
    ],
)
evaluation_assets = evaluations.evaluation_assets
all_assets = unpartitioned_assets + scenario_assets + leaderboard_assets + evaluation_assets
