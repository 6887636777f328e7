"""Sensors: the refresh sensor (new drops, stale or missing partitions: the one refresh decision run-all also
makes, ``refresh_plan.py``) and the orphaned-runs sensor (runs whose process was killed)."""

import os

import dagster as dg

from tinybench_assets.defs.jobs import jobs
from tinybench_assets.defs.orphans import free_pool_slots, mark_orphaned_runs
from tinybench_assets.defs.partitions import register_partitions
from tinybench_assets.defs.resources import LandingResource, StoreResource
from tinybench_assets.refresh_plan import decide


#: seconds between refresh-sensor ticks (TINYBENCH_SENSOR_INTERVAL_S, default 30; the tests use a few seconds)
SENSOR_INTERVAL_S = int(os.environ.get("TINYBENCH_SENSOR_INTERVAL_S", "30"))


@dg.sensor(
    jobs=jobs,
    minimum_interval_seconds=SENSOR_INTERVAL_S,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Refreshes the project when leaderboard data arrives, asking the question `tinybench run-all` asks "
    "(tinybench_assets/refresh_plan.py): new or changed files in the landing folder -> one ingest run (bad files are "
    "quarantined there); then, per scenario partition, one run of just its stale or missing assets (a drop refreshes "
    "its own partitions); then each leaderboard whose scenarios are done. Runs are tagged with why "
    "(tinybench/reason). No run while one is live for the same partition or while a `tinybench run-all` holds the "
    "project's lock; a failing state is retried once, then left until its inputs or code change.",
)
def refresh_sensor(context: dg.SensorEvaluationContext, landing: LandingResource, store: StoreResource):
    decision = decide(context.repository_def, context.instance, store.get(), landing.incoming_path)
    if decision.new_partitions:
        register_partitions(context.instance, decision.new_partitions)
    if not decision.work:
        return dg.SkipReason("nothing stale or missing" + (f"; {'; '.join(decision.waiting)[:1000]}" if decision.waiting else ""))
    for line in decision.waiting:
        context.log.info(line)
    # the run key is the work's state plus its attempt: a tick repeats no request, a failed state is retried at most
    # MAX_ATTEMPTS times
    return [w.run_request(f"{w.job}:{w.partition or ''}:{w.state}:{w.attempt}", "refresh_sensor") for w in decision.work]


sensors = [refresh_sensor]


@dg.sensor(
    minimum_interval_seconds=min(60, SENSOR_INTERVAL_S),
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Marks orphaned runs FAILED: runs shown as started whose process on this machine is known and gone (a "
    "`tinybench run-all` or a run worker killed with SIGKILL, out of memory, a restart), so the UI shows the truth; "
    "a queued or starting run whose worker has not reported its pid is never one. Gives back the `duckdb` pool slots "
    "of runs that ended.",
)
def orphaned_runs_sensor(context: dg.SensorEvaluationContext) -> dg.SkipReason:
    # pool slots still held by runs that ended (a run worker killed mid-step leaves its pending step in the "duckdb"
    # pool, and the next run waited for Dagster's run monitoring to free it, a minute later)
    free_pool_slots(context.instance, ended_before_s=5.0)
    marked = mark_orphaned_runs(context.instance, who="orphaned_runs_sensor (Dagster daemon)")
    if not marked:
        return dg.SkipReason("no orphaned runs")
    for run_id, why in marked:
        context.log.warning(f"run {run_id} marked FAILED: {why}")
    return dg.SkipReason(f"marked {len(marked)} orphaned run(s) FAILED: {', '.join(r for r, _ in marked)}")


sensors.append(orphaned_runs_sensor)
