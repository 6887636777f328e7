"""All assets, grouped by how they are partitioned."""
from tinybench_assets.defs.assets import estimation, irt, responses, router_eval, routing, subsets

unpartitioned_assets = [responses.landing_ingest]
scenario_assets = [responses.raw_responses, responses.response_matrix, responses.binarized_responses, *irt.scenario_assets,
                   *routing.scenario_assets, router_eval.router_accuracy]
leaderboard_assets = [*irt.leaderboard_assets, *estimation.leaderboard_assets, *subsets.leaderboard_assets]
all_assets = unpartitioned_assets + scenario_assets + leaderboard_assets
