"""A daily schedule that re-materializes stale scenario partitions.

A partition is stale when one of its assets was never materialized, when a drop touching it landed after
its raw responses were built, or when an asset is older than the asset it reads.
"""

import time

import dagster as dg

from tinybench_assets.defs.assets import scenario_assets
from tinybench_assets.defs.jobs import scenario_job
from tinybench_assets.defs.partitions import scenario_partitions
from tinybench_assets.defs.resources import StoreResource


def latest_materialization(instance: dg.DagsterInstance, asset_key: dg.AssetKey, partition: str) -> float | None:
    """Timestamp (s) of the partition's latest materialization, or None."""
    result = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=asset_key, asset_partitions=[partition]), limit=1)
    return result.records[0].timestamp if result.records else None


def stale_reason(instance: dg.DagsterInstance, partition: str, landed_at: float | None) -> str | None:
    """Why a partition needs a refresh, or None when it is fresh. Assets are checked in lineage order."""
    previous = landed_at
    for asset in scenario_assets:
        ts = latest_materialization(instance, asset.key, partition)
        if ts is None:
            return f"{asset.key.to_user_string()} never materialized"
        if previous is not None and ts < previous:
            return f"{asset.key.to_user_string()} older than its input"
        previous = ts
    return None


@dg.schedule(job=scenario_job, cron_schedule="0 3 * * *", default_status=dg.DefaultScheduleStatus.RUNNING,
             description="Daily at 03:00: refresh every scenario partition whose assets are stale.")
def stale_refresh_schedule(context: dg.ScheduleEvaluationContext, store: StoreResource):
    db = store.get()
    landed = db.partition_landed_at().to_dict()
    try:
        day = context.scheduled_execution_time.strftime("%Y-%m-%d")
    except Exception:  # noqa: BLE001 - evaluated by hand (tests, a preview): dagster raises when no tick time is set
        day = time.strftime("%Y-%m-%d")
    requests = []
    for key in context.instance.get_dynamic_partitions(scenario_partitions.name):
        reason = stale_reason(context.instance, key, landed.get(key))
        if reason:
            requests.append(dg.RunRequest(run_key=f"stale:{key}:{day}", partition_key=key, tags={"tinybench/stale": reason}))
    return requests or dg.SkipReason("every scenario partition is fresh")


schedules = [stale_refresh_schedule]
