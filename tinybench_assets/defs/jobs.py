"""Jobs: ingest the landing folder; refresh one scenario partition; refresh one leaderboard; refresh one evaluation."""

import dagster as dg

from tinybench_assets.defs.assets import evaluation_assets, leaderboard_assets, scenario_assets, unpartitioned_assets

ingest_job = dg.define_asset_job(
    "ingest_landing",
    selection=dg.AssetSelection.assets(*unpartitioned_assets),
    description="Validate and store every new drop in the landing folder; quarantine bad files.",
)
scenario_job = dg.define_asset_job(
    "refresh_scenario",
    selection=dg.AssetSelection.assets(*scenario_assets),
    description="Every per-scenario asset for one scenario partition (leaderboard.scenario).",
)
jobs = [ingest_job, scenario_job]
if leaderboard_assets:
    leaderboard_job = dg.define_asset_job(
        "refresh_leaderboard",
        selection=dg.AssetSelection.assets(*leaderboard_assets),
        description="Every per-leaderboard asset (joint fits, estimates, exports) for one leaderboard.",
    )
    jobs.append(leaderboard_job)
else:  # pragma: no cover - before leaderboard assets exist
    leaderboard_job = None
evaluation_job = dg.define_asset_job(
    "refresh_evaluation",
    selection=dg.AssetSelection.assets(*evaluation_assets),
    description="A new model's evaluation (leaderboard/model): its estimates from the answers in the evaluations "
    "landing folder, on its leaderboard's tiny benchmark.",
)
jobs.append(evaluation_job)
